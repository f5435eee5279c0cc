"""Resuming a run after a loss: verify its seal, pass the gates again, settle its last step.

The calls a lost attempt left are settled, never blindly sent again (I6, I7); every
resume is audited (I14); the model is asked only for later steps (I8).
"""

from __future__ import annotations

import logging
from typing import Any

from ticketiq_pg.agent import (
    Gates,
    Model,
    RunInfo,
    ToolCall,
    Tools,
    is_changing,
    user_message,
)
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.rows import AdoptedRun
from ticketiq_pg.errors import (
    NotOwner,
    SealMismatch,
)
from ticketiq_pg.runtime import call_fence, call_rows, chain
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.run_state import (
    UNKNOWN_OUTCOME,
    Drained,
    RunOutcome,
    RunState,
    StopRequested,
    carry_results,
)
from ticketiq_pg.seal import Sealer
from ticketiq_pg.vendors import fencing

log = logging.getLogger(__name__)


class Resuming:
    """The resume half of :class:`~ticketiq_pg.runtime.runner.Runner`."""

    db: TicketIQ
    leases: LeaseKeeper
    sealer: Sealer
    gates: Gates
    tools: Tools
    model: Model
    poll_interval: float
    max_losses: int
    faults: FaultPoints
    workflows: flows.Workflows


    # -- resuming ---------------------------------------------------------

    async def resume(self, adopted: AdoptedRun, sent_at: float) -> RunOutcome:
        """Continue a run this process adopted, from its last written step."""
        self.leases.hold(adopted.run_id, adopted.epoch, sent_at)
        return await self._guarded(adopted.run_id, adopted.epoch, self._resume(adopted))


    async def _resume(self, adopted: AdoptedRun) -> RunOutcome:
        info = RunInfo(
            run_id=adopted.run_id,
            owner=adopted.owner,
            run_as=adopted.run_as,
            channel=adopted.channel,
            entry_point=adopted.entry_point,
            may_wait=adopted.may_wait,
            correlation_id=adopted.correlation_id,
            loss_count=adopted.loss_count,
            resumed=True,
        )
        state = RunState(info=info, epoch=adopted.epoch, input=adopted.input)

        if adopted.answer_body is not None:
            try:
                self.sealer.verify(
                    "answer", adopted.run_id, adopted.last_step, adopted.answer_body,
                    adopted.answer_seal, adopted.answer_seal_key_id,
                )
            except SealMismatch as exc:
                return await self._refuse(state, str(exc), "agent.run.seal_failed")
            return await self._hand_on(
                info, adopted.epoch, adopted.last_step, adopted.input, adopted.answer_body
            )

        if adopted.last_step >= 1:
            body = adopted.checkpoint_body
            try:
                chain.restore(
                    self.sealer, state, adopted.run_id, adopted.last_step, body,
                    adopted.checkpoint_seal, adopted.checkpoint_seal_key_id,
                    adopted.checkpoint_chain,
                )
                assert body is not None
                call_rows.verify_rows(
                    self.sealer, adopted.run_id, adopted.last_step, body, adopted.calls
                )
            except (SealMismatch, KeyError, TypeError, AssertionError) as exc:
                reason = f"checkpoint failed verification: {exc}"
                return await self._refuse(state, reason, "agent.run.seal_failed")
        else:
            body = None
            state.conversation = [user_message(adopted.input)]
            state.counters = {"model_steps": 0, "tool_calls": 0}

        if adopted.stop_requested:
            return await self._stop(state)
        verdict = await self.gates.check_run(info)
        if not verdict.allowed:
            return await self._refuse(state, verdict.reason, "agent.run.gate_refused")
        # A workflow run: the definition its record names, with every step it is at.
        state.workflow = self.workflows.for_resume(info, adopted.input, state.counters)
        if state.workflow is not None:
            flows.check_resumable(state.workflow, state)

        if body is not None:
            try:
                await self._settle(state, body["calls"], adopted.calls)
            except StopRequested:
                return await self._stop(state)
            except Drained:
                await self.db.release_run(state.run_id, state.epoch, "shutdown", {})
                raise
        return await self._drive(state)


    async def _refuse(self, state: RunState, reason: str, event: str) -> RunOutcome:
        """A resume refused by its seal or a gate: failed, its audit row (written at
        adoption, I14) saying nothing was settled."""
        return await self._fail(state, reason, event)

    async def _before_suspend(self, state: RunState, step_no: int) -> None:
        """What a run records before it gives its lease up to wait.

        The outcomes of the changing calls this step already made, so the
        attempt that wakes it finds them done instead of in doubt.  A call
        the checkpoint recorded as a read has no row (its result rides in the
        next checkpoint): nothing to send for it.
        """
        await self._record_made(state, step_no)

    async def _record_made(self, state: RunState, step_no: int) -> None:
        """Record, sealed, the outcome of each call of this step made so far that has a row.

        Before the run gives its lease up (a wait, a shutdown): no row is
        left for a statement without a seal to close.
        """
        made, state.made = state.made, []
        for call, result, how in made:
            if state.durable and self._has_open_row(state, call):
                await call_rows.record(self.db, self.sealer, state, step_no, call, result, how)

    @staticmethod
    def _has_open_row(state: RunState, call: dict[str, Any]) -> bool:
        """A row this attempt has not finished: a changing call's, or one a mark gave a read."""
        if call["call_id"] in state.recorded:
            return False  # recorded as it returned
        return is_changing(call["classification"]) or call["call_id"] in state.marked


    async def _settle(
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
        by_id = {row["call_id"]: row for row in recorded}
        settlements: list[dict[str, Any]] = []
        results: list[Any] = []
        for call in calls:
            row = by_id.get(call["call_id"], {})
            db_state = row.get("state", "pending")
            if db_state in ("done", "settled"):
                result, how = row.get("outcome"), row.get("settlement") or "made"
            elif db_state == "in_doubt":
                marked = row.get("marked_classification") or call["classification"]
                # keyed by its approval only if it was filed before the mark (sent so)
                approval = row.get("approval_id") if row.get("approval_keyed", True) else None
                result, how = await self._settle_in_doubt(state, call, marked, approval)
            else:
                result, how = await self._make_call(state, state.step, call, resumed=True)
                if how == "made" and not is_changing(call["classification"]):
                    how = "redone"
            if db_state in ("pending", "in_doubt") and self._has_open_row(state, call):
                # sealed as it is settled: record_resume then leaves the row as it is
                await call_rows.record(self.db, self.sealer, state, state.step, call, result, how)
            results.append(result)
            settlement = {"call_id": call["call_id"], "settlement": how, "outcome": result}
            self.leases.check(state.run_id, state.epoch)
            await self.db.record_resume(state.run_id, state.epoch, [settlement])
            settlements.append(settlement)
            self.faults.reach("mid_settlement", state.step)
        carry_results(state, calls, results)
        return settlements


    async def _settle_in_doubt(
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
        tool = self.tools.get(call["tool"])
        tool_call = ToolCall(call["call_id"], call["tool"], call["arguments"])
        verdict = await self.gates.check_call(state.info, tool_call, marked)
        # The key it was sent with: its approval's if one was filed before its mark,
        # else its step key.  A call with neither (a positional call id) was sent with
        # an ad hoc key nobody can find again: never resent, never read back.
        keyed = bool(approval_id or call.get("step_key"))
        context = self._context(state, state.step, call, marked, True, approval_id)
        refused = None if verdict.allowed else verdict.reason
        if verdict.allowed and tool is not None and keyed:
            resend = ("asked_again" if tool.subagent and marked in (
                "delegation", "subagent_with_tools") else
                "resent_same_key" if tool.resend_safe else None)
            if resend is not None and verdict.needs_approval:
                # Held as the gate stands now: nothing is sent before a person approves
                # (the request coalesces with one already filed for the call).
                decision = await self._await_approval(state, state.step, call, verdict.reason)
                if decision.state != "approved":
                    resend, refused = None, f"rejected by {decision.decided_by}: {decision.reason}"
            if resend == "asked_again":
                await self.leases.ready(state.run_id, state.epoch)
                return await self._invoke(state, tool, context), "asked_again"
            if resend == "resent_same_key":
                await self.leases.ready(state.run_id, state.epoch)
                result = await self._invoke(state, tool, context)
                if isinstance(result, dict) and result.get("outcome") == "unknown":
                    result["sent_again"] = True
                return result, "resent_same_key"
        if tool is not None and tool.read_back is not None and keyed:
            await self.leases.ready(state.run_id, state.epoch)
            try:
                # Fenced as any call: the vendor learns the new epoch from the read too.
                with fencing.fenced(call_fence.for_call(self.leases, state)):
                    found = await tool.read_back(context)
            except NotOwner:
                raise
            except Exception as exc:  # noqa: BLE001
                log.warning("read back of %s failed: %s", call["call_id"], exc)
            else:
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
