"""Tool calls whose arguments the model sent malformed: told to the model, not asked again.

A provider adapter that cannot read a call's arguments (not JSON, or JSON that is not an
object) gives the call with empty arguments and the reason (``ToolCall.malformed``).  The
step is checkpointed as any other; the call is skipped with its reason (the model is
told, as of arguments its tool's schema refuses) and the run goes on, so a model can mend
its call.  A model that sends malformed arguments in ``max_malformed`` steps in a row
fails the run with the reason: asking it again would not mend it.  The count rides in
the run's sealed checkpoints (``counters.malformed_steps``), so a resume keeps it.
"""

from __future__ import annotations

import logging
from typing import Any

from ticketiq_pg.agent import ModelStep
from ticketiq_pg.runtime.run_state import RunFailed, RunState
from ticketiq_pg.runtime.setup import EngineSetup

log = logging.getLogger(__name__)

#: Steps in a row with malformed arguments that fail the run (a ModelDecider's ``max_malformed``).
MAX_MALFORMED = 3
#: The counter in the run's checkpoints.
COUNTER = "malformed_steps"
#: Audited once per malformed call, with its step.
EVENT = "agent.run.malformed_arguments"


def reason_of(call: Any) -> str | None:
    """Why a call's arguments could not be read (None: they could)."""
    reason = getattr(call, "malformed", None)
    return reason if isinstance(reason, str) and reason else None


def clean(state: RunState, answer: ModelStep) -> bool:
    """Whether no call of the step is malformed (the count of steps in a row then ends):
    the step loop's check, in line; :func:`note` does the rest."""
    for call in answer.calls:
        if reason_of(call):
            return False
    state.counters.pop(COUNTER, None)
    return True


async def note(setup: EngineSetup, state: RunState, step_no: int, answer: ModelStep,
               limit: int = MAX_MALFORMED) -> None:
    """Count a step's malformed calls; raise RunFailed at ``limit`` steps in a row."""
    bad = [(call, reason) for call in answer.calls if (reason := reason_of(call))]
    if not bad:
        state.counters.pop(COUNTER, None)
        return
    in_row = int(state.counters.get(COUNTER) or 0) + 1
    said = "; ".join(f"call {call.call_id} ({call.tool}): {reason}" for call, reason in bad)
    log.warning("run %s: step %s has malformed tool arguments (%s in a row): %s",
                state.run_id, step_no, in_row, said)
    if state.durable:
        setup.leases.check(state.run_id, state.epoch)
        for call, reason in bad:
            await setup.db.audit_once(
                state.run_id, state.epoch, EVENT, f"{step_no}:{call.call_id}"[:256],
                {"step": step_no, "call_id": call.call_id, "tool": call.tool,
                 "reason": reason[:1000], "in_a_row": in_row})
    if in_row >= limit:
        raise RunFailed(f"the model sent malformed tool arguments in {in_row} steps in a "
                        f"row: {said}"[:2000])
    state.counters[COUNTER] = in_row
