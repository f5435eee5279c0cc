"""The first of several child workflows (``ctx.first``): a workflow starts three child
workflow runs at once and goes on from the first to end, SIGKILLed at each boundary; the
others run on to their own end, each once, and wake nothing.

Real processes (``python -m harness.scripted --workflow``): the scripted workflow's
delegation step is a ``first`` of three runs of ``scripted_child`` keyed ``c0`` to
``c2`` (a keyed write its vendor dedupes, a write with a reader), child i thinking
longer than child i - 1.  The victim is SIGKILLed before any child starts, once they are
started (held by the victim, not yet handed over), while a child's write is in doubt, and
after the first ended before the parent goes on.  Another process finishes the run.
Judged from the database (one child run per key, each completed once, the parent's
result the child the database recorded as the first to end, the same one it had
recorded before the kill) and from what landed at the vendor (each write once).
"""

from __future__ import annotations

import json
import signal
from typing import Any

import psycopg
import pytest
from procs import KILLED, Proc, Stack
from test_workflow_children import SEAL_KEYS, NoModel

from ticketiq_pg import InvalidAction, Tools
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db import recognisers
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import Fenced
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.runtime.step_keys import workflow_step_key
from ticketiq_pg.seal import Sealer
from ticketiq_pg.testing import wait_for
from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

#: The parent's step of the ``first`` and the steps its code executed when it acted.
FIRST_STEP, FIRST_EXECUTED = 5, 5
#: Child i thinks 0.3 s times i + 1 before each of its two calls.
SPEC = {"loops": 1, "sleep": 0.1, "race": 3, "child_delay": 0.3}

# (fault point, what the kill leaves, children started when it came: at least, at most)
BOUNDARIES = [
    (f"after_checkpoint@{FIRST_STEP}", "before the children start", (0, 0)),
    (f"children_started@{FIRST_STEP}", "the children started, held by the victim, not yet "
     "in their group nor handed over", (3, 3)),
    # the second call returned at a step 1 in the process: a child's keyed write landed,
    # its outcome not recorded (the parent's read was the first)
    ("after_call@1.2", "while a child's write is in doubt", (3, 3)),
    (f"before_model@{FIRST_STEP + 1}", "after the first child ended, before the parent "
     "goes on", (3, 3)),
]


def victim(stack: Stack, spec: dict[str, Any], faults: str | None = None) -> tuple[Proc, str]:
    proc = stack.spawn("--start", "1", "--workflow", json.dumps(spec), faults=faults)
    return proc, proc.read_event("started")["run_id"]


def all_ended(stack: Stack, run_id: str) -> bool:
    return bool(stack.query(
        "select count(*) = 4 and bool_and(finished_at is not null) from ticketiq.runs "
        "where run_id = %s or parent_run_id = %s", run_id, run_id)[0][0])


def recorded_first(stack: Stack, run_id: str) -> str | None:
    rows = stack.query("select child_run_id::text from ticketiq.first_ends where run_id = %s",
                       run_id)
    return rows[0][0] if rows else None


def check(stack: Stack, run_id: str) -> dict[str, Any]:
    """The run completed with the recorded first child as its result; one child run per
    key, each completed once; every write landed once; the run woken once.  The output's
    ``first``."""
    ((state, reason, output),) = stack.query(
        "select r.status, r.failure_reason, a.body -> 'output' from ticketiq.runs as r "
        "left join ticketiq.answers as a using (run_id) where r.run_id = %s", run_id)
    assert state == "completed", reason
    children = stack.query("select idempotency_key, status, run_id::text from ticketiq.runs "
                           "where parent_run_id = %s order by idempotency_key", run_id)
    keys = {workflow_step_key(run_id, f"delegate.c{i}", FIRST_EXECUTED): f"c{i}"
            for i in range(3)}
    assert sorted(c[0] for c in children) == sorted(keys)  # 3 children, never a 4th
    assert {c[1] for c in children} == {"completed"}
    first = output["first"]
    by_id = {c[2]: keys[c[0]] for c in children}
    assert first["child_run_id"] == recorded_first(stack, run_id)
    assert first["key"] == by_id[first["child_run_id"]] == f"c{first['first']}"
    assert first["status"] == "completed"
    assert first["output"]["child"].endswith(f".{first['first']}")
    assert stack.duplicates() == {}
    landed = stack.created_per_call()
    for child_id in by_id:
        mine = {call: n for call, n in landed.items() if child_id in call}
        assert sum(n for call, n in mine.items() if "child_open#" in call) == 1, landed
    # the first end woke the parent; the later ones woke nothing
    woken = stack.query("select detail ->> 'wait_key' from ticketiq.audit where run_id = %s "
                        "and event = 'agent.run.woken'", run_id)
    assert [k for (k,) in woken if k.startswith("first:")] in ([], [f"first:{run_id}:"
                                                                  + first_group(run_id)])
    return first


def survivor_finishes(stack: Stack, run_id: str) -> None:
    """The victim's lease lapsed (as if an hour later), another process takes the run
    over and ends it and its children."""
    stack.sweep_as_if_later()
    survivor = stack.spawn()
    survivor.read_event("ready")
    try:
        wait_for(f"run {run_id} and its children to end", lambda: all_ended(stack, run_id),
                 60)
    finally:
        survivor.signal(signal.SIGTERM)
        survivor.wait(30)


def first_group(run_id: str) -> str:
    return workflow_step_key(run_id, "delegate", FIRST_EXECUTED)


@pytest.mark.slow
def test_a_workflow_goes_on_from_the_first_child_to_end_and_the_others_run_on(
    stack: Stack,
) -> None:
    proc, run_id = victim(stack, SPEC)

    def parent_waits() -> bool:
        rows = stack.query("select status, wait_key, lease_holder from ticketiq.runs "
                           "where run_id = %s", run_id)
        return bool(rows) and rows[0][0] == "suspended" and rows[0][1].startswith("first:")

    wait_for("the parent to wait for the first child", parent_waits, 30)
    ((wait_key, holder),) = stack.query(
        "select wait_key, lease_holder from ticketiq.runs where run_id = %s", run_id)
    assert wait_key == f"first:{run_id}:{first_group(run_id)}" and holder is None
    wait_for("the run and its children to end", lambda: all_ended(stack, run_id), 60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    check(stack, run_id)
    rows = stack.query("select loss_count from ticketiq.runs where run_id = %s "
                       "or parent_run_id = %s", run_id, run_id)
    assert rows == [(0,)] * 4
    # woken once, by the first end: the others ended after it and woke nothing
    woken = stack.query("select detail ->> 'wait_key' from ticketiq.audit where run_id = %s "
                        "and event = 'agent.run.woken' order by audit_id", run_id)
    assert [k.split(":")[0] for (k,) in woken] == ["timer", "first"]  # its sleep, the first


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "what", "started"), BOUNDARIES,
                         ids=[b[0] for b in BOUNDARIES])
def test_a_first_of_child_workflows_killed_at_a_boundary_keeps_its_first_child(
    stack: Stack, fault: str, what: str, started: tuple[int, int],
) -> None:
    proc, run_id = victim(stack, SPEC, faults=fault)
    assert proc.wait(60) == KILLED, what
    ((children,),) = stack.query("select count(*) from ticketiq.runs "
                                 "where parent_run_id = %s", run_id)
    assert started[0] <= children <= started[1], what
    before = recorded_first(stack, run_id)
    if fault.startswith("before_model"):
        assert before is not None  # the first end was written before the kill
    survivor_finishes(stack, run_id)
    first = check(stack, run_id)
    if before is not None:
        # the parent resumed after the kill is told the child it was told before
        assert first["child_run_id"] == before


# -- in one process: what a step may build ------------------------------------------------


def test_a_first_is_checked_as_it_is_built() -> None:
    ctx = WorkflowContext(run=None, input=None, step_id="a", steps_executed=0,  # type: ignore[arg-type]
                          vars={}, results={})
    one, two = ctx.workflow("child", {"n": 1}), ctx.agent({"q": "?"}, key="ask")
    race = ctx.first(one, two, then="a")
    assert (race.kind, race.then, race.parts) == ("first", "a", (one, two))
    with pytest.raises(InvalidAction, match="first: 1 to 64 child runs, not 0"):
        ctx.first(then="a")
    with pytest.raises(InvalidAction, match="first: 1 to 64 child runs, not 65"):
        ctx.first(*[one] * 65, then="a")
    with pytest.raises(InvalidAction, match="two actions of the key 'x'"):
        ctx.first(ctx.workflow("child", key="x"), ctx.workflow("other", key="x"), then="a")
    with pytest.raises(InvalidAction, match="a child's key is a step id"):
        ctx.workflow("child", key="1")  # a place's: a key never collides with a place
    with pytest.raises(InvalidAction, match="do not race"):
        ctx.first(one, ctx.call("t"), then="a")
    with pytest.raises(InvalidAction, match="two actions of the key 'x'"):
        ctx.all(ctx.agent({}, key="x"), ctx.workflow("child", key="x"), then="a")
    with pytest.raises(InvalidAction, match="a child's key is a step id"):
        ctx.workflow("child", key="not a key")
    assert isinstance(InvalidAction("x"), ValueError)


async def test_a_step_building_a_first_of_no_child_fails_the_run_starting_nothing(
    db_url: str,
) -> None:
    parent = Workflow("parent")
    child = Workflow("child")

    @parent.step(first=True)
    def race(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.first(then="done")

    @parent.step()
    def done(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.end(None)

    @child.step(first=True)
    def only(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.end(None)

    db = await TicketIQ.connect(db_url)
    try:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        run = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), NoModel(), Tools(),
                     workflows=[parent, child])
        outcome = await run.start_and_run(owner="alice", run_as="alice", channel="test",
                                          entry_point=parent.kind, input={})
    finally:
        await db.close()
    assert outcome.status == "failed"
    assert "first: 1 to 64 child runs, not 0" in outcome.reason
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        rows = await (await conn.execute(
            "select count(*) from ticketiq.runs where parent_run_id is not null")).fetchall()
    assert rows == [(0,)]


@pytest.mark.slow
def test_the_first_of_child_agent_runs_killed_after_it_answered(stack: Stack) -> None:
    """A ``first`` of three child agent runs (the scripted agent: a read and a keyed write
    each): the victim is SIGKILLed after the first answered, before the parent goes on;
    the survivor's parent is told that child, and each child ran once."""
    spec = {"loops": 1, "sleep": 0.1, "race_agents": 3, "child_delay": 0.2}
    proc, run_id = victim(stack, spec, faults=f"before_model@{FIRST_STEP + 1}")
    assert proc.wait(60) == KILLED
    before = recorded_first(stack, run_id)
    assert before is not None
    survivor_finishes(stack, run_id)
    ((state, output),) = stack.query(
        "select r.status, a.body -> 'output' -> 'first' from ticketiq.runs as r "
        "join ticketiq.answers as a using (run_id) where r.run_id = %s", run_id)
    assert state == "completed"
    assert output["child_run_id"] == before and output["status"] == "completed"
    assert output["answer"] is not None and output["key"] == str(output["first"])
    children = stack.query("select idempotency_key, status from ticketiq.runs "
                           "where parent_run_id = %s", run_id)
    assert sorted(k for k, _ in children) == sorted(
        workflow_step_key(run_id, f"delegate.{i}", FIRST_EXECUTED) for i in range(3))
    assert {s for _, s in children} == {"completed"}
    assert stack.duplicates() == {}


@pytest.mark.slow
def test_a_parent_that_may_not_wait_keeps_its_lease_and_asks_again(stack: Stack) -> None:
    """A run that may not wait (``may_wait`` false) polls for the first end, holding its
    lease, never suspended on the group; the first end is its result all the same."""
    proc = stack.spawn("--start", "1", "--no-may-wait", "--workflow",
                       json.dumps({**SPEC, "sleep": 0}))
    run_id = proc.read_event("started")["run_id"]
    wait_for("the run and its children to end", lambda: all_ended(stack, run_id), 60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    check(stack, run_id)
    suspended = stack.query("select count(*) from ticketiq.audit where run_id = %s "
                            "and event = 'agent.run.suspended'", run_id)
    assert suspended == [(0,)]


async def test_a_repeat_of_a_suspension_cut_off_by_a_lost_connection_is_recognised(
    db_url: str,
) -> None:
    """``await_first`` is retried after a lost connection as ``suspend_run`` is: a repeat
    finding the epoch raised (TQ002) with the run suspended on its group's key at epoch + 1
    is its first attempt's suspension; on another group's key it is not."""
    db = await TicketIQ.connect(db_url)
    try:
        start = {"holder": "p1", "owner": "o", "run_as": "o", "channel": "t",
                 "entry_point": "ep", "ttl": 60.0}
        parent = await db.start_run(**start, may_wait=True)
        child = await db.start_run(**start, may_wait=False, idempotency_key="k.0",
                                   parent_run_id=parent.run_id)
        args = (parent.run_id, 1, "k", [child.run_id], {})
        end = await db.waits.await_first(*args[:4])
        assert (end.outcome, end.epoch) == ("suspended", 2)
        with pytest.raises(Fenced):
            await db.waits.await_first(*args[:4])  # the repeat, as the server answers it
        assert await recognisers.await_first(db, args, Fenced("x"), None) == [
            {"outcome": "suspended", "child_run_id": None, "place": None, "epoch": 2}]
        assert await recognisers.await_first(
            db, (parent.run_id, 1, "other", [child.run_id], {}), Fenced("x"), None) is None
    finally:
        await db.close()
