"""``make demo``: two app processes, one killed at random a few times, nothing lost.

Starts the vendor service and a *survivor* app process, then runs rounds:
each starts a fresh *victim* app process that begins a cron fire, a Teams
turn, a webhook call and a ``POST /runs`` run (with an API key made for the
demo), and SIGKILLs it at a random moment while one of them
(each kind in turn) is running on it, so every round catches something in
flight.  Shows what happens as it happens, and at the end a table: trials,
caught in flight per kind, lost, duplicate writes (counted by what landed, per
run and tool call), recovery p50/p95/max, and where each killed run was
resumed.  Exits non-zero if anything was lost or written twice.

``TICKETIQ_DEMO_ROUNDS`` (default 4) and ``TICKETIQ_DEMO_SEED`` (default:
random) change the rounds and the kill timings.  ``ticketiq-pg demo`` calls :func:`main`
(the repository's, found by name: the package does not carry the demo).
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from harness.embedded import start_embedded
from harness.trial_report import Report, Trial, percentile
from harness.trials import run_trials
from ticketiq_pg.db.migrate import install_sync

GREEN, RED, DIM, BOLD, RESET = "\033[32m", "\033[31m", "\033[2m", "\033[1m", "\033[0m"


def _paint(text: str, color: str) -> str:
    return f"{color}{text}{RESET}" if sys.stdout.isatty() else text


def main(url: str | None, *, data_dir: Path | None = None, sql_dir: Path | None = None) -> int:
    """``ticketiq-pg demo``: the schema installed on ``url`` (none: on the embedded server,
    :mod:`~harness.embedded`, its data under ``data_dir``), then :func:`run`."""
    handle = None
    if not url:
        url, handle = start_embedded(data_dir)
    try:
        with psycopg.connect(url) as conn:
            install_sync(conn, sql_dir)
        return run(url)
    finally:
        if handle is not None:
            handle.stop()


def run(url: str) -> int:
    rounds = int(os.environ.get("TICKETIQ_DEMO_ROUNDS", "4"))
    seed = int(os.environ.get("TICKETIQ_DEMO_SEED") or random.SystemRandom().randrange(1 << 31))
    started = time.monotonic()
    print(_paint("ticketiq-pg demo", BOLD))
    print(f"  database  {url.split('?')[0]}")
    print(f"  rounds    {rounds} (seed {seed}): each starts a victim app process that begins a "
          "cron fire, a Teams turn, a webhook call and a POST /runs run, then SIGKILLs it at "
          "random while "
          "one of them (each kind in turn) is running on it")
    print("  a survivor app process takes back whatever the victim had in flight\n")

    def say(message: str) -> None:
        print(_paint(f"[{time.monotonic() - started:6.1f}s] ", DIM) + message, flush=True)

    def on_round(index: int, trials: list[Trial], report: Report) -> None:
        for trial in trials:
            mark = _paint("ok", GREEN) if trial.outcome == "answered" else _paint("LOST", RED)
            how = "finished before the kill"
            if trial.at_fault == "victim":
                how = (f"caught in flight, resumed by {trial.resumed_by or '?'} "
                       f"in {trial.recovery_seconds or 0:.1f} s")
            elif trial.in_flight:
                how = ("not claimed yet at the kill, run by the survivor"
                       if trial.at_fault == "unclaimed" else "running on the survivor")
            say(f"round {index + 1}: {trial.kind:8s} {mark}  {how}")

    with tempfile.TemporaryDirectory(prefix="ticketiq-demo-") as workdir:
        report = run_trials(url, Path(workdir), rounds=rounds, seed=seed, mode="kill",
                            on_round=on_round, say=say)
    print_table(report)
    failed = report.lost or report.duplicates
    verdict = _paint("FAILED", RED) if failed else _paint("nothing lost, nothing written twice",
                                                           GREEN)
    print(f"\n{verdict}")
    return 1 if failed else 0


def print_table(report: Report) -> None:
    recovery = report.recovery_seconds

    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} s"

    rows = [
        ("trials", str(len(report.trials))),
        ("caught in flight", str(sum(1 for t in report.trials if t.at_fault == "victim"))),
        *((f"  {kind}", f"{v['caught']} of {v['trials']}")
          for kind, v in report.by_kind().items()),
        ("rounds catching nothing", str(sum(
            1 for r in range(report.rounds)
            if not any(t.at_fault == "victim" for t in report.trials if t.round == r)))),
        ("lost", str(report.lost)),
        ("vendor writes applied", str(sum(1 for w in report.writes
                                          if w["effect"] == "created"))),
        ("duplicate writes (per run and call)", str(report.duplicate_writes)),
        ("recovery p50", seconds(percentile(recovery, 0.5))),
        ("recovery p95", seconds(percentile(recovery, 0.95))),
        ("recovery max", seconds(max(recovery) if recovery else None)),
    ]
    print("\n" + _paint("result", BOLD))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    resumed = [t for t in report.trials if t.at_fault == "victim"]
    if resumed:
        print("\n" + _paint("killed runs and where they were resumed", BOLD))
        print(f"  {'round':>5}  {'kind':8}  {'run':36}  {'resumed by':12}  recovery")
        for t in resumed:
            print(f"  {t.round + 1:>5}  {t.kind:8}  {t.run_id or '-':36}  "
                  f"{t.resumed_by or '-':12}  {seconds(t.recovery_seconds)}")
