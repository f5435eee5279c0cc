"""Runs in flight are bounded by memory, not connections: 300 runs over a pool of 8.

A run holds a pooled connection only for the round trip of each statement, never
while it waits on its model, so a worker whose pool has 8 connections
(``TICKETIQ_POOL_SIZE``) drives 300 runs at once to completion, and a survivor
with the same pool takes all 300 over, once each, when their process is
SIGKILLed.  Real worker processes, a real SIGKILL; judged from the database,
``pg_stat_activity`` and the vendor service's own record.

Invariants: I3 (once per loss), I4 (losses counted), I14 (one resume audit per resume).
"""

from __future__ import annotations

import signal
import threading

import pytest
from procs import KILLED, Stack
from test_workers import spawn_worker, up, wait_until

pytestmark = pytest.mark.slow

RUNS = 300
POOL = 8
#: Sessions of a worker besides its pool: lease renewal, LISTEN, liveness, adoption,
#: and the connection psycopg_pool may be opening while another closes.
OWN_SESSIONS = 5


def statuses(stack: Stack) -> dict[str, int]:
    rows = stack.query("select status, count(*) from ticketiq.runs group by status")
    return {status: int(n) for status, n in rows}


class SessionWatch:
    """Samples the peak number of sessions on the test's database (its own left out)
    and of runs running at once.

    Only one worker runs while it watches, and nothing else connects (the vendor
    service has no database), so every session counted is that worker's, but the
    test's own: its judging sessions (the main thread's polls too, and one that is
    still closing) are named :attr:`Stack.JUDGE` and left out.
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.peak = 0
        #: The sessions by application name when the peak was seen (the failure's evidence).
        self.at_peak: list[tuple[str, str, str]] = []
        self.running = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> SessionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            rows = self.stack.query(
                "select coalesce(application_name, ''), coalesce(state, ''),"
                " coalesce(left(query, 60), '') from pg_stat_activity"
                " where datname = current_database() and application_name <> %s",
                Stack.JUDGE)
            if len(rows) > self.peak:
                self.peak, self.at_peak = len(rows), sorted(tuple(r) for r in rows)
            ((r,),) = self.stack.query(
                "select count(*) from ticketiq.runs where status = 'running'")
            self.running = max(self.running, int(r))


def test_300_runs_complete_over_a_pool_of_8(stack: Stack) -> None:
    """Far more runs at once than connections: every one completes; the pool stays at 8."""
    stack.settings["TICKETIQ_POOL_SIZE"] = str(POOL)
    worker = spawn_worker(stack, "solo", "--start", str(RUNS), "--plan", "reads",
                          "--steps", "3", "--model-delay", "4.0")
    up(worker)
    with SessionWatch(stack) as watch:
        wait_until(f"{RUNS} runs completed",
                   lambda: statuses(stack).get("completed", 0) == RUNS, 240, 0.2)
    assert statuses(stack) == {"completed": RUNS}
    assert len(worker.find("started")) == RUNS
    # All of them at once (the old default held 64 and queued the rest) ...
    assert watch.running == RUNS
    # The sessions the worker held never passed its pool and its own few: far fewer
    # than the runs it drove at once (the old pool held one connection per run).
    assert 0 < watch.peak <= POOL + OWN_SESSIONS, watch.at_peak
    assert worker.terminate() == 0


def test_a_survivor_with_a_pool_of_8_takes_over_300_runs_of_a_killed_process(
    stack: Stack,
) -> None:
    """SIGKILL a process holding 300 runs: the survivor (pool of 8) resumes each once."""
    stack.settings["TICKETIQ_POOL_SIZE"] = str(POOL)
    survivor = up(spawn_worker(stack, "survivor"))
    victim = up(spawn_worker(stack, "victim", "--start", str(RUNS), "--plan", "mixed",
                             "--steps", "3", "--model-delay", "1.0"))
    wait_until(f"{RUNS} runs started", lambda: len(victim.find("started")) == RUNS, 120, 0.1)
    run_ids = {e["run_id"] for e in victim.find("started")}
    # Every run wrote its first step's checkpoint: all are in flight on the victim.
    wait_until("every run checkpointed step 1", lambda: stack.query(
        "select count(distinct run_id) from ticketiq.checkpoints")[0][0] == RUNS, 120, 0.1)
    victim.signal(signal.SIGKILL)
    assert victim.popen.wait(10) == KILLED
    # One reading of the statuses: two (running, then claimed) could both say 0 while
    # the runs went from claimed to running between them, adopted in one statement.
    wait_until("every run ended", lambda: not {"running", "claimed"} & set(statuses(stack)),
               240, 0.2)

    rows = stack.query("select run_id::text, status, loss_count from ticketiq.runs")
    assert {r[0] for r in rows} == run_ids
    assert {r[1] for r in rows} == {"completed"}, [r for r in rows if r[1] != "completed"]
    taken = [r[0] for r in rows if r[2] == 1]
    assert all(r[2] <= 1 for r in rows)
    # the victim finished few, if any, before the kill: nearly all were taken over
    assert len(taken) >= RUNS - len(victim.outcomes()) > 0
    resumed = stack.query(
        "select run_id::text, count(*), min(actor), max(actor) from ticketiq.audit"
        " where event = 'agent.run.crash_resumed' group by run_id")
    assert {r[0] for r in resumed} == set(taken)
    assert {(r[1], r[2], r[3]) for r in resumed} == {(1, "survivor", "survivor")}
    assert stack.duplicates() == {}
    assert survivor.terminate() == 0
