"""The call executor: one call of a step through the gates, its in-doubt mark, the fenced
attempt and its outcome row; and the settlement of the calls a lost attempt left.

A step's calls (:meth:`CallExecutor.make`), a resume's settlement of the last step
(:meth:`CallExecutor.settle`) and, through :meth:`CallExecutor.invoke`, a person's ad hoc
call all go through this one part, so a gate, a mark or a fence is written once:

1. the gates see the stricter of the recorded and the current classification (I7);
2. a changing call of a durable run is marked in doubt before it is made (I5);
3. the call goes out fenced by the run's lease and epoch
   (:mod:`ticketiq_pg.runtime.call_fence`), tried again only while that is safe;
4. a changing call's outcome is recorded, sealed, as it returns.

A call in doubt on a resume is never blindly sent again (I6): the classification its mark
recorded decides (I7), and the tool's route says how it is settled
(:meth:`CallExecutor.settle_in_doubt`).  Every settlement is recorded as it is decided on
the resume's audit row (I14).  Waiting calls (approvals, child runs, a workflow's sleep or
signal) are the :class:`~ticketiq_pg.runtime.waits.Waits` part below this one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg

from ticketiq_pg.agent import CallContext, Tool, ToolCall, Verdict, is_changing
from ticketiq_pg.errors import NotOwner, TicketIQError, TransientError
from ticketiq_pg.retries import (
    RetryPolicy,
    describe,
    failure_result,
    not_applied,
    retry_after,
    status_of,
)
from ticketiq_pg.runtime import call_fence, call_rows
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.bounds import bounded
from ticketiq_pg.runtime.run_state import (
    UNKNOWN_OUTCOME,
    Drained,
    RunFailed,
    RunState,
    StopRequested,
    Suspended,
    carry_results,
)
from ticketiq_pg.runtime.setup import EngineSetup
from ticketiq_pg.runtime.waits import Waits
from ticketiq_pg.vendors import fencing

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Judged:
    """A call the gates let through, with its tool: made alone or with others."""

    tool: Tool
    verdict: Verdict
    #: The classification the checkpoint recorded, and the tool's now.
    recorded: str
    current: str

    @property
    def alone(self) -> bool:
        """Made by itself, after the calls before it: held for a person, or a tool that
        must not overlap.  Child runs go together: each has its own delegation key."""
        return self.verdict.needs_approval or self.tool.serial


#: The downgrade keys (``tool:reason``) this process has logged as a warning.
_WARNED: set[str] = set()
_NO_RESEND_NO_READER = "the route neither dedupes long enough to resend nor has a reader"


def warn_downgraded(tools: Iterable[Tool]) -> list[str]:
    """Log, once per process and tool, each changing tool whose call in doubt could only
    settle as unknown (an app's start says it once; its calls then log at debug level).
    The names of the tools it warned about."""
    warned = []
    for tool in tools:
        key = f"{tool.name}:no_resend_no_reader"
        if (not is_changing(tool.classification) or tool.resend_safe
                or tool.read_back is not None or tool.subagent or key in _WARNED):
            continue
        _WARNED.add(key)
        warned.append(tool.name)
        log.warning("tool %s: a call in doubt would settle as unknown: %s",
                    tool.name, _NO_RESEND_NO_READER)
    return warned


class CallExecutor:
    """Makes and settles a run's calls (one per process, shared by its runs)."""

    def __init__(self, setup: EngineSetup, waits: Waits) -> None:
        self.setup = setup
        self.waits = waits
        #: (run, key) pairs whose downgraded guarantee this process has audited.
        self._downgrades: set[tuple[uuid.UUID, str]] = set()

    # -- a step's calls -----------------------------------------------------

    async def make_all(
        self, state: RunState, step_no: int, calls: list[dict[str, Any]]
    ) -> list[Any]:
        """Make a step's calls, at once where they may overlap; their results, in order.

        Each call passes the gates first, in order.  The calls the gates let through
        with no hold, of tools that may overlap (not ``serial``, not a sub-agent), are
        made together, at most :attr:`EngineSetup.calls_at_once` at a time: their
        changing calls are marked in doubt in one statement just before they are all
        sent, and each outcome is recorded as it lands.  A call held for approval, a
        serial tool's, a child run's or a workflow's wait is made alone, after the
        calls before it.  ``state.made`` lists what was made as it is.
        """
        state.made = []
        if len(calls) == 1:  # the common step: nothing to make together
            outcome = await self.make(state, step_no, calls[0])
            state.made.append((calls[0], *outcome))
            return [outcome[0]]
        results: list[Any] = [None] * len(calls)
        together = self.setup.calls_at_once > 1
        batch: list[tuple[int, dict[str, Any], _Judged]] = []
        for i, call in enumerate(calls):
            if state.workflow is not None and call["tool"] in flows.WAITS:
                await self._make_together(state, step_no, batch, results)
                batch = []
                outcome = (await self.waits.workflow_wait(state, step_no, call), "made")
            else:
                judged = await self._judge(state, call)
                if (isinstance(judged, _Judged) and not judged.alone and together
                        and not (judged.tool.vendor and may_suspend(state))):
                    batch.append((i, call, judged))
                    continue
                if isinstance(judged, _Judged):
                    await self._make_together(state, step_no, batch, results)
                    batch = []
                    outcome = await self._make_judged(state, step_no, call, judged, False)
                else:
                    outcome = judged
            results[i] = outcome[0]
            state.made.append((call, *outcome))
        await self._make_together(state, step_no, batch, results)
        return results

    async def _make_together(
        self, state: RunState, step_no: int, batch: list[tuple[int, dict[str, Any], _Judged]],
        results: list[Any],
    ) -> None:
        """Make the calls of ``batch`` at once: marked together, sent together."""
        if len(batch) <= 1:
            for i, call, judged in batch:
                outcome = await self._make_judged(state, step_no, call, judged, False)
                results[i] = outcome[0]
                state.made.append((call, *outcome))
            return
        setup = self.setup
        marked: dict[str, str] = {}
        to_mark = [(call, judged.current) for _, call, judged in batch
                   if state.durable and (is_changing(judged.recorded)
                                         or is_changing(judged.current))]
        if to_mark:
            setup.leases.check(state.run_id, state.epoch)
            marks = await call_rows.mark_many(setup.db, setup.sealer, state, step_no, to_mark)
            setup.faults.reach("after_mark", step_no)
            if any(mark.stop_requested for mark in marks):
                raise StopRequested
            marked = {mark.call_id: mark.marked_classification for mark in marks}
        room = asyncio.Semaphore(setup.calls_at_once)

        async def send(call: dict[str, Any], judged: _Judged) -> tuple[Any, str]:
            async with room:
                return await self._send(state, step_no, call, judged.tool,
                                        marked.get(call["call_id"], judged.recorded), False)

        outcomes = await asyncio.gather(*(send(call, judged) for _, call, judged in batch),
                                        return_exceptions=True)
        failed: BaseException | None = None
        for (i, call, _), outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                failed = failed or outcome
                continue
            results[i] = outcome[0]
            state.made.append((call, outcome[0], "made"))
        if failed is not None:
            # every call ended (made, or failed) before the first failure goes on up
            raise failed

    async def make(
        self, state: RunState, step_no: int, call: dict[str, Any], resumed: bool = False
    ) -> tuple[Any, str]:
        """Route one call through the gates, mark it if it changes something, make it.

        Returns the result and how it was obtained: made, skipped (refused,
        rejected, unknown tool) or, on a resume that found the call's
        approval request, coalesced (still waiting) or read_decision.
        """
        if state.workflow is not None and call["tool"] in flows.WAITS:
            return await self.waits.workflow_wait(state, step_no, call), "made"
        judged = await self._judge(state, call)
        if not isinstance(judged, _Judged):
            return judged
        return await self._make_judged(state, step_no, call, judged, resumed)

    async def _judge(self, state: RunState, call: dict[str, Any]) -> _Judged | tuple[Any, str]:
        """The gates' verdict on a call and its tool, or the result of a call not made."""
        setup = self.setup
        tool_call = ToolCall(call["call_id"], call["tool"], call["arguments"])
        recorded = call["classification"]
        tool = setup.tools.get(call["tool"])
        current = tool.classification if tool else "write"
        # The gate sees the stricter of the two: a write stays a write (I7), and a call
        # recorded as a read whose tool is a write by now is judged as a write.
        judged = recorded if is_changing(recorded) or not is_changing(current) else current
        verdict = await setup.gates.check_call(state.info, tool_call, judged)
        if not verdict.allowed:
            return {"error": "refused", "reason": verdict.reason}, "skipped"
        if tool is None:
            return {"error": f"unknown tool {call['tool']}"}, "skipped"
        invalid = call.get("malformed") or tool.validate(call["arguments"])
        if invalid is not None:
            # Against the tool's schema: told back to the model, never sent to the vendor.
            return {"error": f"invalid arguments: {invalid}"}, "skipped"
        if verdict.needs_approval and not is_changing(judged):
            # Reads are never held (nothing to file them against): a hold refuses it.
            return {"error": "refused", "reason": verdict.reason}, "skipped"
        return _Judged(tool, verdict, recorded, current)

    async def _make_judged(
        self, state: RunState, step_no: int, call: dict[str, Any], judged: _Judged,
        resumed: bool,
    ) -> tuple[Any, str]:
        """Make one call the gates let through: its approval, its mark, the call."""
        setup = self.setup
        verdict, recorded, current = judged.verdict, judged.recorded, judged.current
        how = "made"
        approval_id = None
        if verdict.needs_approval and state.durable and not is_changing(recorded):
            # Recorded as a read, a write by now: its mark gives it the row its approval
            # request is filed on (mark_in_doubt creates it from the checkpoint).
            setup.leases.check(state.run_id, state.epoch)
            await call_rows.mark(setup.db, setup.sealer, state, step_no, call, current)
        if verdict.needs_approval:
            approval = await self.waits.await_approval(state, step_no, call, verdict.reason)
            if approval.coalesced:
                how = "coalesced" if approval.first_state == "waiting" else "read_decision"
            if approval.state != "approved":
                result = {"rejected": True, "approval_id": str(approval.approval_id),
                          "by": approval.decided_by, "reason": approval.reason}
                return result, how if how != "made" else "skipped"
            approval_id = approval.approval_id
        if judged.tool.vendor:
            await self.first_token(state, step_no, call, judged.tool)
        classification = recorded
        if state.durable and (is_changing(recorded) or is_changing(current)):
            setup.leases.check(state.run_id, state.epoch)
            mark = await call_rows.mark(setup.db, setup.sealer, state, step_no, call, current)
            setup.faults.reach("after_mark", step_no)
            if mark.stop_requested:
                raise StopRequested
            classification = mark.marked_classification
        result, _ = await self._send(state, step_no, call, judged.tool, classification,
                                     resumed, approval_id)
        return result, how

    async def _send(
        self, state: RunState, step_no: int, call: dict[str, Any], tool: Tool,
        classification: str, resumed: bool, approval_id: Any = None,
    ) -> tuple[Any, str]:
        """Make a call (marked already, if it changes something) and record its outcome
        as it returns: a crash during the next model step finds the outcome instead of
        a call in doubt."""
        setup = self.setup
        context = self.context(state, step_no, call, classification, resumed, approval_id)
        changing = state.durable and is_changing(classification)
        if changing:
            await self._audit_downgrade(state, tool, call,
                                        context.step_key if approval_id else call.get("step_key"))
        await setup.leases.ready(state.run_id, state.epoch)
        if not changing and setup.live.anyone:
            # A changing call's start and end are durable events (its mark, its outcome
            # row); a read's are told live only.
            setup.live.emit(state.run_id, "call_started", step_no, state.epoch,
                            {"call_id": call["call_id"], "tool": call["tool"],
                             "classification": classification})
        result, ended = await self.call_tool(state, tool, context)
        setup.faults.reach("after_call", step_no)
        if changing and not tool.subagent:
            setup.leases.check(state.run_id, state.epoch)
            await call_rows.record(setup.db, setup.sealer, state, step_no, call, result, ended)
        elif not changing and setup.live.anyone:
            setup.live.emit(state.run_id, "call_settled", step_no, state.epoch,
                            {"call_id": call["call_id"], "tool": call["tool"],
                             "settlement": ended, "outcome": result})
        return result, ended

    async def first_token(
        self, state: RunState, step_no: int, call: dict[str, Any], tool: Tool
    ) -> None:
        """A limited call's first vendor token, taken before the call is marked.

        Of a run that may suspend (written ahead; one that may wait, or a workflow's): a
        wait past :attr:`EngineSetup.vendor_suspend_after` suspends it
        (:meth:`suspend_for`) while its calls are still unmarked, so the attempt its turn
        wakes makes them as new calls, never settles them as in doubt.  The turn keeps
        the call's token (``ticketiq.vendor_turns``): woken, it is granted at once, and a
        step's read made again on the resume, suspended in turn, keeps its own.  A later
        try's token (a retry) is waited for holding the lease: the call may be in doubt.
        """
        if tool.vendor and may_suspend(state) and call["call_id"] not in state.tokens:
            state.tokens[call["call_id"]] = await _RunAttempt(self, state).wait_token(
                tool.vendor, call["call_id"], step_no)

    async def suspend_for(self, state: RunState, step_no: int, vendor: str,
                          call_id: str) -> None:
        """Give the lease up until the run's turn for a token of ``vendor`` (raises
        Suspended); a timer wakes it on whichever process fires it.  A call whose turn
        came already is not suspended again (returns): it waits holding its lease."""
        setup = self.setup
        await self.waits.before_suspend(state, step_no)
        setup.leases.check(state.run_id, state.epoch)
        turn = await setup.db.suspend_for_vendor(vendor, state.run_id, state.epoch, call_id,
                                                 state.info.owner)
        if not turn["suspended"]:
            return
        log.info("run %s suspended for a token of %s until %s", state.run_id, vendor,
                 turn["due_at"])
        raise Suspended(f"waiting for a token of vendor {vendor}")

    @staticmethod
    def context(
        state: RunState, step_no: int, call: dict[str, Any], classification: str,
        resumed: bool, approval_id: Any = None,
    ) -> CallContext:
        """What the tool is handed: the run, the call and the key it is sent with."""
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

    async def _audit_downgrade(self, state: RunState, tool: Tool, call: dict[str, Any],
                               step_key: str | None) -> None:
        """Say once per run which changing calls can only be settled as unknown."""
        if step_key is None:
            key, why = f"{tool.name}:no_step_key", (
                f"call id {call['call_id']!r} is a position, not an identity: no step key")
        elif not tool.resend_safe and tool.read_back is None and not tool.subagent:
            key, why = f"{tool.name}:no_resend_no_reader", _NO_RESEND_NO_READER
        else:
            return
        if (state.run_id, key) in self._downgrades:
            return
        self._downgrades.add((state.run_id, key))
        # Audited once per run; logged as a warning once per process (every run of the
        # app says the same), then at debug level.
        level = logging.DEBUG if key in _WARNED else logging.WARNING
        _WARNED.add(key)
        log.log(level, "run %s: a %s call in doubt would settle as unknown: %s",
                state.run_id, tool.name, why)
        await self.setup.db.audit_once(state.run_id, state.epoch,
                                       "agent.run.guarantee_downgraded", key,
                                       {"tool": tool.name, "reason": why})

    # -- the attempt --------------------------------------------------------

    async def invoke(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """Make the call (retried as :meth:`call_tool` allows); its result."""
        return (await self.call_tool(state, tool, context))[0]

    async def call_tool(
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
                return await self.waits.delegate(state, tool, context), "made"
            except (NotOwner, Drained, Suspended, psycopg.Error, TicketIQError):
                # The child may be alive: never a final outcome; the run is resumed
                # and asks again by its delegation key.
                raise
            except Exception as exc:  # noqa: BLE001 - the model is told what happened
                return {"error": describe(exc), "outcome": "unknown"}, "unknown"
        turn = state.resuming  # a resume awaiting a vendor (its settlement): none to wait for
        if turn is not None:
            turn.pause()
        try:
            # The vendor clients check the lease again as each request goes out, and send
            # the run's epoch as a fencing token (ticketiq_pg.vendors.fencing).
            with fencing.fenced(call_fence.for_call(self.setup.leases, state)):
                result, ended = await attempt(tool, context,
                                              tool.retry or self.setup.tool_retry,
                                              _RunAttempt(self, state))
        finally:
            if turn is not None:
                turn.unpause()
        if ended == "failed":
            return result, "made"  # a read's failure is its result: the model is told
        if ended == "made":
            _json_result(tool, result)
        return result, ended

    async def _read_back(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """The reader's finding, or None when the reader failed too."""
        assert tool.read_back is not None
        await self.setup.leases.ready(state.run_id, state.epoch)
        try:
            # Fenced as any call: the vendor learns the new epoch from the read too.
            with fencing.fenced(call_fence.for_call(self.setup.leases, state)):
                return await tool.read_back(context)
        except NotOwner:
            raise
        except Exception as exc:  # noqa: BLE001 - then the outcome stays unknown
            log.warning("read back of %s failed: %s", context.call_id, exc)
            return None

    # -- a resume's settlement ------------------------------------------------

    async def settle(
        self,
        state: RunState,
        calls: list[dict[str, Any]],
        recorded: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Settle each call the last step left; the results join the conversation.

        Each settlement is recorded as it is decided, on its call and on the
        resume's audit row (I14): a resumer that dies mid-settlement leaves
        the row naming what it settled, and the next resume finds those calls
        settled, not in doubt, so nothing it resent is sent again.
        """
        setup = self.setup
        by_id = {row["call_id"]: row for row in recorded}
        settlements: list[dict[str, Any]] = []
        results: list[Any] = []
        for call in calls:
            row = by_id.get(call["call_id"], {})
            db_state = row.get("state", "pending")
            if db_state in ("done", "settled"):
                result, how = row.get("outcome"), row.get("settlement") or "made"
                if how == "made":
                    # made by the lost attempt, its outcome recorded: not sent again, and
                    # the audit must not read as if it were
                    how = "already_made"
            elif db_state == "in_doubt":
                marked = row.get("marked_classification") or call["classification"]
                # keyed by its approval only if it was filed before the mark (sent so)
                approval = row.get("approval_id") if row.get("approval_keyed", True) else None
                result, how = await self.settle_in_doubt(state, call, marked, approval)
            else:
                result, how = await self.make(state, state.step, call, resumed=True)
                if how == "made" and not is_changing(call["classification"]):
                    how = "redone"
            if db_state in ("pending", "in_doubt") and call_rows.has_open_row(state, call):
                # sealed as it is settled: record_resume then leaves the row as it is
                await call_rows.record(setup.db, setup.sealer, state, state.step, call,
                                       result, how)
            results.append(result)
            settlement = {"call_id": call["call_id"], "settlement": how, "outcome": result}
            setup.leases.check(state.run_id, state.epoch)
            await setup.db.record_resume(state.run_id, state.epoch, [settlement])
            settlements.append(settlement)
            setup.faults.reach("mid_settlement", state.step)
        carry_results(state, calls, results)
        return settlements

    async def settle_in_doubt(
        self, state: RunState, call: dict[str, Any], marked: str, approval_id: Any = None
    ) -> tuple[Any, str]:
        """A changing call that may or may not have reached its vendor: never resend blindly.

        The classification its mark recorded decides (I7); the tool's route
        decides which row of the table applies: a delegation asks again by
        its delegation key; a keyed write whose vendor dedupes for longer
        than a resume is sent again with the same key (an approved call's
        key is its approval's); otherwise the outcome is read back where a
        reader exists, or reported unknown and not sent again.
        """
        setup = self.setup
        tool = setup.tools.get(call["tool"])
        tool_call = ToolCall(call["call_id"], call["tool"], call["arguments"])
        verdict = await setup.gates.check_call(state.info, tool_call, marked)
        # The key it was sent with: its approval's if one was filed before its mark,
        # else its step key.  A call with neither (a positional call id) was sent with
        # an ad hoc key nobody can find again: never resent, never read back.
        keyed = bool(approval_id or call.get("step_key"))
        context = self.context(state, state.step, call, marked, True, approval_id)
        refused = None if verdict.allowed else verdict.reason
        if verdict.allowed and tool is not None and keyed:
            resend = ("asked_again" if tool.subagent and marked in (
                "delegation", "subagent_with_tools") else
                "resent_same_key" if tool.resend_safe else None)
            if resend is not None and verdict.needs_approval:
                # Held as the gate stands now: nothing is sent before a person approves
                # (the request coalesces with one already filed for the call).
                decision = await self.waits.await_approval(state, state.step, call,
                                                           verdict.reason)
                if decision.state != "approved":
                    resend, refused = None, f"rejected by {decision.decided_by}: {decision.reason}"
            if resend == "asked_again":
                await setup.leases.ready(state.run_id, state.epoch)
                return await self.invoke(state, tool, context), "asked_again"
            if resend == "resent_same_key":
                await setup.leases.ready(state.run_id, state.epoch)
                result = await self.invoke(state, tool, context)
                if isinstance(result, dict) and result.get("outcome") == "unknown":
                    result["sent_again"] = True
                return result, "resent_same_key"
        if tool is not None and tool.read_back is not None and keyed:
            found = await self._read_back(state, tool, context)
            if found is not None:
                if found.found:
                    return found.outcome, "read_back"
                return {
                    "outcome": "not_found",
                    "sent_again": False,
                    "message": "The write was not found at its vendor on read back; "
                    "it was not sent again.",
                }, "read_back"
        result = dict(UNKNOWN_OUTCOME)
        if refused is not None:
            result["refused_on_resume"] = refused
        return result, "unknown"


def may_suspend(state: RunState) -> bool:
    """Whether a wait for a vendor's token may suspend the run: written ahead, and one
    that may wait (its entry kind's ``may_wait``) or a workflow's.  Its limited calls are
    made one after another, each token taken just before its call is marked and sent:
    tokens taken for calls sent together would send the first one's late, bunched with
    the last one's, faster than the rate."""
    return state.durable and (state.info.may_wait or state.workflow is not None)


def _json_result(tool: Tool, result: Any) -> None:
    """A result the next checkpoint cannot hold fails the run now, not at every resume."""
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise RunFailed(f"tool {tool.name} returned a result that is not JSON: {exc}") from exc


class _RunAttempt:
    """What a durable run lends :func:`attempt`: its lease, its failure count, its fence."""

    __slots__ = ("executor", "state")
    resend = True

    def __init__(self, executor: CallExecutor, state: RunState) -> None:
        self.executor = executor
        self.state = state

    async def ready(self) -> None:
        await self.executor.setup.leases.ready(self.state.run_id, self.state.epoch)

    async def count(self, context: CallContext, reason: str, failed: int) -> int:
        return await self.executor.setup.count_failure(
            self.state, context.step, context.call_id, reason, failed)

    async def read_back(self, tool: Tool, context: CallContext) -> Any:
        return await self.executor._read_back(self.state, tool, context)

    async def fenced(self, context: CallContext, exc: BaseException) -> tuple[Any, str]:
        setup = self.executor.setup
        return await call_fence.settle_fenced(setup.leases, setup.db, self.state, context, exc)

    async def take(self, vendor: str, context: CallContext) -> bool:
        """A try's token of the vendor's limit: the first try's, when the call took it
        before its mark; else waited for holding the lease."""
        taken = self.state.tokens.pop(context.call_id, None)
        if taken is not None:
            return taken
        return await self.wait_token(vendor, context.call_id)

    async def wait_token(self, vendor: str, call_id: str, step_no: int | None = None) -> bool:
        """Wait for a token of the vendor's limit (the lease checked while waiting: a
        wait is neither a failure nor a retry); whether the call counts in flight.  With
        ``step_no`` (a first token, before the mark) a wait that would pass the
        threshold suspends the run instead."""
        setup, state = self.executor.setup, self.state
        waited = 0.0
        while True:
            setup.leases.check(state.run_id, state.epoch)
            granted, wait, counted = await setup.db.take_vendor_token(
                vendor, state.run_id, state.epoch, call_id, state.info.owner)
            if granted:
                return counted
            if step_no is not None and waited + wait > setup.vendor_suspend_after:
                await self.executor.suspend_for(state, step_no, vendor, call_id)
            # Short sleeps: the lease is checked, and a token freed early is taken soon.
            pause = min(max(wait, 0.005), 1.0)
            await setup.poll(state, pause)
            waited += pause
            await self.ready()

    async def give(self, context: CallContext) -> None:
        await self.executor.setup.db.give_vendor_token(self.state.run_id, context.call_id)

    async def slow(self, vendor: str, exc: BaseException) -> None:
        """The vendor answered 429 or 503: every process waits what it asked (1 s when
        it did not say)."""
        seconds = min(max(retry_after(exc) or 1.0, 0.0), 3600.0)
        await self.executor.setup.db.slow_vendor(vendor, self.state.info.owner, seconds)


async def attempt(
    tool: Tool, context: CallContext, policy: RetryPolicy, run: _RunAttempt | None = None
) -> tuple[Any, str]:
    """One call of ``tool``, tried again while that is safe: its result and how it ended.

    ``made`` (it answered), ``failed`` (a read that failed for good: the failure is the
    result), ``read_back`` (a changing call whose failure left it unknown, found at its
    vendor), ``skipped`` (a changing call that had no effect) or ``unknown``.

    A read is tried again while it fails transiently.  Of a run (``run``), a changing
    call is tried again only where a resend is safe: its vendor dedupes on the step key
    for longer than any retry, the failure says it had no effect (a 4xx, a 429), or its
    reader found it absent; each failure is counted durably and the lease is checked
    before the next try.  Without a run (a person's ad hoc call, the inspector), a
    changing call is sent once, whatever happens: a reader's finding or the failure
    says how it ended.
    """
    changing = is_changing(context.classification)
    failed = 0
    limited = tool.vendor if run is not None else None
    while True:
        assert tool.invoke is not None
        counted = await run.take(limited, context) if limited and run is not None else False
        try:
            return await bounded(tool.invoke(context), policy.timeout), "made"
        except (NotOwner, Drained, Suspended):
            raise
        except (psycopg.Error, TicketIQError) as exc:
            if not isinstance(exc, TransientError):
                return {"error": "the database failed during the call",
                        "outcome": "unknown"}, "unknown"
            error: BaseException = exc
        except Exception as exc:  # noqa: BLE001 - judged below
            if run is not None and fencing.refused(exc):
                # a newer attempt of the run called the vendor
                return await run.fenced(context, exc)
            error = exc
        finally:
            if counted and run is not None:
                await run.give(context)
        if limited and run is not None and status_of(error) in (429, 503):
            await run.slow(limited, error)
        transient = policy.transient(error)
        resend = run is not None and (tool.resend_safe or not_applied(error))
        retry = transient and (not changing or resend)
        if changing and not retry and tool.read_back is not None and not not_applied(
                error) and (transient or run is None):
            found = await _read_back(tool, context, run)
            if isinstance(found, str):
                result = failure_result(error, True)[0]
                result["read_back_failed"] = found
                return result, "unknown"
            if found is not None and found.found:
                return found.outcome, "read_back"
            if found is not None and run is None:
                result = failure_result(error, True)[0]
                result.update(outcome="not_applied", read_back="absent")
                return result, "skipped"
            retry = found is not None  # absent at its vendor: a resend is safe
        if retry:
            reason = describe(error)
            failed = failed + 1 if run is None else await run.count(context, reason, failed)
            wait = policy.delay(failed, error)
            if wait is not None:
                log.warning("run %s: call %s (%s) failed (%s); again in %.2fs",
                            context.run.run_id, context.call_id, tool.name, reason, wait)
                await asyncio.sleep(wait)
                if run is not None:
                    await run.ready()
                continue
        result, ended = failure_result(error, changing)
        return result, ended if changing else "failed"


async def _read_back(tool: Tool, context: CallContext, run: _RunAttempt | None) -> Any:
    """The reader's finding; of a run, None when the reader failed; without one, what
    the reader's failure was."""
    if run is not None:
        return await run.read_back(tool, context)
    assert tool.read_back is not None
    try:
        return await tool.read_back(context)
    except Exception as exc:  # noqa: BLE001 - the outcome stays unknown, and says why
        return describe(exc)
