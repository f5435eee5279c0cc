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

from ticketiq_pg.retries import status_of
from ticketiq_pg.runtime import call_rows
from ticketiq_pg.runtime.run_state import RunState, Suspended
from ticketiq_pg.runtime.setup import EngineSetup

log = logging.getLogger(__name__)

#: The wait key of a run suspended past its model retry budget.
WAIT_KEY = "model_outage"
#: Seconds between two wakes of suspended runs by one process after model steps succeed.
WAKE_EVERY = 5.0


def recorded_reason(exc: BaseException, reason: str) -> str:
    """A failed try as ``ticketiq.attempts`` keeps it: the HTTP status first, when known."""
    status = status_of(exc)
    return f"HTTP {status}: {reason}" if status is not None else reason


async def suspend_if_opted_in(setup: EngineSetup, state: RunState, step_no: int,
                              reason: str) -> None:
    """Suspend the run on :data:`WAIT_KEY` if its policy opts in and it may wait; else return."""
    if not getattr(setup.model_retry, "suspend", False):
        return
    if not (state.durable and state.info.may_wait):
        log.warning("run %s: its model retry policy would suspend it, but it may not wait",
                    state.run_id)
        return
    # The calls of the last step that changed something are recorded first, as before
    # any wait, so the attempt that wakes it finds them done.
    await call_rows.record_made(setup.db, setup.sealer, state, state.step)
    setup.leases.check(state.run_id, state.epoch)
    await setup.db.suspend_run(state.run_id, state.epoch, WAIT_KEY,
                               {"reason": reason[:1000], "model_step": step_no})
    log.warning("run %s suspended until the model answers again: %s", state.run_id, reason)
    raise Suspended(f"the model is unavailable: {reason}")


class Recovery:
    """Wakes the runs suspended for an outage once a model step succeeds (opted in only),
    at most every :data:`WAKE_EVERY` seconds a process."""

    def __init__(self, setup: EngineSetup) -> None:
        self.setup = setup
        self.woken_at: float | None = None

    async def recovered(self) -> None:
        """The model answered: wake the runs suspended for its outage (at most every
        WAKE_EVERY seconds).  Only a policy that suspends (``suspend``) has any."""
        if not getattr(self.setup.model_retry, "suspend", False):
            return
        now = time.monotonic()
        if self.woken_at is not None and now - self.woken_at < WAKE_EVERY:
            return
        self.woken_at = now
        woken = await self.setup.db.waits.wake_runs(WAIT_KEY)
        if woken:
            log.warning("the model answers again: %s suspended runs woken", woken)
