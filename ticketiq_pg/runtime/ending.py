"""The end of a run: its answer sealed (write-once) and handed on at most once (I10);
or the run failed or stopped, each in one statement that releases its lease."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ticketiq_pg.agent import AnswerDelivery, Delivery, RunInfo
from ticketiq_pg.errors import NotOwner
from ticketiq_pg.retries import describe
from ticketiq_pg.runtime import call_fence
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.run_state import RunOutcome, RunState, Step, step_usage
from ticketiq_pg.runtime.setup import EngineSetup
from ticketiq_pg.vendors import fencing

log = logging.getLogger(__name__)

#: Seconds a delivery's progress (a Teams typing activity) may take before it is dropped.
PROGRESS_TIMEOUT = 5.0


class Ending:
    """Seals and hands on a run's answer, delivers it to its entry point; fails or stops a run."""

    def __init__(self, setup: EngineSetup, *, answer_retention: float = 86400.0,
                 deliver: Delivery | None = None,
                 deliveries: Mapping[str, AnswerDelivery] | None = None) -> None:
        self.setup = setup
        self.answer_retention = answer_retention
        self.deliver = deliver
        self.deliveries = dict(deliveries or {})
        self._progressing: set[asyncio.Task[None]] = set()

    def progress(self, info: RunInfo, request: Any) -> None:
        """A step starts: the entry point's delivery shows the person waiting that the run
        works (``AnswerDelivery.progress``), in a task of its own so the step never waits
        for it."""
        delivery = self.deliveries.get(info.entry_point)
        if delivery is None or delivery.progress is None:
            return
        leases = self.setup.leases if self.setup is not None else None
        held = leases.entries.get(info.run_id) if leases is not None else None
        show = self._show_progress(delivery.progress, info, request)
        if leases is None or held is None:
            task = asyncio.create_task(show)
        else:
            # Fenced as a call is (the task copies the context): a process stalled past
            # its lease shows nothing once it goes on, the run being another's by then.
            with fencing.fenced(call_fence.for_run(leases, info.run_id, held.epoch)):
                task = asyncio.create_task(show)
        self._progressing.add(task)  # held until done: a task only weakly held may vanish
        task.add_done_callback(self._progressing.discard)

    @staticmethod
    async def _show_progress(show: Callable[[RunInfo, Any], Awaitable[None]], info: RunInfo,
                             request: Any) -> None:
        try:
            async with asyncio.timeout(PROGRESS_TIMEOUT):
                await show(info, request)
        except Exception:  # noqa: BLE001 - a hint to a person: never the run's failure
            log.debug("run %s: progress not shown", info.run_id, exc_info=True)

    async def finish(self, state: RunState, step_no: int, step: Step) -> RunOutcome:
        """Seal the run's answer (the final step ``step_no``) and hand it on."""
        setup = self.setup
        body = {"text": step.text, "step": step_no, **step_usage(step)}
        if state.workflow is not None:
            body["output"] = flows.output(state)
        setup.leases.check(state.run_id, state.epoch)
        seal, key_id = setup.sealer.seal("answer", state.run_id, step_no, body)
        await setup.db.seal_answer(
            state.run_id, state.epoch, step_no, body, seal, key_id, self.answer_retention
        )
        setup.faults.reach("after_seal", step_no)
        return await self.hand_on(state.info, state.epoch, step_no, state.input, body)


    async def hand_on(
        self, info: RunInfo, epoch: int, step_no: int, request: Any, answer: Any
    ) -> RunOutcome:
        """Hand a sealed answer on, and deliver it to its entry point.

        A delivery with a reader is marked first and sent before the
        hand-on; a process that finds the mark (it replaced a dead one) reads
        the delivery back and sends it only if it is not there: made once.
        Any other delivery is made after the hand-on: at most once.
        """
        setup = self.setup
        # a child's answer is its parent's result, never delivered on its own
        delivery = None if info.parent_run_id is not None else self.deliveries.get(
            info.entry_point)
        key = f"answer:{info.run_id}"
        marked = delivery is not None and delivery.read_back is not None
        if marked:
            assert delivery is not None and delivery.read_back is not None
            setup.leases.check(info.run_id, epoch)
            mark = await setup.db.mark_delivery(info.run_id, epoch)
            with fencing.fenced(call_fence.for_run(setup.leases, info.run_id, epoch)):
                if mark.already_started:
                    await setup.leases.ready(info.run_id, epoch)
                landed = mark.already_started and await delivery.read_back(info, request, key)
                if not landed:
                    await setup.leases.ready(info.run_id, epoch)
                    await delivery.send(info, request, answer, key)
            setup.faults.reach("after_deliver", step_no)
        setup.leases.check(info.run_id, epoch)
        handed = await setup.db.hand_on_answer(info.run_id, epoch)
        setup.leases.drop(info.run_id, epoch)
        setup.faults.reach("after_hand_on", step_no)
        if marked or info.entry_point == "delegation" or info.parent_run_id is not None:
            return RunOutcome(info.run_id, "completed", answer=handed.body)
        try:
            if delivery is not None:
                await delivery.send(info, request, handed.body, key)
            elif self.deliver is not None:
                await self.deliver(info, handed.body)
        except Exception as exc:  # noqa: BLE001 - the run is completed; only its delivery failed
            # At most once: not sent again, and the run is not failed (its answer is
            # sealed and handed on, for the entry's caller to read).
            log.exception("run %s: the answer's delivery failed", info.run_id)
            return RunOutcome(info.run_id, "completed", answer=handed.body,
                              reason=f"delivery failed, not retried: {describe(exc)}")
        return RunOutcome(info.run_id, "completed", answer=handed.body)

    async def fail(self, state: RunState, reason: str, event: str) -> RunOutcome:
        """Fail the run this attempt holds, with its reason and audit event."""
        await self.setup.db.fail_run(state.run_id, state.epoch, reason, event)
        return RunOutcome(state.run_id, "failed", reason=reason)

    async def fail_now(self, run_id: uuid.UUID, epoch: int, reason: str,
                       event: str = "agent.run.failed") -> RunOutcome:
        """Fail the run in one statement, the lease released, no loss counted (an attempt
        that is no longer the run's owner is told so: ``lost``)."""
        log.error("run %s failed: %s", run_id, reason)
        try:
            await self.setup.db.fail_run(run_id, epoch, reason[:2000], event)
        except NotOwner:
            return RunOutcome(run_id, "lost", reason=reason)
        return RunOutcome(run_id, "failed", reason=reason)

    async def stop(self, state: RunState) -> RunOutcome:
        """End the run stopped (a Stop was asked)."""
        await self.setup.db.stop_run(state.run_id, state.epoch)
        return RunOutcome(state.run_id, "stopped", reason="stop requested")
