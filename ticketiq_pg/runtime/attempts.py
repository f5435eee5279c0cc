"""Attempts at the model and the tools: limits, retries, outcomes, and what a call can promise.

A model step or a tool call that fails transiently is tried again within its
:class:`~ticketiq_pg.retries.RetryPolicy`, its failed attempts counted in the database
(``record_attempt``) so a crash does not reset them; one that fails for good, or past its
budget, fails the run at once with the error as its reason (a model) or is told to the
model with the outcome it implies (a tool).  A run past its limits fails at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

import psycopg

from ticketiq_pg.agent import CallContext, Model, ModelStep, StepRequest, Tool, is_changing
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import NotOwner, TicketIQError, TransientError
from ticketiq_pg.retries import RetryPolicy, describe, failure_result, not_applied
from ticketiq_pg.runtime import call_fence, malformed, outage
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.run_state import Drained, RunFailed, RunState, StopRequested, Suspended
from ticketiq_pg.vendors import fencing

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The longest provider call id a checkpoint takes.
MAX_CALL_ID = 256


class Attempting:
    """The attempts half of :class:`~ticketiq_pg.runtime.runner.Runner`."""

    db: TicketIQ
    leases: LeaseKeeper
    model: Model
    model_retry: RetryPolicy
    faults: FaultPoints
    tool_retry: RetryPolicy
    _downgrades: set[tuple[uuid.UUID, str]]
    #: Steps in a row with malformed tool arguments that fail a run.
    max_malformed: int = malformed.MAX_MALFORMED

    @staticmethod
    def _within_limits(state: RunState, step_no: int) -> None:
        """Raise RunFailed when the run may not ask for step ``step_no``."""
        max_steps = state.counters.get("max_steps")
        if isinstance(max_steps, int) and step_no > max_steps:
            raise RunFailed(f"the run reached its limit of {max_steps} model steps",
                            "agent.run.limit_reached")
        deadline_at = state.counters.get("deadline_at")
        if isinstance(deadline_at, int | float) and time.time() >= deadline_at:
            raise RunFailed("the run passed its deadline", "agent.run.limit_reached")

    def _context(
        self, state: RunState, step_no: int, call: dict[str, Any], classification: str,
        resumed: bool, approval_id: Any = None,
    ) -> CallContext:
        # An approved call is keyed by its approval, however often it is sent.
        step_key = keys.approval_key(str(approval_id)) if approval_id else call.get("step_key")
        if step_key is None and is_changing(classification):
            # A positional call id gives no stable key: a fresh one per send, so a vendor
            # that wants a key gets one; such a call is never resent nor read back.
            step_key = keys.adhoc_key()
        return CallContext(
            run=state.info,
            step=step_no,
            call_id=call["call_id"],
            tool=call["tool"],
            arguments=call["arguments"],
            classification=classification,
            step_key=step_key,
            resumed=resumed,
        )

    async def _ask_model(self, state: RunState, step_no: int) -> ModelStep:
        """One model step, tried again while it fails transiently within the budget."""
        policy = self.model_retry
        failed = 0
        first_failure: float | None = None
        self.faults.reach("before_model", step_no)
        while True:
            await self.leases.ready(state.run_id, state.epoch)  # the model is a call too
            request = StepRequest(
                run_id=state.run_id,
                step=step_no,
                # A copy of the list: the model reads it, it must not change it.
                conversation=list(state.conversation),
                input=state.input,
            )
            try:
                answer = await _bounded(self.model.step(request), policy.timeout)
            except (NotOwner, Drained, Suspended, StopRequested, RunFailed):
                raise
            except Exception as exc:  # noqa: BLE001 - judged below: transient or not
                reason = describe(exc)
                if not policy.transient(exc):
                    raise RunFailed(f"the model failed: {reason}") from exc
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                # Recorded with the provider's status first, for `ticketiq-pg status`.
                failed = await self._count_failure(state, step_no, "model",
                                                   outage.recorded_reason(exc, reason), failed)
                wait = policy.delay(failed, exc, elapsed=now - first_failure)
                if wait is None:
                    spent = (f"the model failed {failed} times in "
                             f"{now - first_failure:.0f}s: {reason}")
                    await outage.suspend_if_opted_in(self, state, step_no, spent)
                    raise RunFailed(spent) from exc
                log.warning("run %s: model step %s failed (%s); again in %.2fs",
                            state.run_id, step_no, reason, wait)
                await asyncio.sleep(wait)
                continue
            check_answer(answer)
            await malformed.note(self, state, step_no, answer)
            await outage.recovered(self, state)
            return answer

    async def _count_failure(self, state: RunState, step_no: int, target: str, reason: str,
                             failed: int) -> int:
        """Count one failed attempt, durably for a durable run (a crash keeps the count)."""
        if not state.durable:
            return failed + 1
        self.leases.check(state.run_id, state.epoch)
        row = await self.db.record_attempt(state.run_id, state.epoch, step_no, target, reason)
        return row.attempts

    async def _audit_downgrade(self, state: RunState, tool: Tool, call: dict[str, Any],
                               step_key: str | None) -> None:
        """Say once per run which changing calls can only be settled as unknown."""
        if step_key is None:
            key, why = f"{tool.name}:no_step_key", (
                f"call id {call['call_id']!r} is a position, not an identity: no step key")
        elif not tool.resend_safe and tool.read_back is None and not tool.subagent:
            key, why = f"{tool.name}:no_resend_no_reader", (
                "the route neither dedupes long enough to resend nor has a reader")
        else:
            return
        if (state.run_id, key) in self._downgrades:
            return
        self._downgrades.add((state.run_id, key))
        log.warning("run %s: a %s call in doubt would settle as unknown: %s",
                    state.run_id, tool.name, why)
        await self.db.audit_once(state.run_id, state.epoch, "agent.run.guarantee_downgraded",
                                 key, {"tool": tool.name, "reason": why})

    async def _invoke(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """Make the call (retried as :meth:`_call_tool` allows); its result."""
        return (await self._call_tool(state, tool, context))[0]

    async def _call_tool(
        self, state: RunState, tool: Tool, context: CallContext
    ) -> tuple[Any, str]:
        """Make one call, tried again while that is safe; the result and how it ended.

        A read is tried again while it fails transiently; a changing call only where a
        resend is safe (its vendor dedupes on the step key for longer than any retry),
        where the failure says it had no effect (a 4xx, a 429), or after its reader
        found it absent.  Otherwise the failure is the result, with the outcome it
        implies (``not_applied`` or ``unknown``); the model is told and the run goes on.
        """
        if tool.subagent:
            try:
                return await self._delegate(state, tool, context), "made"
            except (NotOwner, Drained, Suspended, psycopg.Error, TicketIQError):
                # The child may be alive: never a final outcome; the run is resumed
                # and asks again by its delegation key.
                raise
            except Exception as exc:  # noqa: BLE001 - the model is told what happened
                return {"error": describe(exc), "outcome": "unknown"}, "unknown"
        # The vendor clients check the lease again as each request goes out, and send the
        # run's epoch as a fencing token (ticketiq_pg.vendors.fencing).
        with fencing.fenced(call_fence.for_call(self.leases, state)):
            return await self._call_tool_fenced(state, tool, context)

    async def _call_tool_fenced(
        self, state: RunState, tool: Tool, context: CallContext
    ) -> tuple[Any, str]:
        policy = tool.retry or self.tool_retry
        changing = is_changing(context.classification)
        failed = 0
        while True:
            assert tool.invoke is not None
            try:
                result = await _bounded(tool.invoke(context), policy.timeout)
            except (NotOwner, Drained, Suspended):
                raise
            except (psycopg.Error, TicketIQError) as exc:
                if isinstance(exc, TransientError):
                    error: BaseException = exc
                else:
                    return {"error": "the database failed during the call",
                            "outcome": "unknown"}, "unknown"
            except Exception as exc:  # noqa: BLE001 - judged below
                if fencing.refused(exc):  # a newer attempt of the run called the vendor
                    return await call_fence.settle_fenced(self, state, context, exc)
                error = exc
            else:
                _json_result(tool, result)
                return result, "made"
            transient = policy.transient(error)
            retry = transient and (not changing or tool.resend_safe or not_applied(error))
            if transient and not retry and tool.read_back is not None:
                found = await self._read_back(state, tool, context)
                if found is not None and found.found:
                    return found.outcome, "read_back"
                retry = found is not None  # absent at its vendor: a resend is safe
            if retry:
                reason = describe(error)
                failed = await self._count_failure(state, context.step, context.call_id,
                                                   reason, failed)
                wait = policy.delay(failed, error)
                if wait is not None:
                    log.warning("run %s: call %s (%s) failed (%s); again in %.2fs",
                                state.run_id, context.call_id, tool.name, reason, wait)
                    await asyncio.sleep(wait)
                    await self.leases.ready(state.run_id, state.epoch)
                    continue
            return failure_result(error, changing)

    async def _read_back(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """The reader's finding, or None when the reader failed too."""
        assert tool.read_back is not None
        await self.leases.ready(state.run_id, state.epoch)
        try:
            with fencing.fenced(call_fence.for_call(self.leases, state)):
                return await tool.read_back(context)
        except NotOwner:
            raise
        except Exception as exc:  # noqa: BLE001 - then the outcome stays unknown
            log.warning("read back of %s failed: %s", context.call_id, exc)
            return None


async def _bounded(awaitable: Awaitable[T], seconds: float | None) -> T:
    if seconds is None:
        return await awaitable
    # asyncio.timeout runs the call in this task; wait_for (3.11) made a task a call.
    async with asyncio.timeout(seconds):
        return await awaitable


def _json_result(tool: Tool, result: Any) -> None:
    """A result the next checkpoint cannot hold fails the run now, not at every resume."""
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise RunFailed(f"tool {tool.name} returned a result that is not JSON: {exc}") from exc


def check_answer(answer: Any) -> None:
    """Refuse a model answer the checkpoint could not hold: the run fails now, with why."""
    if not isinstance(answer, ModelStep):
        raise RunFailed(f"the model answered {type(answer).__name__}, not a ModelStep")
    seen: set[str] = set()
    for call in answer.calls:
        call_id = getattr(call, "call_id", None)
        if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_CALL_ID:
            raise RunFailed(f"the model's answer is malformed: call id {call_id!r} is not a "
                            f"non-empty string of at most {MAX_CALL_ID} characters")
        if call_id in seen:
            raise RunFailed(f"the model's answer is malformed: call id {call_id!r} twice")
        seen.add(call_id)
        if not isinstance(call.tool, str) or not call.tool:
            raise RunFailed(f"the model's answer is malformed: call {call_id!r} names no tool")
        if not isinstance(call.arguments, dict):
            raise RunFailed(f"the model's answer is malformed: the arguments of call "
                            f"{call_id!r} are not a JSON object")
