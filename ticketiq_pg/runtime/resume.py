"""The resumer: a run adopted after a loss, verified and settled, handed to the engine.

:meth:`Resumer.resume` turns an adopted run into what the engine does next, without
calling back into it:

- a sealed answer not yet handed on: :class:`HandOn` (verified first; the run takes no
  further step and makes no call, I10);
- a checkpoint or call row that does not verify, or a gate that refuses the run as it
  stands now: :class:`Refuse` (failed, nothing executed, I9);
- a Stop asked meanwhile: :class:`Stop`;
- a workflow run of a version this process's code does not run: released for a process
  that runs it (:class:`~ticketiq_pg.runtime.run_state.Drained`);
- otherwise the run's :class:`~ticketiq_pg.runtime.run_state.RunState`, restored from its
  last checkpoint with the calls that step left settled, never blindly sent again (the
  call executor's :meth:`~ticketiq_pg.runtime.calls.CallExecutor.settle`: I6, I7, each
  settlement audited as it is decided, I14).  The engine goes on from there and asks the
  model only for later steps (I8).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ticketiq_pg.agent import RunInfo, user_message
from ticketiq_pg.db.rows import AdoptedRun
from ticketiq_pg.errors import SealMismatch
from ticketiq_pg.runtime import call_rows, chain
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.calls import CallExecutor
from ticketiq_pg.runtime.run_state import Drained, RunState, StopRequested
from ticketiq_pg.runtime.setup import EngineSetup, ResumeTurn

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HandOn:
    """The run's answer is sealed: hand it on, run nothing."""

    info: RunInfo
    epoch: int
    step: int
    input: Any
    answer: Any


@dataclass(frozen=True, slots=True)
class Refuse:
    """The run may not go on (its seal, a gate): fail it with ``reason`` and ``event``."""

    state: RunState
    reason: str
    event: str


@dataclass(frozen=True, slots=True)
class Stop:
    """A Stop was asked for the run: end it stopped."""

    state: RunState


class Resumer:
    """Verifies, re-checks and settles an adopted run (one per process)."""

    def __init__(self, setup: EngineSetup, calls: CallExecutor, workflows: flows.Workflows,
                 fresh_counters: Callable[[Any], dict[str, Any]]) -> None:
        self.setup = setup
        self.calls = calls
        self.workflows = workflows
        #: A run's counters before its first step, with the engine's limits (given the
        #: run's workflow or None): a run adopted before its first checkpoint starts so.
        self.fresh_counters = fresh_counters

    async def resume(self, adopted: AdoptedRun,
                     turn: ResumeTurn | None = None) -> RunState | HandOn | Refuse | Stop:
        setup = self.setup
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
            parent_run_id=_parent(adopted.meta),
        )
        state = RunState(info=info, epoch=adopted.epoch, input=adopted.input, resuming=turn)

        if adopted.answer_body is not None:
            try:
                setup.sealer.verify(
                    "answer", adopted.run_id, adopted.last_step, adopted.answer_body,
                    adopted.answer_seal, adopted.answer_seal_key_id,
                )
            except SealMismatch as exc:
                return Refuse(state, str(exc), "agent.run.seal_failed")
            return HandOn(info, adopted.epoch, adopted.last_step, adopted.input,
                          adopted.answer_body)

        if adopted.last_step >= 1:
            body = adopted.checkpoint_body
            try:
                chain.restore(
                    setup.sealer, state, adopted.run_id, adopted.last_step, body,
                    adopted.checkpoint_seal, adopted.checkpoint_seal_key_id,
                    adopted.checkpoint_chain,
                )
                assert body is not None
                call_rows.verify_rows(
                    setup.sealer, adopted.run_id, adopted.last_step, body, adopted.calls
                )
            except (SealMismatch, KeyError, TypeError, AssertionError) as exc:
                # Refused: its audit row (written at adoption, I14) says nothing was settled.
                return Refuse(state, f"checkpoint failed verification: {exc}",
                              "agent.run.seal_failed")
        else:
            # No checkpoint yet (released or lost before its first step, as a ctx.first
            # child is released at once): the limits a start gives, the engine's own (a
            # start's own limits were never written, so they are not known here).
            body = None
            state.conversation = [user_message(adopted.input)]
            state.counters = self.fresh_counters(self.workflows.for_run(info, adopted.input))

        if adopted.stop_requested:
            return Stop(state)
        verdict = await setup.gates.check_run(info)
        if not verdict.allowed:
            return Refuse(state, verdict.reason, "agent.run.gate_refused")
        # A workflow run: the definition its record names, with every step it is at.
        try:
            state.workflow = self.workflows.for_resume(info, adopted.input, state.counters)
        except flows.NotRunnableHere as exc:
            # Another version's run (this process declared nothing, or a declaration
            # raced): handed back for a process that runs it, never failed for a deploy.
            await setup.db.release_run(state.run_id, state.epoch, "workflow version", {})
            raise Drained(str(exc)) from exc
        if state.workflow is not None:
            flows.check_resumable(state.workflow, state)

        if body is not None:
            try:
                await self.calls.settle(state, body["calls"], adopted.calls)
            except StopRequested:
                return Stop(state)
            except Drained:
                await setup.db.release_run(state.run_id, state.epoch, "shutdown", {})
                raise
        return state


def _parent(meta: Any) -> uuid.UUID | None:
    """The parent a child run's start recorded in its meta (None: not a child, or a child
    started before it was recorded)."""
    try:
        return uuid.UUID(str(meta["parent_run_id"])) if isinstance(meta, dict) else None
    except (KeyError, ValueError):
        return None
