"""An error is not a crash: retries within a budget, failures at once with their reason, limits.

In-process runners over a real database and the local vendor service; a model or tool of
the test's own that fails as it is told.  Judged from the database (run status, reason,
loss count, attempts, audit rows) and, for writes, from the vendor service's own record.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from typing import Any

import pytest
from procs import SEAL_KEYS, Stack

from ticketiq_pg import (
    CallContext,
    ModelStep,
    RetryPolicy,
    StepRequest,
    Tool,
    ToolCall,
    Tools,
    TransientError,
)
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner, RunState
from ticketiq_pg.seal import Sealer
from ticketiq_pg.vendors.clients import VendorClients

FAST = RetryPolicy(attempts=4, first_delay=0.01, max_delay=0.05, timeout=5)
START = {"owner": "alice", "run_as": "alice", "channel": "playground", "entry_point": "test"}


class Flaky:
    """A model whose first ``fail`` asks raise ``error``; then it calls ``calls`` once, ends."""

    def __init__(self, error: BaseException | None = None, fail: int = 0,
                 calls: list[ToolCall] | None = None, steps: int = 2) -> None:
        self.error, self.fail, self.calls, self.steps = error, fail, calls, steps
        self.asks: list[int] = []
        self.seen: list[list[dict[str, Any]]] = []

    async def step(self, request: StepRequest) -> ModelStep:
        self.asks.append(request.step)
        self.seen.append(request.conversation)
        if self.error is not None and len(self.asks) <= self.fail:
            raise self.error
        if request.step < self.steps:
            calls = self.calls if self.calls is not None else [
                ToolCall(f"call_{uuid.uuid4().hex[:12]}", "read", {"n": request.step})]
            return ModelStep(text="", calls=tuple(calls))
        return ModelStep(text="done")


def read_tool(failures: list[BaseException] | None = None) -> Tool:
    queue = list(failures or [])

    async def invoke(ctx: CallContext) -> dict[str, Any]:
        if queue:
            raise queue.pop(0)
        return {"read": ctx.arguments}

    return Tool("read", "read", invoke=invoke)


async def runner_for(stack: Stack, db: TicketIQ, model: Any, tools: Tools, **kw: Any) -> Runner:
    leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
    kw.setdefault("model_retry", FAST)
    kw.setdefault("tool_retry", FAST)
    return Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), model, tools, **kw)


def run_row(stack: Stack, run_id: uuid.UUID) -> tuple[Any, ...]:
    ((row),) = stack.query(
        "select status, loss_count, failure_reason, lease_holder from ticketiq.runs "
        "where run_id = %s", run_id)
    return row


def events(stack: Stack, run_id: uuid.UUID, event: str) -> list[Any]:
    return [r[0] for r in stack.query(
        "select detail from ticketiq.audit where run_id = %s and event = %s order by audit_id",
        run_id, event)]


async def test_a_model_that_fails_transiently_within_its_budget_finishes_with_no_loss(
    stack: Stack,
) -> None:
    model = Flaky(TransientError("429 Too Many Requests", status=429, retry_after=0.01), fail=3)
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([read_tool()]))
        outcome = await runner.start_and_run(**START, input={})
    assert outcome.status == "completed", outcome
    status, losses, reason, _ = run_row(stack, outcome.run_id)
    assert (status, losses, reason) == ("completed", 0, None)
    assert model.asks == [1, 1, 1, 1, 2]
    # counted durably, per step and target
    assert stack.query("select step, target, attempts from ticketiq.attempts "
                       "where run_id = %s", outcome.run_id) == [(1, "model", 3)]


class Hangs(Flaky):
    """A model whose first ask never answers (a hung connection); then as Flaky."""

    async def step(self, request: StepRequest) -> ModelStep:
        if not self.asks:
            self.asks.append(request.step)
            await asyncio.sleep(3600)
        return await super().step(request)


async def test_a_model_that_hangs_is_cut_off_at_its_timeout_and_asked_again(
    stack: Stack,
) -> None:
    model = Hangs()
    policy = RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.05, timeout=0.3)
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([read_tool()]), model_retry=policy)
        outcome = await asyncio.wait_for(runner.start_and_run(**START, input={}), 30)
    assert outcome.status == "completed", outcome
    assert model.asks == [1, 1, 2]
    assert stack.query("select step, target, attempts, last_error from ticketiq.attempts "
                       "where run_id = %s", outcome.run_id) == [(1, "model", 1, "TimeoutError")]


@pytest.mark.parametrize(("error", "fail", "expect"), [
    (TransientError("503 Service Unavailable", status=503), 99, "the model failed 4 times"),
    (ValueError("the prompt is too long"), 1, "the model failed: ValueError"),
    (type("BadRequest", (Exception,), {"status_code": 400})("invalid model"), 1,
     "(HTTP 400)"),
])
async def test_a_model_that_fails_for_good_fails_the_run_at_once_with_its_reason(
    stack: Stack, error: BaseException, fail: int, expect: str,
) -> None:
    model = Flaky(error, fail=fail)
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([read_tool()]))
        began = time.monotonic()
        outcome = await runner.start_and_run(**START, input={})
        took = time.monotonic() - began
    assert outcome.status == "failed"
    assert expect in outcome.reason
    status, losses, reason, holder = run_row(stack, outcome.run_id)
    # failed in one statement: no loss counted, the lease given up, the reason kept
    assert (status, losses, holder) == ("failed", 0, None)
    assert expect in reason
    assert [d.get("reason") for d in events(stack, outcome.run_id, "agent.run.failed")] == [
        reason]
    assert took < 5.0  # never after a lease period (8 s) or a sweep


async def test_a_read_is_tried_again_and_the_model_sees_its_real_result(stack: Stack) -> None:
    model = Flaky()
    tool = read_tool([TimeoutError(), ConnectionResetError("peer reset")])
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([tool]))
        outcome = await runner.start_and_run(**START, input={})
    assert outcome.status == "completed"
    assert model.seen[-1][-1]["content"] == {"read": {"n": 1}}
    ((target, attempts),) = stack.query(
        "select target, attempts from ticketiq.attempts where run_id = %s", outcome.run_id)
    assert target.startswith("call_") and attempts == 2


def comment_tool(vendors: VendorClients, refuse_first: bool = False) -> Tool:
    """A Jira comment: no dedupe, no reader; with ``refuse_first``, a 429 before it is sent."""
    refused: list[bool] = []

    async def invoke(ctx: CallContext) -> Any:
        if refuse_first and not refused:
            refused.append(True)
            raise TransientError("429 Too Many Requests", status=429, retry_after=0.01)
        return await vendors.jira.add_comment(ctx.arguments["issue_key"], ctx.arguments["text"],
                                              step_key=ctx.step_key)

    return Tool("jira.comment", "write", invoke=invoke)


def incident_tool(vendors: VendorClients) -> Tool:
    """An incident.io create: keyed, deduped for ever, so a resend is safe."""

    async def invoke(ctx: CallContext) -> Any:
        return await vendors.incidentio.create_incident(ctx.arguments["name"], None,
                                                        ctx.step_key or "")

    return Tool("jira.comment", "write", invoke=invoke, takes_key=True, dedupe_window=math.inf)


@pytest.mark.parametrize(("fault", "route", "vendor", "landed", "told"), [
    # applied, then the connection dropped: unknown, and not sent again
    ("drop_after_accept", "comment", "jira", 1, "unknown"),
    # a 503: not known to be unapplied, so not sent again either
    ("fail", "comment", "jira", 0, "unknown"),
    # a 429 says it was not applied: sent again, whatever the route
    (None, "comment_429", "jira", 1, None),
    # a keyed route its vendor dedupes for ever is sent again with the same key
    ("drop_after_accept", "incident", "incidentio", 1, None),
])
async def test_a_changing_call_is_tried_again_only_where_a_resend_is_safe(
    stack: Stack, fault: str | None, route: str, vendor: str, landed: int, told: str | None,
) -> None:
    if fault is not None:
        stack.vendor.fault(vendor, fault, method="POST", count=1)
    call = ToolCall("call_c0ffee01", "jira.comment", {"issue_key": "OPS-7", "text": "hello",
                                                      "name": "db down"})
    model = Flaky(calls=[call])
    async with VendorClients.local(stack.vendor.base_url, timeout=5.0) as vendors:
        tool = (incident_tool(vendors) if route == "incident"
                else comment_tool(vendors, refuse_first=route == "comment_429"))
        async with await TicketIQ.connect(stack.db_url) as db:
            runner = await runner_for(stack, db, model, Tools([tool]))
            result = await runner.start_and_run(**START, input={})
    assert result.status == "completed", result
    # counted where it lands: what the vendor applied, whatever key it carried
    created = [r for r in stack.vendor.requests(vendor) if r["effect"] == "created"]
    assert len(created) == landed, stack.vendor.requests(vendor)
    content = model.seen[-1][-1]["content"]
    if told is None:
        assert "error" not in content, content
    else:
        assert content["outcome"] == told and content["sent_again"] is False, content
    # the outcome was recorded as the call returned, before the next model step
    ((state,),) = stack.query("select state from ticketiq.calls where run_id = %s",
                              result.run_id)
    assert state in ("done", "settled")


async def test_a_malformed_model_answer_fails_the_run_at_once(stack: Stack) -> None:
    model = Flaky(calls=[ToolCall("x" * 300, "read", {})])
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([read_tool()]))
        outcome = await runner.start_and_run(**START, input={})
    assert outcome.status == "failed" and "malformed" in outcome.reason
    assert run_row(stack, outcome.run_id)[:2] == ("failed", 0)
    assert stack.query("select count(*) from ticketiq.checkpoints where run_id = %s",
                       outcome.run_id) == [(0,)]


async def test_a_tool_result_that_is_not_json_fails_the_run_with_that_reason(
    stack: Stack,
) -> None:
    async def invoke(ctx: CallContext) -> Any:
        return {"when": object()}

    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, Flaky(), Tools([Tool("read", "read",
                                                                  invoke=invoke)]))
        outcome = await runner.start_and_run(**START, input={})
    assert outcome.status == "failed" and "not JSON" in outcome.reason


async def test_a_looping_model_stops_at_its_step_limit(stack: Stack) -> None:
    model = Flaky(steps=10_000)
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([read_tool()]), max_steps=5)
        outcome = await runner.start_and_run(**START, input={})
        per_run = await runner.start_and_run(**START, input={}, max_steps=2)
    assert outcome.status == "failed" and "limit of 5 model steps" in outcome.reason
    assert max(model.asks) == 5
    assert per_run.status == "failed" and "limit of 2 model steps" in per_run.reason
    assert events(stack, outcome.run_id, "agent.run.limit_reached")


async def test_a_run_resumed_before_its_first_step_keeps_the_engines_limits(
    stack: Stack,
) -> None:
    """A run released (or lost) before its first checkpoint, as a ``ctx.first`` child is
    released at once, is resumed with the engine's step limit and deadline: before, its
    counters held neither, and a looping model was asked until the default of 50."""
    model = Flaky(steps=10_000)
    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, model, Tools([read_tool()]), max_steps=4)
        state = await runner.start(**START, input={})
        assert isinstance(state, RunState)
        await db.release_run(state.run_id, state.epoch, "shutdown", {})
        adopted = await db.adopt_run("proc-a", 30, state.run_id)
        assert adopted is not None
        outcome = await runner.resume(adopted, runner.leases.sent_at())
    assert outcome.status == "failed" and "limit of 4 model steps" in outcome.reason
    assert max(model.asks) == 4
    ((counters,),) = stack.query(
        "select body -> 'counters' from ticketiq.checkpoints where run_id = %s and step = 1",
        state.run_id)
    assert counters["max_steps"] == 4 and counters["deadline_at"] > 0


async def test_a_run_past_its_deadline_is_failed(stack: Stack) -> None:
    class Slow(Flaky):
        async def step(self, request: StepRequest) -> ModelStep:
            await asyncio.sleep(0.3)
            return await super().step(request)

    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, Slow(steps=10_000), Tools([read_tool()]),
                                  deadline=1.0)
        outcome = await runner.start_and_run(**START, input={})
    assert outcome.status == "failed" and "deadline" in outcome.reason


async def test_a_downgraded_guarantee_is_audited_once_per_run(stack: Stack) -> None:
    calls = [ToolCall("call_1", "post", {}), ToolCall("call_abcdef12", "post", {})]
    posted: list[Any] = []

    async def invoke(ctx: CallContext) -> Any:
        posted.append(ctx.step_key)
        return {"ok": True}

    async with await TicketIQ.connect(stack.db_url) as db:
        runner = await runner_for(stack, db, Flaky(calls=calls, steps=3),
                                  Tools([Tool("post", "write", invoke=invoke)]))
        outcome = await runner.start_and_run(**START, input={})
    assert outcome.status == "completed"
    rows = events(stack, outcome.run_id, "agent.run.guarantee_downgraded")
    # a positional call id has no step key; the route has neither resend nor reader
    assert sorted(r["key"] for r in rows) == ["post:no_resend_no_reader", "post:no_step_key"]
    # the positional call got a fresh ad hoc key at each step, never the same twice
    adhoc = [k for k in posted if k.startswith("tiq1-adhoc-")]
    assert len(adhoc) == 2 and len(set(adhoc)) == 2 and None not in posted
