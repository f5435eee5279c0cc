"""The scale checks of vendor limits and fair shares (issue 43's "done when"), over real
worker processes, a real vendor service and a database of their own.

:func:`vendor_check`: a vendor that answers 429 past ``vendor_rate`` requests in any
second and records every request; ``processes`` workers start ``runs`` runs between them
at once, each writing to it, with the app's limit at ``app_rate`` a second.  Figures: the
most requests the vendor saw in any one-second window after its first second, the 429s
after that second, the runs completed, failed and lost, the suspensions for a token.

:func:`fair_check`: owner A's ``a_runs`` runs queued in the inbox with one urgent run of
A's (priority 10) behind them; ``processes`` workers with a per-owner limit start them;
once A's backlog is being worked, owner B submits ``b_runs``.  Figures: B's and A's waits
(received to started: p50, p99), how many of A's runs started between B's submission and
B's last start, and how many of A's normal runs started before the urgent one.

``scripts/limits_scale.py`` runs both at full size; ``tests/test_limits_scale.py`` runs
the same code small.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from harness import landed
from harness.vendor_sim.process import VendorService

SEAL_KEYS = "k1:" + base64.b64encode(b"ticketiq-limits-scale-key-0123456").decode()


def most_in_a_second(times: list[float]) -> int:
    """The most requests in any window of one second."""
    times = sorted(times)
    most, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def percentile(values: list[float], p: float) -> float:
    """The ``p`` percentile (0..100) of ``values``, nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _env(db_url: str, vendor_url: str, workdir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TICKETIQ_FAULTS", None)
    env.update(TICKETIQ_DATABASE_URL=db_url, TICKETIQ_VENDOR_URL=vendor_url,
               TICKETIQ_SEAL_KEYS=SEAL_KEYS, TICKETIQ_MODEL_LOG=str(workdir / "model.log"),
               TICKETIQ_GATES_FILE=str(workdir / "gates.json"), **extra)
    return env


def _spawn(argv: list[str], env: dict[str, str], workdir: Path, name: str) -> subprocess.Popen[Any]:
    out = open(workdir / f"{name}.out", "ab")  # noqa: SIM115 - the child holds it
    err = open(workdir / f"{name}.err", "ab")  # noqa: SIM115
    return subprocess.Popen([sys.executable, *argv], env=env, stdout=out, stderr=err,
                            stdin=subprocess.DEVNULL)


def _wait(what: str, done: Callable[[], bool], timeout: float,
          procs: list[subprocess.Popen[Any]]) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a worker exited early: {dead}")
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen[Any]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _query(db_url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def vendor_check(db_url: str, workdir: Path, *, runs: int = 400, processes: int = 2,
                 vendor_rate: int = 10, app_rate: float = 8.0,
                 timeout: float = 900.0) -> dict[str, Any]:
    """``runs`` runs each writing once to a vendor limited to ``vendor_rate`` a second."""
    workdir.mkdir(parents=True, exist_ok=True)
    vendor = VendorService.start(workdir / "vendor")
    procs: list[subprocess.Popen[Any]] = []
    try:
        vendor.rate_limit("jira", vendor_rate)
        env = _env(db_url, vendor.base_url, workdir, TICKETIQ_SCRIPT_VENDOR_LIMITS=json.dumps(
            {"jira": {"rate": app_rate, "burst": 1}}))
        began = time.monotonic()
        share = [runs // processes + (1 if i < runs % processes else 0) for i in range(processes)]
        for i, count in enumerate(share):
            # an incident (no limit) and a Jira comment (the limited vendor): one step
            procs.append(_spawn(["-m", "harness.scripted", "--start", str(count), "--seed",
                                 str(1 + i * 1_000_000), "--steps", "2", "--plan", "writes",
                                 "--process-id", f"w{i}"], env, workdir, f"w{i}"))
        _wait(f"{runs} runs to end", lambda: _query(
            db_url, "select count(*) from ticketiq.runs where status in "
            "('completed', 'failed', 'stopped')")[0][0] >= runs, timeout, procs)
        seconds = time.monotonic() - began
    finally:
        _stop(procs)
        requests = vendor.requests()
        vendor.stop()
    jira = [r for r in requests if r["vendor"] == "jira"]
    first = min(r["wall_at"] for r in jira)
    after = [r for r in jira if r["wall_at"] >= first + 1.0]
    landed_after = [r["wall_at"] for r in after if r["status"] != 429]
    statuses = dict(_query(db_url, "select status::text, count(*) from ticketiq.runs group by 1"))
    (lost,), = _query(db_url, "select count(*) from ticketiq.runs where loss_count > 0")
    (suspended,), = _query(db_url, "select count(*) from ticketiq.audit "
                           "where event = 'vendor.waiting'")
    (taken, waited) = _query(db_url, "select taken, waited from ticketiq.vendor_limit_figures() "
                             "where vendor = 'jira'")[0]
    duplicates = {k: n for k, n in landed.applied_per_call(landed.writes(requests)).items()
                  if n > 1}
    return {
        "runs": runs, "processes": processes, "vendor_rate": vendor_rate,
        "app_rate": app_rate, "seconds": round(seconds, 1),
        "jira_requests": len(jira),
        "max_in_1s_after_first_second": most_in_a_second(landed_after),
        "429_after_first_second": sum(1 for r in after if r["status"] == 429),
        "429_total": sum(1 for r in jira if r["status"] == 429),
        "completed": statuses.get("completed", 0), "failed": statuses.get("failed", 0),
        "not_ended": runs - sum(statuses.get(s, 0) for s in ("completed", "failed", "stopped")),
        "runs_lost_once": lost, "suspensions": suspended, "tokens_taken": taken,
        "waits_refused": waited, "duplicates": len(duplicates),
    }


SCRIPT = '{"seed": %d, "steps": 2, "plan": "reads", "model_delay": 0.05}'


def _accept(conn: psycopg.Connection, sender: str, owner: str, seed: int,
            priority: int = 0) -> None:
    conn.execute("select ticketiq.accept_entry('run', %s, %s::jsonb, %s, %s, 'run', false, "
                 "true, %s)", (sender, SCRIPT % seed, owner, owner, priority))


def fair_check(db_url: str, workdir: Path, *, a_runs: int = 1000, b_runs: int = 10,
               owner_limit: int = 10, processes: int = 2,
               timeout: float = 900.0) -> dict[str, Any]:
    """Owner A's backlog of ``a_runs`` (and an urgent one) against B's ``b_runs``."""
    workdir.mkdir(parents=True, exist_ok=True)
    vendor = VendorService.start(workdir / "vendor")
    procs: list[subprocess.Popen[Any]] = []
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            for i in range(a_runs):
                _accept(conn, f"a-{i}", "owner-a", i)
            _accept(conn, "urgent", "owner-a", 5_000_000, priority=10)
        env = _env(db_url, vendor.base_url, workdir,
                   TICKETIQ_OWNER_MAX_RUNS=str(owner_limit))
        for i in range(processes):
            procs.append(_spawn(["-m", "ticketiq_pg.ops.cli", "worker", "--process-id",
                                 f"w{i}", "--app", "harness.scripted:app"], env, workdir,
                                f"w{i}"))
        # B submits once A's backlog is being worked: a turn or two of A's have started
        _wait("A's backlog to be worked", lambda: _query(
            db_url, "select count(*) from ticketiq.entries where owner = 'owner-a' "
            "and started_at is not null")[0][0] >= 2 * owner_limit, timeout, procs)
        with psycopg.connect(db_url, autocommit=True) as conn:
            for i in range(b_runs):
                _accept(conn, f"b-{i}", "owner-b", 9_000_000 + i)
        _wait("every run to end", lambda: _query(
            db_url, "select count(*) from ticketiq.entries where state <> 'answered'")[0][0]
            == 0, timeout, procs)
    finally:
        _stop(procs)
        vendor.stop()
    rows = _query(db_url, "select sender_id, owner, received_at, started_at, "
                  "extract(epoch from started_at - received_at)::float8 from ticketiq.entries")
    waits = {owner: [w for _, o, _, _, w in rows if o == owner and _ != "urgent"]
             for owner in ("owner-a", "owner-b")}
    b_rows = [r for r in rows if r[1] == "owner-b"]
    b_in, b_last = min(r[2] for r in b_rows), max(r[3] for r in b_rows)
    a_between = sum(1 for s, o, _, started, _w in rows
                    if o == "owner-a" and s != "urgent" and b_in < started < b_last)
    urgent_at = next(r[3] for r in rows if r[0] == "urgent")
    before_urgent = sum(1 for s, o, _, started, _w in rows
                        if o == "owner-a" and s != "urgent" and started < urgent_at)
    (most_a,), = _query(db_url, "select max(n) from (select (select count(*) from "
                        "ticketiq.entries as o where o.owner = 'owner-a' and o.started_at <= "
                        "e.started_at and coalesce(o.finished_at, 'infinity') > e.started_at) "
                        "as n from ticketiq.entries as e where e.owner = 'owner-a') as x")
    return {
        "a_runs": a_runs, "b_runs": b_runs, "owner_limit": owner_limit,
        "processes": processes,
        "b_wait_p50": round(statistics.median(waits["owner-b"]), 3),
        "b_wait_p99": round(percentile(waits["owner-b"], 99), 3),
        "b_wait_max": round(max(waits["owner-b"]), 3),
        "a_wait_p50": round(statistics.median(waits["owner-a"]), 3),
        "a_wait_p99": round(percentile(waits["owner-a"], 99), 3),
        "a_started_while_b_waited": a_between,
        "a_normal_started_before_urgent": before_urgent,
        "a_most_in_flight": most_a,
    }
