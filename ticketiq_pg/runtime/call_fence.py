"""A run's outside calls fenced by its lease and its epoch (:mod:`ticketiq_pg.vendors.fencing`).

:func:`for_call` is the fence the runner puts around a tool call: the lease is checked
again by the vendor client's transport as the request's bytes go out, with a margin, and
each request carries the run's epoch as its fencing token.  :func:`settle_fenced` is what
a vendor's refusal of that token (409, nothing applied) comes to: an attempt that is no
longer the run's stops (the newer attempt settled the call); one that still is (its lease
holds) audits the refusal (``agent.run.call_fenced``) and tells the model the call was
fenced and not applied.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from ticketiq_pg.agent import CallContext
from ticketiq_pg.errors import LeaseLost
from ticketiq_pg.retries import describe
from ticketiq_pg.runtime.leases import LeaseBook
from ticketiq_pg.runtime.run_state import RunState
from ticketiq_pg.runtime.store import RunStore
from ticketiq_pg.vendors.fencing import CallFence

log = logging.getLogger(__name__)

EVENT = "agent.run.call_fenced"


def for_call(leases: LeaseBook, state: RunState) -> CallFence:
    """The fence of a call of ``state``'s attempt: its lease must hold ``margin`` s more."""
    return for_run(leases, state.run_id, state.epoch)


def for_run(leases: LeaseBook, run_id: uuid.UUID, epoch: int) -> CallFence:
    """The fence of a call of the run's attempt at ``epoch`` (an answer's delivery too)."""

    def check(margin: float) -> None:
        leases.check(run_id, epoch)
        held = leases.entries.get(run_id)
        if held is not None and margin > 0 and leases.clock() + margin >= held.deadline:
            raise LeaseLost(f"lease on run {run_id} could lapse within {margin:g}s: "
                            "the call is not sent")

    return CallFence(str(run_id), epoch, check)


async def settle_fenced(leases: LeaseBook, db: RunStore, state: RunState, context: CallContext,
                        exc: BaseException) -> tuple[dict[str, Any], str]:
    """A vendor refused the call's fencing token: nothing was applied."""
    reason = describe(exc)
    if not leases.may_act(state.run_id, state.epoch):
        # Taken over: the newer attempt settles the call; this one writes nothing more.
        log.warning("run %s: call %s fenced by its vendor after a takeover: %s",
                    state.run_id, context.call_id, reason)
        raise LeaseLost(f"call {context.call_id} fenced by its vendor: {reason}") from exc
    log.warning("run %s: call %s fenced by its vendor: %s", state.run_id, context.call_id,
                reason)
    await db.audit_once(
        state.run_id, state.epoch, EVENT, f"{context.step}:{context.call_id}"[:256],
        {"step": context.step, "call_id": context.call_id, "tool": context.tool,
         "reason": reason[:1000]})
    return {"error": reason, "outcome": "fenced", "sent_again": False,
            "message": "The vendor refused this call as made by an attempt older than "
                       "one it had seen for this run: nothing was applied."}, "skipped"
