"""Workflow step keys and code changes, in one process against a real PostgreSQL.

The specification's third key scope: a workflow step's key comes from the run id, the
step id and the steps the run had executed.  A retry of the step (a transient error
retried within its policy) sends the same key; a loop back to the step sends a new one;
the keys are :func:`~ticketiq_pg.runtime.step_keys.workflow_step_key` of the count the
run's record holds.  A resume whose definition lacks the step the run is at fails the
run with ``agent.run.workflow_step_missing`` and its audit row, never jumping elsewhere.  (The
same key after a SIGKILL and a resume, with the count restored from the record, is
proved against real processes in tests/test_workflows.py.)  Across deploys: a run of a
version its code does not run is handed back, never failed; ``ctx.patched`` takes the new
branch only for a run that has not passed it, and records its answer; a step waiting for
a signal its workflow does not declare fails the run (a rolling deploy of real processes
is tests/test_workflow_deploys.py).
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


def looping(version: str = "1", *, with_after: bool = True,
            compatible: tuple[str, ...] = ()) -> Workflow:
    """add -> bump -> add (loop back) -> bump -> ... three adds, then a sleep and an end."""
    flow = Workflow("looping", version=version, compatible=compatible)

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
    """A run of another version is handed back; one of a version the code says it runs
    but whose step it lacks fails, with the reason, never jumping elsewhere."""
    sent: list[str] = []
    db = await TicketIQ.connect(db_url)
    try:
        old = looping("1")
        first = runner(db, old, keyed_tools(sent, fail_first=0), "proc-a")
        state = await start(first, old)
        assert (await first.run(state)).status == "suspended"

        # version 2 was deployed without the step the sleeping run goes on to: a run of
        # version 1 is not its to run, and is handed back (a process that declared
        # nothing adopts any run; one that declared adopts only what it runs)
        await wake(db, state.run_id)
        adopted = await db.adopt_run("proc-b", 30)
        assert adopted is not None
        second = runner(db, looping("2", with_after=False), keyed_tools(sent, fail_first=0),
                        "proc-b")
        outcome = await second.resume(adopted, second.leases.sent_at())
        assert outcome.status == "released"
        ((status,),) = await _rows(db_url, "select status from ticketiq.runs where run_id = %s",
                                   state.run_id)
        assert status == "claimed"
        # declared compatible with version 1 while it is not: the resume fails the run
        new = looping("2", with_after=False, compatible=("1",))
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


# -- workflows across deploys (issue 42, item 4): ctx.patched, declared signals, versions --

def patched_flow(signals: list[str] | None = None) -> Workflow:
    """``pick`` takes the new branch of the change ``new-tool`` only where ``patched`` says."""
    flow = Workflow("deploys", version="2", compatible=["1"], signals=signals)

    @flow.step(first=True)
    def pick(ctx: WorkflowContext) -> WorkflowNext:
        tool = "tool.new" if ctx.patched("new-tool") else "tool.old"
        return ctx.call(tool, {"again": ctx.patched("new-tool")}, then="pick")

    @flow.step()
    def listen(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.wait_signal("stop", then="pick")

    return flow


def info(entry: str) -> Any:
    from ticketiq_pg.agent import RunInfo

    return RunInfo(uuid.uuid4(), "o", "ra", "web", entry, True, "c")


def run_at(recorded: dict[str, Any] | None) -> Any:
    from ticketiq_pg.runtime.run_state import RunState

    state = RunState(info=info("deploys"), epoch=1, input={})
    if recorded is not None:
        state.counters["workflow"] = {"name": "deploys", "version": "1", "at": "pick",
                                      "executed": 4, "call_id": None, "then": None,
                                      "vars": {}, "results": {}, **recorded}
    return state


async def test_patched_takes_the_new_branch_only_for_runs_that_have_not_passed_it() -> None:
    from ticketiq_pg.runtime import workflow_engine as flows

    flow = patched_flow()
    # a new run meets the check for the first time: the new branch, recorded
    fresh = run_at(None)
    act = await flows.decide(flow, fresh, 1)
    assert (act.tool, act.arguments) == ("tool.new", {"again": True})
    recorded = fresh.counters["workflow"]
    assert (recorded["patches"], recorded["passed"]) == ({"new-tool": True}, ["pick"])
    # a run that ran this step under code without the check (version 1, a loop back)
    old = run_at({"passed": ["pick"]})
    act = await flows.decide(flow, old, 5)
    assert (act.tool, act.arguments) == ("tool.old", {"again": False})
    assert old.counters["workflow"]["patches"] == {"new-tool": False}
    # the recorded answer is given again, on any process, after any resume
    again = run_at({"passed": ["pick"], "patches": {"new-tool": True}})
    assert (await flows.decide(flow, again, 5)).tool == "tool.new"
    # a run recorded before the steps it passed were: it has passed every step
    legacy = run_at({})
    assert (await flows.decide(flow, legacy, 5)).tool == "tool.old"
    # and the version a run started on stays its version
    assert legacy.counters["workflow"]["version"] == "1"
    with pytest.raises(ValueError, match="patch id"):
        WorkflowContext(run=None, input=None, step_id="a", steps_executed=0,  # type: ignore[arg-type]
                        vars={}, results={}).patched("no spaces")


async def test_a_step_waiting_for_a_signal_it_does_not_declare_fails_the_run() -> None:
    from ticketiq_pg.errors import RunFailed
    from ticketiq_pg.runtime import workflow_engine as flows

    flow = patched_flow(signals=["go"])
    state = run_at({"passed": [], "at": "listen"})
    with pytest.raises(RunFailed) as failed:
        await flows.decide(flow, state, 5)
    assert failed.value.event == flows.UNDECLARED_SIGNAL
    assert "'stop'" in failed.value.reason and "['go']" in failed.value.reason
    assert patched_flow(signals=["stop"]).declaration() == {
        "name": "deploys", "version": "2", "kind": "deploys", "runs": ["2", "1"],
        "signals": ["stop"]}


def test_a_run_of_a_version_this_code_does_not_run_is_handed_back() -> None:
    from ticketiq_pg.runtime import workflow_engine as flows

    registry = flows.Workflows([patched_flow()])
    for version in ("1", "2"):
        counters = {"workflow": {"name": "deploys", "version": version}}
        assert registry.for_resume(info("deploys"), {}, counters).version == "2"
    with pytest.raises(flows.NotRunnableHere, match="version '3'"):
        registry.for_resume(info("deploys"), {}, {"workflow": {"name": "deploys",
                                                               "version": "3"}})
    with pytest.raises(ValueError, match="signals"):
        Workflow("x", signals="go")
    with pytest.raises(ValueError, match="compatible"):
        Workflow("x", compatible=[""])
