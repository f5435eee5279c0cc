"""Workflow step keys and code changes, in one process against a real PostgreSQL.

The specification's third key scope: a workflow step's key comes from the run id, the
step id and the steps the run had executed.  A retry of the step (a transient error
retried within its policy) sends the same key; a loop back to the step sends a new one;
the keys are :func:`~ticketiq_pg.runtime.step_keys.workflow_step_key` of the count the
run's record holds.  A resume whose definition lacks the step the run is at fails the
run with ``agent.run.workflow_step_missing`` and its audit row, never jumping elsewhere.  (The
same key after a SIGKILL and a resume, with the count restored from the record, is
proved against real processes in tests/test_workflows.py.)
"""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any

import psycopg
import pytest

from ticketiq_pg import App, CallContext, Model, RetryPolicy, Tools, TransientError, Verdict
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.runtime.step_keys import approval_key, workflow_step_key
from ticketiq_pg.seal import Sealer
from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

SEAL_KEYS = "k1:" + "ab" * 32


class NoModel:
    async def step(self, request: Any) -> Any:
        raise AssertionError("a workflow run never asks the model")


def keyed_tools(sent: list[str], fail_first: int = 1) -> Tools:
    """A keyed write whose vendor dedupes for ever, failing transiently ``fail_first`` times."""
    tools = Tools()
    failures = {"left": fail_first}

    @tools.write("ledger.add", takes_key=True, dedupe_window=math.inf,
                 retry=RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.02))
    async def add(call: CallContext) -> Any:
        assert call.step_key is not None
        sent.append(call.step_key)
        if failures["left"]:
            failures["left"] -= 1
            raise TransientError("the ledger is busy")
        return {"added": call.arguments["n"]}

    return tools


def looping(version: str = "1", *, with_after: bool = True) -> Workflow:
    """add -> bump -> add (loop back) -> bump -> ... three adds, then a sleep and an end."""
    flow = Workflow("looping", version=version)

    @flow.step(first=True)
    def add(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.call("ledger.add", {"n": ctx.vars.get("n", 0)}, then="bump")

    @flow.step()
    def bump(ctx: WorkflowContext) -> WorkflowNext:
        ctx.vars["n"] = ctx.vars.get("n", 0) + 1
        return ctx.goto("add") if ctx.vars["n"] < 3 else ctx.goto("nap")

    @flow.step()
    def nap(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.sleep(0.2, then="after")

    if with_after:
        @flow.step()
        def after(ctx: WorkflowContext) -> WorkflowNext:
            return ctx.end({"n": ctx.vars["n"], "last": ctx.results["add"]})

    return flow


def runner(db: TicketIQ, flow: Workflow, tools: Tools, holder: str) -> Runner:
    leases = LeaseKeeper(db, holder, ttl=30, renew_interval=5, margin=1)
    model: Model = NoModel()
    return Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), model, tools,
                  workflows=[flow])


async def start(run: Runner, flow: Workflow) -> Any:
    return await run.start(owner="alice", run_as="alice", channel="test",
                           entry_point=flow.kind, input={"why": "test"})


async def wake(db: TicketIQ, run_id: uuid.UUID) -> None:
    """Fire the run's timer (once it is due by the database clock)."""
    async def fired() -> bool:
        return bool(await db.waits.fire_due_timers())
    deadline = asyncio.get_running_loop().time() + 10
    while not await fired():
        assert asyncio.get_running_loop().time() < deadline, "the timer never fired"
        await asyncio.sleep(0.05)


async def test_a_retry_sends_the_same_key_and_a_loop_back_a_new_one(db_url: str) -> None:
    sent: list[str] = []
    flow = looping()
    db = await TicketIQ.connect(db_url)
    try:
        first = runner(db, flow, keyed_tools(sent), "proc-a")
        state = await start(first, flow)
        outcome = await first.run(state)
        assert outcome.status == "suspended"  # the sleep: no lease held
        run_id = str(state.run_id)
        # add ran at steps executed 0, 2 and 4 (add, bump, add, bump, add): three keys;
        # the first add failed transiently once and was retried with its key
        expected = [workflow_step_key(run_id, "add", n) for n in (0, 2, 4)]
        assert sent == [expected[0], *expected]
        assert len(set(expected)) == 3

        await wake(db, state.run_id)
        adopted = await db.adopt_run("proc-b", 30)
        assert adopted is not None and adopted.run_id == state.run_id
        second = runner(db, flow, keyed_tools(sent, fail_first=0), "proc-b")
        done = await second.resume(adopted, second.leases.sent_at())
        assert done.status == "completed", done
        assert done.answer["output"] == {"n": 3, "last": {"added": 2}}
        assert len(sent) == 4  # the woken run made no add again
        # the definition's name and version ride in the sealed record; the last
        # checkpoint is the nap's, after six steps executed (add, bump three times)
        ((wf,),) = await _rows(db_url, "select body -> 'counters' -> 'workflow' from "
                               "ticketiq.checkpoints where run_id = %s order by step desc "
                               "limit 1", state.run_id)
        assert (wf["name"], wf["version"], wf["executed"]) == ("looping", "1", 6)
    finally:
        await db.close()


async def test_a_resume_missing_the_step_fails_the_run_with_its_reason(db_url: str) -> None:
    sent: list[str] = []
    db = await TicketIQ.connect(db_url)
    try:
        old = looping("1")
        first = runner(db, old, keyed_tools(sent, fail_first=0), "proc-a")
        state = await start(first, old)
        assert (await first.run(state)).status == "suspended"

        # version 2 was deployed without the step the sleeping run goes on to
        new = looping("2", with_after=False)
        await wake(db, state.run_id)
        adopted = await db.adopt_run("proc-b", 30)
        assert adopted is not None
        second = runner(db, new, keyed_tools(sent, fail_first=0), "proc-b")
        outcome = await second.resume(adopted, second.leases.sent_at())
        assert outcome.status == "failed"
        assert "has no step 'after'" in outcome.reason
        assert "started on version '1'" in outcome.reason
        rows = await _rows(db_url, "select detail ->> 'reason' from ticketiq.audit "
                           "where run_id = %s and event = 'agent.run.workflow_step_missing'",
                           state.run_id)
        assert [r[0] for r in rows] == [outcome.reason]
        assert len(sent) == 3  # nothing was made by the refused resume
    finally:
        await db.close()


async def test_a_workflow_run_is_started_by_its_kind_and_by_a_cron_payload(db_url: str) -> None:
    flow = looping()
    app = App(model=NoModel(), tools=Tools(), workflows=[flow])
    assert app.kinds[flow.kind].may_wait and app.kinds[flow.kind].written_ahead
    with pytest.raises(ValueError, match="registered already"):
        app.workflow(looping())
    db = await TicketIQ.connect(db_url)
    try:
        run = runner(db, flow, Tools(), "proc-a")
        from ticketiq_pg.agent import RunInfo

        def info(entry: str) -> RunInfo:
            return RunInfo(uuid.uuid4(), "o", "o", "c", entry, False, "corr")
        assert run.fresh_state(info("looping"), 1, {}).workflow is flow
        assert run.fresh_state(info("cron"), 1, {"workflow": "looping"}).workflow is flow
        assert run.fresh_state(info("cron"), 1, {"workflow": "other"}).workflow is None
        assert run.fresh_state(info("webhook"), 1, {"workflow": "looping"}).workflow is None
        # a workflow run has no default deadline (it may sleep for days)
        assert "deadline_at" not in run.fresh_state(info("looping"), 1, {}).counters
    finally:
        await db.close()


def test_bad_definitions_are_refused() -> None:
    flow = Workflow("ok")
    with pytest.raises(ValueError, match="step id"):
        flow.step("no spaces")
    flow.step("a")(lambda ctx: ctx.end())
    with pytest.raises(ValueError, match="twice"):
        flow.step("a")(lambda ctx: ctx.end())
    with pytest.raises(ValueError, match="workflow name"):
        Workflow("bad name")
    ctx = WorkflowContext(run=None, input=None, step_id="a", steps_executed=0,  # type: ignore[arg-type]
                          vars={}, results={})
    with pytest.raises(ValueError, match="seconds"):
        ctx.sleep(-1, then="a")
    with pytest.raises(ValueError, match="arguments"):
        ctx.call("t", [1], then="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        ctx.wait_signal("go", then="a", timeout=-5)


async def _rows(db_url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        cur = await conn.execute(sql, params)
        return await cur.fetchall()


async def test_a_workflow_step_costs_the_statements_of_an_agent_step(db_url: str) -> None:
    """One engine: a workflow's write costs its checkpoint, its in-doubt mark and its
    outcome, as an agent's does; a sleep one wait_run more, which also gives the lease up."""
    sent: list[str] = []
    flow = looping()
    db = await TicketIQ.connect(db_url, group_commit=False)
    try:
        run = runner(db, flow, keyed_tools(sent, fail_first=0), "proc-a")
        state = await start(run, flow)
        assert (await run.run(state)).status == "suspended"
        counts = {k: v for k, v in db.statements.items() if v}
        assert {k: counts.get(k) for k in ("write_checkpoint", "mark_in_doubt",
                                           "record_outcome", "wait_run")} == {
            "write_checkpoint": 4, "mark_in_doubt": 3, "record_outcome": 3, "wait_run": 1}
    finally:
        await db.close()


class HoldAdds:
    """Gates that hold every ledger.add for a person's approval."""

    async def check_run(self, run: Any) -> Verdict:
        return Verdict.allow()

    async def check_call(self, run: Any, call: Any, classification: str) -> Verdict:
        if call.tool == "ledger.add":
            return Verdict.hold("a person approves each add")
        return Verdict.allow()


async def test_a_workflow_step_held_for_a_person_waits_without_a_lease(db_url: str) -> None:
    """Wait for a person: a gate's hold files the approval, the run gives its lease up,
    the decision wakes it on another process, and the approved call is keyed by its
    approval (the specification's third row), sent once."""
    sent: list[str] = []
    flow = Workflow("held")

    @flow.step(first=True)
    def add(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.call("ledger.add", {"n": 1}, then="done")

    @flow.step()
    def done(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.end(ctx.results["add"])

    db = await TicketIQ.connect(db_url)
    try:
        first = runner(db, flow, keyed_tools(sent, fail_first=0), "proc-a")
        first.gates = HoldAdds()
        state = await first.start(owner="alice", run_as="alice", channel="test",
                                  entry_point=flow.kind, input={}, may_wait=True)
        assert (await first.run(state)).status == "suspended"
        ((approval_id, lease),) = await _rows(
            db_url, "select a.approval_id, r.lease_holder from ticketiq.approval_requests as a "
            "join ticketiq.runs as r using (run_id) where a.run_id = %s", state.run_id)
        assert lease is None and sent == []
        await db.waits.decide_approval(approval_id, True, "bob")
        adopted = await db.adopt_run("proc-b", 30)
        assert adopted is not None and adopted.run_id == state.run_id
        second = runner(db, flow, keyed_tools(sent, fail_first=0), "proc-b")
        second.gates = HoldAdds()
        outcome = await second.resume(adopted, second.leases.sent_at())
        assert outcome.status == "completed", outcome
        assert outcome.answer["output"] == {"added": 1}
        assert sent == [approval_key(str(approval_id))]
    finally:
        await db.close()
