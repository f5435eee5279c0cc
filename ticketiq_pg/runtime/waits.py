"""Calls that wait: an approval a person decides, a child run a delegation starts."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from ticketiq_pg.agent import (
    CallContext,
    Gates,
    Model,
    Tool,
    Tools,
)
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.run_state import (
    Drained,
    RunState,
    Suspended,
)
from ticketiq_pg.seal import Sealer

log = logging.getLogger(__name__)


class Waiting:
    """The waiting half of :class:`~ticketiq_pg.runtime.runner.Runner`: approvals, children."""

    db: TicketIQ
    leases: LeaseKeeper
    sealer: Sealer
    gates: Gates
    tools: Tools
    model: Model
    poll_interval: float
    max_losses: int


    # -- approvals --------------------------------------------------------

    async def _await_approval(
        self, state: RunState, step_no: int, call: dict[str, Any], reason: str
    ) -> _Decision:
        """File (or find) the call's approval request and wait for a person's decision.

        The run keeps its lease while it waits (the process renews it); a
        run lost meanwhile is resumed elsewhere, where filing again
        coalesces with this request.
        """
        self.leases.check(state.run_id, state.epoch)
        filed = await self.db.request_approval(
            state.run_id, state.epoch, step_no, call["call_id"],
            {"reason": reason, "tool": call["tool"]},
        )
        approval = filed
        if approval.state == "waiting" and state.info.may_wait:
            # A run that may wait gives its lease up; the decision wakes it.
            await self._before_suspend(state, step_no)
            await self.db.suspend_run(
                state.run_id, state.epoch, f"approval:{filed.approval_id}",
                {"call_id": call["call_id"]},
            )
            raise Suspended(f"waiting for approval {filed.approval_id}")
        while approval.state == "waiting":
            if self.draining:
                raise Drained(f"shut down while waiting for approval {filed.approval_id}")
            await asyncio.sleep(self.poll_interval)
            self.leases.check(state.run_id, state.epoch)
            approval = await self.db.get_approval(filed.approval_id)
        return _Decision(
            approval_id=filed.approval_id,
            state=approval.state,
            coalesced=filed.coalesced,
            first_state=filed.state,
            decided_by=approval.decided_by,
            reason=approval.reason,
        )


    # -- delegation -------------------------------------------------------

    async def _delegate(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """Run a child agent for a delegation, or find the one its key started.

        The delegation key is the call's step key, so asking again (after a
        crash) finds the same child: its sealed answer, a child still alive
        (wait for it), or a child whose lease lapsed (take it over, once).
        """
        key = context.step_key
        child_input = tool.child_input(context) if tool.child_input else context.arguments
        started = await self.start(
            owner=state.info.owner,
            run_as=state.info.run_as,
            channel=state.info.channel,
            entry_point="delegation",
            may_wait=state.info.may_wait,
            input=child_input,
            idempotency_key=key,
            correlation_id=f"{state.info.correlation_id}/{context.call_id}",
            meta={"parent_call_id": context.call_id, "tool": tool.name},
            parent_run_id=state.run_id,
        )
        if isinstance(started, RunState):
            outcome = await self.run(started)
            if outcome.status in ("completed", "failed", "stopped"):
                return _child_result(started.run_id, outcome.status, outcome.answer,
                                     outcome.reason)
            # Released, lost or suspended: the child is not finished; its
            # answer is found by its key (and a lost parent stops here).
            self.leases.check(state.run_id, state.epoch)
            if outcome.status == "released":
                raise Drained(f"child run {started.run_id} was released")
        if key is None:
            # A positional call id gives no delegation key: nothing to ask again by.
            return {"error": "the child run did not finish here and has no delegation key",
                    "outcome": "unknown"}
        return await self._await_child(state, key)


    async def _await_child(self, state: RunState, key: str) -> Any:
        while True:
            self.leases.check(state.run_id, state.epoch)
            if self.draining:
                raise Drained("shut down while waiting for a child run")
            child = await self.db.delegation_status(key)
            if child is None:
                return {"error": f"no child run for delegation key {key}", "outcome": "unknown"}
            if child.answer is not None:
                return _child_result(child.run_id, "completed", child.answer, "")
            if child.status in ("failed", "stopped", "completed"):
                return _child_result(child.run_id, child.status, None, child.failure_reason or "")
            if child.status == "claimed" or child.lease_lapsed:
                sent = self.leases.sent_at()
                adopted = await self.db.take_over_child(
                    state.run_id, state.epoch, child.run_id, self.holder, self.leases.ttl,
                    max_losses=self.max_losses,
                )
                if adopted is not None:
                    await self.resume(adopted, sent)
                    continue
            elif state.info.may_wait and child.status == "running":
                await self._before_suspend(state, state.step)
                await self.db.suspend_run(state.run_id, state.epoch, f"child:{child.run_id}",
                                          {"delegation_key": key})
                raise Suspended(f"waiting for child run {child.run_id}")
            await asyncio.sleep(self.poll_interval)


@dataclass(frozen=True, slots=True)
class _Decision:
    approval_id: uuid.UUID
    state: str
    coalesced: bool
    first_state: str
    decided_by: str | None
    reason: str | None


def _child_result(run_id: uuid.UUID, status: str, answer: Any, reason: str) -> dict[str, Any]:
    result: dict[str, Any] = {"child_run_id": str(run_id), "status": status}
    if answer is not None:
        result["answer"] = answer
    if reason:
        result["reason"] = reason
    return result
