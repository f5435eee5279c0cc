"""A workflow's durable waits as the engine makes them: a sleep, a signal with a timeout.

A wait is the one call of its step, classified a read: the checkpoint before it is
written as for any call, and a resume makes it again.  ``ticketiq.wait_run`` keys it by
the step key, so made again it finds the timer its first attempt set (the same due
time) or the signal it consumed (the same payload): a timer fires once, a signal is
consumed once.  A wait not over gives the run's lease up in the same statement: no
process, task or connection holds a waiting workflow; the timer
(``ticketiq.fire_due_timers``, called by every process's entry pump) or the signal
(``ticketiq.send_signal``) wakes it on whichever process adopts it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.run_state import RunState, Suspended
from ticketiq_pg.workflow import SLEEP_TOOL


class WorkflowWaiting:
    """The workflow-waits part of :class:`~ticketiq_pg.runtime.runner.Runner`."""

    db: TicketIQ
    leases: LeaseKeeper

    _before_suspend: Callable[[RunState, int], Awaitable[None]]

    async def _workflow_wait(self, state: RunState, step_no: int, call: dict[str, Any]) -> Any:
        """Make a wait: its result when it is over, else suspend the run (raises Suspended)."""
        key = call["step_key"]
        args = call["arguments"]
        if call["tool"] == SLEEP_TOOL:
            wait_key, seconds = f"timer:{state.run_id}:{key}", args.get("seconds")
        else:
            wait_key, seconds = f"signal:{state.run_id}:{args.get('name')}", args.get("timeout")
        await self._before_suspend(state, step_no)
        self.leases.check(state.run_id, state.epoch)
        waited = await self.db.wait_run(state.run_id, state.epoch, key, wait_key, seconds,
                                        {"call_id": call["call_id"]})
        if waited.outcome == "suspended":
            raise Suspended(f"waiting on {wait_key}")
        if call["tool"] == SLEEP_TOOL:
            return {"slept": True, "due_at": waited.due_at.isoformat() if waited.due_at else None}
        return {"payload": waited.payload, "timed_out": waited.outcome == "timeout"}
