"""Kill trials: two local app processes over one PostgreSQL, a victim faulted at random.

Runs only when asked::

    LIYAGENT_KILL_TRIALS=200 .venv/bin/python -m pytest tests/unit/test_kill_trials.py -q

``LIYAGENT_KILL_SEED`` fixes the kill timings for a repeat run;
``LIYAGENT_KILL_MODE`` is kill (default), stop, backend, restart or
failover (a private primary and synchronous standby; the primary is
SIGKILLed and the standby promoted mid-round, then a new standby is built
for the next round);
``LIYAGENT_KILL_LEASE_ONLY=N`` adds N rounds, spread among the others, whose
victim holds no liveness token (detection by lease expiry alone), so both
detections are measured in the same run;
``LIYAGENT_KILL_FLAKY=1`` adds, to whichever mode runs, transient errors at
random (:mod:`harness.flaky`): the scripted model answers 429s,
503s, timeouts and dropped connections, the vendors 503s, 429s, dropped
connections and slow reads;
The production shape (:mod:`harness.trial_shape`): ``LIYAGENT_KILL_EDGE=1``
sends every entry through a real HAProxy (judged besides: every 2xx it answered has
exactly one run; in kill and deploy mode it answered no 5xx, ``edge_5xx``);
``LIYAGENT_KILL_MODE=deploy`` replaces the victim by a new process and SIGTERMs it
(judged: no loss counted, no run taken over but by the drain; ``handovers`` gives each
wait); ``LIYAGENT_KILL_MODE=patroni`` runs three PostgreSQL nodes under Patroni and
etcd, SIGKILLs the primary's PostgreSQL (sometimes its agent too) or, every fourth
round, makes a planned ``patronictl switchover`` (judged: Patroni promoted another node
every round, the switchover handed no run over); ``LIYAGENT_KILL_POOLER=session|transaction``
puts a real PgBouncer between the app processes and the database (judged: no prepared
statement or session state error in any log).  ``detected_by`` is in every report.
``LIYAGENT_KILL_VENDOR_LIMITS`` (JSON, as ``TICKETIQ_SCRIPT_VENDOR_LIMITS``) puts the
scripted tools of those vendors under limits every process shares, so calls wait for
tokens when the victim dies (issue 43); ``LIYAGENT_KILL_VENDOR_DELAY=S`` makes each of
their requests take S seconds, so calls are counted in flight under a concurrency when it
dies; ``tokens_given_back`` in the report gives, per round, the victim's calls counted in
flight and its runs suspended for a token at the fault, and the seconds from the fault
to each of those calls no longer counted (its run taken over at a new epoch).
``LIYAGENT_KILL_MODE=watch`` (behind the edge, which it turns on) SIGKILLs the victim
while SSE clients watch a run of it stream its text (:mod:`harness.watch_trial`: clients
on each process's front and through the edge; judged: each client's durable events are
the run's rows, which agree with its audit and checkpoints, every partial text it saw
announced void, its assembled text the sealed answer; ``watch`` in the report tallies
clients and events checked).  In ``kill`` and ``watch`` mode each round also begins a
run whose steps make three writes at once (:mod:`harness.three_writes`: judged, every
call left in doubt settled by its route, none landed twice; ``three`` in the report);
``LIYAGENT_KILL_TARGET=three`` (any kind) times every round's fault from that kind,
so every round kills the three writes in flight.  Those modes also begin a fan-out
(:mod:`harness.fanout_trial`: a workflow starting three child workflows at once and
waiting for all, or in half the rounds for the first to end; judged, one child run per
delegation key, each completed, a first-of answered with the first end the database
recorded;
``fanout`` in the report tallies where its children were at the fault), and
``LIYAGENT_KILL_TARGET=fanout`` times every round's fault from its children.
``LIYAGENT_KILL_TARGET=versions`` (with ``LIYAGENT_KILL_MODE=deploy LIYAGENT_KILL_EDGE=1``)
makes every round a rolling deploy of a new workflow version
(:mod:`harness.versions_trial`): runs of the old version asleep on timers and waiting for
signals while a process of the new release comes up and the old one drains, the signals
sent through the edge, and in half the rounds a SIGKILL of the draining, the new or the
kept old process; judged, every run completed on a process whose release runs its
version, none failed for the deploy, a loss counted only where the SIGKILL took a run
over; ``versions`` in the report gives where each run finished.
``LIYAGENT_KILL_REPORT`` names a file to write the result to as JSON;
``LIYAGENT_KILL_PLOT`` a PNG of the recovery time of every trial caught in
flight, per round (needs matplotlib, the ``bench`` extra).
Judged from the database and the vendor service's own record (see
:mod:`harness.trials`): no lost trial, no duplicate write (counted by
what landed: per run and tool call, read from the content the vendor applied,
whatever key it carried), recovery within 15 s (to the trial's end; for a long run,
to its next step after the takeover), from 12 rounds on every kind
caught in flight (its run running on the victim at the fault) in at least a
quarter of its trials, in ``stop`` mode no outside call by the stalled process begun
after the takeover and none applied after it unless its vendor fenced it or the
survivor settled it (the report lists each call, ``stalled_calls``, with both
counts), and in ``restart``/``failover`` mode no run of a live process handed over
because its session ended.  Flaky, besides: no run fails (a failed
trial is lost, its run's failure reason shown) and no run counts a loss for an
error (at most 1 for a run the fault caught in flight on the victim, else 0).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from pathlib import Path

import pytest

from harness.pooler import BROKEN
from harness.replicated import ReplicatedCluster
from harness.trial_report import percentile
from harness.trial_shape import missing, open_pooler, open_shape
from harness.trials import run_trials
from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import PrivateCluster, temporary_database

ROUNDS = int(os.environ.get("LIYAGENT_KILL_TRIALS", "0") or 0)
MODE = os.environ.get("LIYAGENT_KILL_MODE", "kill")
LEASE_ONLY = int(os.environ.get("LIYAGENT_KILL_LEASE_ONLY", "0") or 0)
FLAKY = os.environ.get("LIYAGENT_KILL_FLAKY", "").lower() in ("1", "true", "yes", "on")
EDGE = os.environ.get("LIYAGENT_KILL_EDGE", "").lower() in ("1", "true", "yes", "on") \
    or MODE == "watch"
TARGET = os.environ.get("LIYAGENT_KILL_TARGET", "") or None
POOLER = os.environ.get("LIYAGENT_KILL_POOLER", "") or None
RECOVERY_BOUND = 15.0
#: Every kind is caught in flight in at least this share of its trials ...
CAUGHT_SHARE = 0.25
#: ... judged from this many rounds on (all rounds, lease-only ones too).  Round i
#: times its fault from kind i mod 3 (its target, caught unless not seen running on
#: the victim within SEEN_TIMEOUT), so each kind is the target of floor(n / 3) rounds
#: or more.  In a smoke of a few rounds one target seen late is the whole margin (of
#: 5 rounds, one kind is the target once: 1 < 5 / 4); from 12 rounds each kind is the
#: target 4 times or more, and in the rounds it is not it is still caught most of the
#: time (begun with the target, as long: 53-56 of 60 per kind measured), so a quarter
#: holds with room to spare, also for a fourth kind added later (targeted 3 of 12).
CAUGHT_FROM_ROUNDS = 12

pytestmark = pytest.mark.skipif(
    ROUNDS <= 0, reason="kill trials run only when asked: LIYAGENT_KILL_TRIALS=N"
)


def _seed() -> int:
    raw = os.environ.get("LIYAGENT_KILL_SEED")
    return int(raw) if raw else random.SystemRandom().randrange(1 << 31)


def test_kill_trials(pg_server_url: str, tmp_path: Path) -> None:
    import psycopg

    seed = _seed()
    install = missing(MODE, edge=EDGE, pooler=POOLER)
    if install:
        pytest.skip(f"needs Debian packages: {install}")
    stack = contextlib.ExitStack()
    shape, patroni = open_shape(stack, MODE, edge=EDGE, seed=seed)
    pooler = None
    cluster: PrivateCluster | None = None
    pair: ReplicatedCluster | None = None
    server = pg_server_url
    if MODE == "restart":
        # A restart needs a cluster of the harness's own.
        cluster = PrivateCluster()
        cluster.start()
        server = cluster.admin_url
    elif MODE == "failover":
        # A primary and a synchronous standby of the harness's own, behind one
        # multi-host URL: the database is created on the primary and replicated.
        pair = ReplicatedCluster().start()
        server = pair.admin_url
    elif patroni is not None:
        server = patroni.admin_url

    def fail_over() -> None:
        assert pair is not None
        pair.failover()
        # The next round fails over again: a new synchronous standby from the
        # new primary (the apps recover meanwhile; their time is the database's).
        pair.rebuild_standby()

    try:
        with temporary_database(server, prefix="tiq_trials") as url:
            with psycopg.connect(url, autocommit=True) as conn:
                install_sync(conn)
            env = dict(shape.env) if shape is not None else {}
            if POOLER:
                pooler, through = open_pooler(stack, url, POOLER)
                env.update(through)
            report = run_trials(
                url, tmp_path / "arena", rounds=ROUNDS, seed=seed, mode=MODE,
                restart_cluster=cluster.restart if cluster is not None else None,
                failover_cluster=fail_over if pair is not None else None,
                lease_only_rounds=LEASE_ONLY, flaky=FLAKY, env=env, shape=shape,
                target_kind=TARGET,
                say=print if os.environ.get("LIYAGENT_KILL_VERBOSE") else (lambda _: None),
                on_round=lambda i, trials, _: print(
                    f"round {i}: " + ", ".join(
                        f"{t.kind} {t.outcome}"
                        + (f" {t.recovery_seconds:.1f}s" if t.recovery_seconds else "")
                        + (f" errors {t.model_errors}m/{t.vendor_errors}v"
                           f" losses {t.loss_count}" if FLAKY else "")
                        + (f" ({t.failure_reason})" if t.failure_reason else "")
                        for t in trials), flush=True),
            )
            pooler_errors = pooler.errors() if pooler is not None else []
    finally:
        stack.close()
        if cluster is not None:
            cluster.stop()
        if pair is not None:
            pair.stop()

    result = report.as_json()
    recovery = report.recovery_seconds
    result["recovery_p50"] = percentile(recovery, 0.5)
    result["recovery_p95"] = percentile(recovery, 0.95)
    result["recovery_max"] = max(recovery) if recovery else None
    if pair is not None:
        # Seconds from the start of each kill to the standby accepting writes,
        # and each rebuild of the standby.
        result["failovers"] = pair.failovers
        result["standby_rebuilds"] = pair.rebuilds
    if patroni is not None:
        # Per round: the old and new primary, whether the agent died too, seconds
        # until another node took writes and until the old one streamed again.
        result["patroni"] = patroni.events
    if POOLER:
        result["pooler"] = POOLER
    if os.environ.get("LIYAGENT_KILL_REPORT"):
        Path(os.environ["LIYAGENT_KILL_REPORT"]).write_text(json.dumps(result, indent=2))
    if os.environ.get("LIYAGENT_KILL_PLOT"):
        _plot(result, Path(os.environ["LIYAGENT_KILL_PLOT"]))
    print(json.dumps({k: v for k, v in result.items() if k not in ("trials", "write_log")}))
    print("caught in flight per kind: " + ", ".join(
        f"{kind} {v['caught']}/{v['trials']} (open at the fault {v['in_flight']})"
        for kind, v in report.by_kind().items()))

    # Every verdict at once, so a failing run shows all that went wrong.
    found = []
    lost = [t for t in report.trials if t.outcome != "answered"]
    if lost:
        found.append(f"lost trials {lost}")
    if report.duplicates:
        found.append(f"duplicate writes (by run and call) {report.duplicates}")
    # Every round timed from one kind (watch mode, LIYAGENT_KILL_TARGET): that kind is
    # caught, the others only where their phases fall.
    judged_kinds = TARGET or ("watch" if MODE == "watch" else None)
    rarely = {k: v for k, v in report.rarely_caught(CAUGHT_SHARE).items()
              if judged_kinds in (None, k)}
    if ROUNDS + LEASE_ONLY >= CAUGHT_FROM_ROUNDS and rarely:
        found.append(f"kinds caught in flight in under {CAUGHT_SHARE:.0%} of their trials: "
                     f"{rarely}")
    slow = [t for t in report.trials if (t.judged_seconds or 0) > RECOVERY_BOUND]
    if slow:
        found.append(f"recovery over {RECOVERY_BOUND}s: {slow}")
    if report.stalled_writes:
        stalled = report.as_json()["stalled_calls"]
        found.append(f"the stalled process called after takeover: {report.stalled_writes} "
                     f"calls begun after it or applied and not settled ({stalled})")
    if report.live_takeovers:
        found.append("runs of live processes handed over")
    if FLAKY and report.excess_losses:
        found.append("losses counted for errors: " + ", ".join(
            f"round {t.round} {t.kind} run {t.run_id} loss_count {t.loss_count} > "
            f"{t.loss_allowed} (errors {t.model_errors} model, {t.vendor_errors} vendor)"
            for t in report.excess_losses))
    found.extend(report.shape_problems)
    found.extend(report.problems)
    if EDGE and MODE in ("kill", "deploy", "watch") and result.get("edge_5xx"):
        found.append(f"the edge answered {result['edge_5xx']} 5xx")
    if MODE == "deploy":
        taken = [t for t in report.trials if t.claimed_by not in (None, "released")]
        if taken or report.excess_losses:
            found.append(f"a deploy lost runs: taken over {taken}, losses "
                         f"{report.excess_losses}")
    if TARGET == "versions" and not (result.get("versions") or {}).get("runs"):
        found.append("the versions trial ran no runs")
    if patroni is not None:
        unpromoted = [e for e in patroni.events if e.get("new") in (None, e["old"])]
        if len(patroni.events) != report.rounds or unpromoted:
            found.append(f"Patroni did not promote in every round: {patroni.events}")
    if POOLER:
        logs = [line for log in (tmp_path / "arena").glob("*.log")
                for line in log.read_text(errors="replace").splitlines() if BROKEN.search(line)]
        if pooler_errors or logs:
            found.append(f"session errors behind the pooler: {pooler_errors + logs}")
    if report.rounds != ROUNDS + LEASE_ONLY:
        found.append(f"{report.rounds} rounds of {ROUNDS + LEASE_ONLY}")
    assert not found, f"seed {seed}" + (" (flaky)" if FLAKY else "") + ": " + "; ".join(found)


def _plot(result: dict, path: Path) -> None:
    """Recovery time per trial caught in flight, by round and kind (and, failing over,
    the seconds until the promoted standby took writes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4.2), dpi=110)
    for kind, marker in (("cron", "o"), ("teams", "s"), ("webhook", "^"), ("run", "v"),
                         ("long", "D")):
        points = [(t["round"] + 1, t["recovery_seconds"]) for t in result["trials"]
                  if t["kind"] == kind and t["recovery_seconds"] is not None]
        if points:
            ax.scatter(*zip(*points, strict=True), marker=marker, s=22, label=kind)
    if result.get("failovers"):
        ax.plot(range(1, len(result["failovers"]) + 1),
                [f["writable"] for f in result["failovers"]], color="grey", lw=1,
                label="kill to promoted standby taking writes")
    for q, style in (("recovery_p50", ":"), ("recovery_p95", "--")):
        if result.get(q) is not None:
            ax.axhline(result[q], color="black", lw=0.8, ls=style,
                       label=f"{q.removeprefix('recovery_')} {result[q]:.2f} s")
    ax.set_xlabel("round")
    ax.set_ylabel("seconds from the fault to the trial's end")
    ax.set_title(f"{result['mode']}: {result['rounds']} rounds, seed {result['seed']}, "
                 f"lost {result['lost']}, duplicates {result['duplicates']}")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
