"""Child workflows: a workflow starting three child workflow runs at once
(``ctx.all(ctx.workflow(...), ...)``) and waiting for all, SIGKILLed at each boundary.

Real processes (``python -m harness.scripted --workflow``): the scripted workflow's
delegation step is an ``all`` of three runs of ``scripted_child`` (a keyed write its
vendor dedupes, optionally a durable sleep, a write with a reader).  The victim is
SIGKILLed before any child starts, after the first child started, while the children's
writes are in doubt, while they sleep (the parent waiting on them, holding nothing),
after a child sealed its answer and after all ended, before the parent goes on.  Another
process finishes the run.  Judged from the database (one child run per delegation key,
each completed) and from what landed at the vendor (each write once).
"""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest
from procs import KILLED, Proc, Stack

from ticketiq_pg.runtime.step_keys import workflow_step_key
from ticketiq_pg.testing import wait_for

pytestmark = pytest.mark.slow

#: The parent's step of the fan-out (read, incident, comment, sleep, then the ``all``)
#: and the steps its code executed when it acted.
FAN_STEP, FAN_EXECUTED = 5, 5
#: The children think 0.2 s before each call, so the three are in flight together.
SPEC = {"loops": 1, "sleep": 0.1, "flows": 3, "child_delay": 0.2}

# (fault point, what the kill leaves, children started and answers sealed when it came:
# at least, at most)
BOUNDARIES = [
    # the fan-out's checkpoint is written: no child started yet
    (f"after_checkpoint@{FAN_STEP}", "before the children start", (0, 0), (0, 0)),
    # the second checkpoint of a step 1 in the process: the first child's (the parent's
    # own step 1 was the first)
    ("after_checkpoint@1.2", "after the first child started", (1, 3), (0, 0)),
    # the fourth call returned at a step 1: the third child's keyed write landed, its
    # outcome not recorded (the parent's read was the first)
    ("after_call@1.4", "while the children's writes are in doubt", (3, 3), (0, 0)),
    # a child's answer is sealed (steps: its write, its comment, its answer), not handed on
    ("after_seal@3.1", "after a child ended, before it was handed on", (3, 3), (1, 3)),
    # every child ended; the parent is about to go on from their results
    (f"before_model@{FAN_STEP + 1}", "after the children ended, before the parent goes on",
     (3, 3), (3, 3)),
]


def finish(stack: Stack, run_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """A second process takes the run over and drives it and its children to their end
    (a child whose answer was sealed but not handed on when the victim died gives the
    parent its answer, and is handed on once the parent no longer holds it); the run's
    output."""
    survivor = stack.spawn()
    survivor.read_event("ready")
    try:
        wait_for(f"run {run_id} and its children to end", lambda: stack.query(
            "select count(*) = 4 and bool_and(finished_at is not null) from ticketiq.runs "
            "where run_id = %s or parent_run_id = %s", run_id, run_id)[0][0], timeout)
    finally:
        survivor.signal(signal.SIGTERM)
        survivor.wait(30)
    ((state, reason, body),) = stack.query(
        "select r.status, r.failure_reason, a.body from ticketiq.runs as r left join "
        "ticketiq.answers as a using (run_id) where r.run_id = %s", run_id)
    assert state == "completed", reason
    return body["output"]


def check_each_child_once(stack: Stack, run_id: str, output: dict[str, Any]) -> None:
    """One child run per delegation key (the fan-out's place), each completed and its
    output the parent's result; every write landed once."""
    children = stack.query(
        "select idempotency_key, status, entry_point from ticketiq.runs "
        "where parent_run_id = %s", run_id)
    expected = sorted(workflow_step_key(run_id, f"delegate.{i}", FAN_EXECUTED)
                      for i in range(3))
    assert sorted(c[0] for c in children) == expected  # 3 children, never a 4th
    assert {(c[1], c[2]) for c in children} == {("completed", "scripted_child")}
    seed = output["flows"][0]["child"].split(".")[0]
    assert output["flows"] == [{"child": f"{seed}.{i}", "incident": "created"}
                               for i in range(3)], output
    # what landed: each child's incident and comment once, the parent's own writes once
    landed = stack.created_per_call()
    assert stack.duplicates() == {}
    for (child_id,) in stack.query("select run_id from ticketiq.runs "
                                   "where parent_run_id = %s", run_id):
        assert sum(n for call, n in landed.items() if str(child_id) in call) == 2, landed


def victim(stack: Stack, spec: dict[str, Any], faults: str | None = None) -> tuple[Proc, str]:
    # the children at once, also under a fault point (which counts them in the order
    # they reach it)
    proc = stack.spawn("--start", "1", "--workflow", json.dumps(spec), faults=faults,
                       TICKETIQ_CALLS_AT_ONCE="8")
    return proc, proc.read_event("started")["run_id"]


def test_a_workflow_starts_three_child_workflows_and_waits_for_all(stack: Stack) -> None:
    proc, run_id = victim(stack, SPEC)
    wait_for("the run to end", lambda: stack.query(
        "select 1 from ticketiq.runs where run_id = %s and finished_at is not null", run_id), 60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    ((state, reason, output),) = stack.query(
        "select r.status, r.failure_reason, a.body -> 'output' from ticketiq.runs as r "
        "left join ticketiq.answers as a using (run_id) where r.run_id = %s", run_id)
    assert state == "completed", reason
    check_each_child_once(stack, run_id, output)


@pytest.mark.parametrize(("fault", "what", "started", "sealed"), BOUNDARIES,
                         ids=[b[0] for b in BOUNDARIES])
def test_a_fan_out_of_child_workflows_killed_at_a_boundary_runs_each_child_once(
    stack: Stack, fault: str, what: str, started: tuple[int, int], sealed: tuple[int, int],
) -> None:
    proc, run_id = victim(stack, SPEC, faults=fault)
    assert proc.wait(60) == KILLED, what
    ((children, answers, parent),) = stack.query(
        "select count(c.run_id), count(a.run_id), (select status from ticketiq.runs "
        "where run_id = %s) from ticketiq.runs as c left join ticketiq.answers as a "
        "using (run_id) where c.parent_run_id = %s", run_id, run_id)
    # the kill came where it says: so many children started, so many answers sealed
    assert started[0] <= children <= started[1] and sealed[0] <= answers <= sealed[1], what
    assert parent == "running"
    stack.sweep_as_if_later()
    check_each_child_once(stack, run_id, finish(stack, run_id))


def test_a_parent_waiting_on_sleeping_children_holds_nothing_and_survives_a_kill(
    stack: Stack,
) -> None:
    """The children sleep durably; the parent waits for them with no lease (suspended on
    a child), the victim is SIGKILLed then, and another process wakes and ends them."""
    proc, run_id = victim(stack, {**SPEC, "child_sleep": 1.0})

    def all_waiting() -> bool:
        rows = stack.query("select status, wait_key from ticketiq.runs where run_id = %s "
                           "or parent_run_id = %s", run_id, run_id)
        return len(rows) == 4 and all(r[0] == "suspended" for r in rows)

    wait_for("the parent and its three children to wait", all_waiting, 30)
    ((wait_key, holder),) = stack.query(
        "select wait_key, lease_holder from ticketiq.runs where run_id = %s", run_id)
    assert wait_key.startswith("child:") and holder is None
    proc.kill()
    check_each_child_once(stack, run_id, finish(stack, run_id))
