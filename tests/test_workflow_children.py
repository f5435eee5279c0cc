"""Child workflows: a workflow starting three child workflow runs at once
(``ctx.all(ctx.workflow(...), ...)``) and waiting for all, SIGKILLed at each boundary;
and in one process, what a parent is given of a child that ends, fails or is unknown.

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
import uuid
from typing import Any

import psycopg
import pytest
from procs import KILLED, Proc, Stack

from ticketiq_pg import Tools
from ticketiq_pg.agent import RunInfo
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.runtime.step_keys import workflow_step_key
from ticketiq_pg.seal import Sealer
from ticketiq_pg.testing import wait_for
from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

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


def finish(stack: Stack, run_id: str, timeout: float = 60.0,
           **env: str) -> dict[str, Any]:
    """A second process (its settings ``env``) takes the run over and drives it and its
    children to their end (a child whose answer was sealed but not handed on when the
    victim died gives the parent its answer, and is handed on once the parent no longer
    holds it); the run's output."""
    survivor = stack.spawn(**env)
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
    # what landed: nothing twice; each child's keyed incident once (resent with its key
    # when in doubt); its comment at most once (in doubt, it is read back, never resent:
    # a comment marked but never sent is found absent and not sent)
    landed = stack.created_per_call()
    assert stack.duplicates() == {}
    for (child_id,) in stack.query("select run_id from ticketiq.runs "
                                   "where parent_run_id = %s", run_id):
        mine = {call: n for call, n in landed.items() if str(child_id) in call}
        assert sum(n for call, n in mine.items() if "child_open#" in call) == 1, landed
        if sum(mine.values()) != 2:
            # the one way a comment is missing: in doubt on a resume, read back, not found
            settled = [item for (detail,) in stack.query(
                "select detail from ticketiq.audit where run_id = %s and "
                "event = 'agent.run.crash_resumed'", child_id)
                for item in detail["settlements"]]
            assert [(i["call_id"].split("#")[0], i["settlement"], i["outcome"]["outcome"])
                    for i in settled if i["call_id"].startswith("child_comment")] == [
                ("child_comment", "read_back", "not_found")], (landed, settled)


def victim(stack: Stack, spec: dict[str, Any], faults: str | None = None) -> tuple[Proc, str]:
    # the children at once, also under a fault point (which counts them in the order
    # they reach it)
    proc = stack.spawn("--start", "1", "--workflow", json.dumps(spec), faults=faults,
                       TICKETIQ_CALLS_AT_ONCE="8")
    return proc, proc.read_event("started")["run_id"]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_resumed_parent_waiting_for_its_children_does_not_hold_their_steps(
    stack: Stack,
) -> None:
    """ResumesFirst on in the survivor (a takeover's resumes before other runs' later
    steps, up to 30 s a step): the parent, resumed while its children's writes were in
    doubt, asks for its children again and waits for them before its own first step.
    It leaves the order as it starts to wait; held in it, each child's later step would
    wait the 30 s for it (about 90 s; the run ends within 45)."""
    proc, run_id = victim(stack, SPEC, faults="after_call@1.4")
    assert proc.wait(60) == KILLED
    stack.sweep_as_if_later()
    check_each_child_once(stack, run_id, finish(stack, run_id, 45.0,
                                                TICKETIQ_RESUMES_FIRST_WAIT="30"))


@pytest.mark.slow
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


# -- in one process: what the parent is given ---------------------------------------------

SEAL_KEYS = "k1:" + "ab" * 32


class NoModel:
    async def step(self, request: Any) -> Any:
        raise AssertionError("a workflow run never asks the model")


def family(child_name: str = "child") -> tuple[Workflow, Workflow]:
    """A parent that starts ``child_name`` twice at once (one input fails it), and the
    child workflow: it ends with its input doubled, or fails on a negative one."""
    parent = Workflow("parent")
    child = Workflow("child")

    @parent.step(first=True)
    def fan(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.all(ctx.workflow(child_name, {"n": 2}), ctx.workflow(child_name, {"n": -1}),
                       then="done")

    @parent.step()
    def done(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.end(ctx.results["fan"])

    @child.step(first=True)
    def double(ctx: WorkflowContext) -> WorkflowNext:
        if ctx.input["n"] < 0:
            raise ValueError("a negative n")
        return ctx.end({"doubled": ctx.input["n"] * 2})

    return parent, child


async def run_parent(db_url: str, parent: Workflow, child: Workflow) -> tuple[Any, list[Any]]:
    delivered: list[Any] = []

    async def deliver(info: RunInfo, answer: Any) -> None:
        delivered.append(info.run_id)

    db = await TicketIQ.connect(db_url)
    try:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        run = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), NoModel(), Tools(),
                     workflows=[parent, child], deliver=deliver)
        outcome = await run.start_and_run(owner="alice", run_as="alice", channel="test",
                                          entry_point=parent.kind, input={})
    finally:
        await db.close()
    return outcome, delivered


async def test_a_child_workflow_gives_its_output_and_a_failed_one_its_reason(
    db_url: str,
) -> None:
    outcome, delivered = await run_parent(db_url, *family())
    assert outcome.status == "completed", outcome.reason
    ok, failed = outcome.answer["output"]
    assert ok["status"] == "completed" and ok["output"] == {"doubled": 4}
    assert failed["status"] == "failed" and "a negative n" in failed["reason"]
    assert "output" not in failed
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        rows = await (await conn.execute(
            "select run_id, entry_point, status, parent_run_id from ticketiq.runs "
            "where parent_run_id is not null order by idempotency_key")).fetchall()
    assert sorted((r[1], r[2]) for r in rows) == [("child", "completed"), ("child", "failed")]
    assert {r[3] for r in rows} == {outcome.run_id}
    assert {uuid.UUID(ok["child_run_id"]), uuid.UUID(failed["child_run_id"])} == {
        r[0] for r in rows}
    # a child's answer is its parent's result: only the parent's is delivered
    assert delivered == [outcome.run_id]


async def test_a_step_starting_a_workflow_the_process_lacks_fails_the_run(db_url: str) -> None:
    outcome, _ = await run_parent(db_url, *family("nowhere"))
    assert outcome.status == "failed" and "'nowhere'" in outcome.reason
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        rows = await (await conn.execute(
            "select count(*) filter (where parent_run_id is not null), "
            "(select count(*) from ticketiq.audit where event = 'agent.run.workflow_unknown') "
            "from ticketiq.runs")).fetchall()
    assert rows == [(0, 1)]  # no child started, the failure audited for what it is


def test_a_child_workflow_action_is_checked_as_it_is_built() -> None:
    ctx = WorkflowContext(run=None, input=None, step_id="a", steps_executed=0,  # type: ignore[arg-type]
                          vars={}, results={})
    with pytest.raises(ValueError, match="workflow"):
        ctx.workflow("not a name", {})
    action = ctx.workflow("child", {"n": 1}, then="a")
    assert (action.kind, action.tool, action.arguments) == (
        "workflow", "workflow.child", {"workflow": "child", "input": {"n": 1}})
    assert len(ctx.all(action, ctx.agent({}), ctx.call("t"), then="a").parts) == 3
    with pytest.raises(ValueError, match="not made at once"):
        ctx.all(action, ctx.sleep(1, then="a"), then="a")


@pytest.mark.slow
def test_children_that_sleep_are_waited_for_without_a_loss(stack: Stack) -> None:
    """The children sleep durably, one process: the parent suspends on one child after
    another (never holding its lease while they sleep), is woken by each end, and ends
    with nothing lost or counted lost."""
    proc, run_id = victim(stack, {**SPEC, "child_sleep": 0.5})
    wait_for("the run and its children to end", lambda: stack.query(
        "select count(*) = 4 and bool_and(finished_at is not null) from ticketiq.runs "
        "where run_id = %s or parent_run_id = %s", run_id, run_id)[0][0], 60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    rows = stack.query("select status, loss_count from ticketiq.runs where run_id = %s "
                       "or parent_run_id = %s", run_id, run_id)
    assert rows == [("completed", 0)] * 4
    suspended = stack.query("select detail ->> 'wait_key' from ticketiq.audit where run_id = %s "
                            "and event = 'agent.run.suspended'", run_id)
    assert any(key.startswith("child:") for (key,) in suspended), suspended
    ((output,),) = stack.query("select body -> 'output' from ticketiq.answers "
                               "where run_id = %s", run_id)
    check_each_child_once(stack, run_id, output)
