"""A provider outage: a run waits it out within its budget, or (opted in) is suspended.

While a model step fails transiently the run keeps its lease (its process renews it as
ever) and each failed try is recorded in ``ticketiq.attempts`` with the provider's status
first (``HTTP 529: ...``), so ``ticketiq-pg status`` lists the run as retrying, with the
status and how long (:func:`ticketiq_pg.db.inspect.retrying`).

Past the budget a run is failed, unless its model retry policy says ``suspend=True`` and
the run may wait (and is written ahead): then it gives its lease up, suspended on the
wait key :data:`WAIT_KEY` (``agent.run.suspended``), and is woken when a later model step
of any run on a process that opted in succeeds (checked at most every
:data:`WAKE_EVERY` seconds a process), or by ``ticketiq.wake_runs('model_outage')``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ticketiq_pg.retries import status_of
from ticketiq_pg.runtime.run_state import RunState, Suspended

log = logging.getLogger(__name__)

#: The wait key of a run suspended past its model retry budget.
WAIT_KEY = "model_outage"
#: Seconds between two wakes of suspended runs by one process after model steps succeed.
WAKE_EVERY = 5.0


def recorded_reason(exc: BaseException, reason: str) -> str:
    """A failed try as ``ticketiq.attempts`` keeps it: the HTTP status first, when known."""
    status = status_of(exc)
    return f"HTTP {status}: {reason}" if status is not None else reason


async def suspend_if_opted_in(runner: Any, state: RunState, step_no: int, reason: str) -> None:
    """Suspend the run on :data:`WAIT_KEY` if its policy opts in and it may wait; else return."""
    if not getattr(runner.model_retry, "suspend", False):
        return
    if not (state.durable and state.info.may_wait):
        log.warning("run %s: its model retry policy would suspend it, but it may not wait",
                    state.run_id)
        return
    # The calls of the last step that changed something are recorded first, as before
    # any wait, so the attempt that wakes it finds them done.
    await runner._before_suspend(state, state.step)
    runner.leases.check(state.run_id, state.epoch)
    await runner.db.suspend_run(state.run_id, state.epoch, WAIT_KEY,
                                {"reason": reason[:1000], "model_step": step_no})
    log.warning("run %s suspended until the model answers again: %s", state.run_id, reason)
    raise Suspended(f"the model is unavailable: {reason}")


async def recovered(runner: Any, state: RunState) -> None:
    """After a model step succeeded: wake runs suspended for an outage (opted in only)."""
    if not getattr(runner.model_retry, "suspend", False):
        return
    now = time.monotonic()
    last = getattr(runner, "_outage_woken_at", None)
    if last is not None and now - last < WAKE_EVERY:
        return
    runner._outage_woken_at = now
    woken = await runner.db.wake_runs(WAIT_KEY)
    if woken:
        log.warning("the model answers again: %s suspended runs woken", woken)
