"""The end of a run: its answer sealed (write-once) and handed on at most once (I10)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ticketiq_pg.agent import AnswerDelivery, Delivery, ModelStep, RunInfo
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.retries import describe
from ticketiq_pg.runtime import call_fence
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.run_state import RunOutcome, RunState, step_usage
from ticketiq_pg.seal import Sealer
from ticketiq_pg.vendors import fencing

log = logging.getLogger(__name__)


class Ending:
    """The ending half of :class:`~ticketiq_pg.runtime.runner.Runner`."""

    db: TicketIQ
    leases: LeaseKeeper
    sealer: Sealer
    faults: FaultPoints
    answer_retention: float
    deliver: Delivery | None
    deliveries: Mapping[str, AnswerDelivery]

    async def _finish(self, state: RunState, step_no: int, answer: ModelStep) -> RunOutcome:
        body = {"text": answer.text, "step": step_no, **step_usage(answer)}
        if state.workflow is not None:
            body["output"] = flows.output(state)
        self.leases.check(state.run_id, state.epoch)
        seal, key_id = self.sealer.seal("answer", state.run_id, step_no, body)
        await self.db.seal_answer(
            state.run_id, state.epoch, step_no, body, seal, key_id, self.answer_retention
        )
        self.faults.reach("after_seal", step_no)
        return await self._hand_on(state.info, state.epoch, step_no, state.input, body)


    async def _hand_on(
        self, info: RunInfo, epoch: int, step_no: int, request: Any, answer: Any
    ) -> RunOutcome:
        """Hand a sealed answer on, and deliver it to its entry point.

        A delivery with a reader is marked first and sent before the
        hand-on; a process that finds the mark (it replaced a dead one) reads
        the delivery back and sends it only if it is not there: made once.
        Any other delivery is made after the hand-on: at most once.
        """
        delivery = self.deliveries.get(info.entry_point)
        key = f"answer:{info.run_id}"
        if delivery is not None and delivery.read_back is not None:
            self.leases.check(info.run_id, epoch)
            mark = await self.db.mark_delivery(info.run_id, epoch)
            with fencing.fenced(call_fence.for_run(self.leases, info.run_id, epoch)):
                if mark.already_started:
                    await self.leases.ready(info.run_id, epoch)
                landed = mark.already_started and await delivery.read_back(info, request, key)
                if not landed:
                    await self.leases.ready(info.run_id, epoch)
                    await delivery.send(info, request, answer, key)
            self.faults.reach("after_deliver", step_no)
            self.leases.check(info.run_id, epoch)
            handed = await self.db.hand_on_answer(info.run_id, epoch)
            self.leases.drop(info.run_id, epoch)
            self.faults.reach("after_hand_on", step_no)
            return RunOutcome(info.run_id, "completed", answer=handed.body)
        self.leases.check(info.run_id, epoch)
        handed = await self.db.hand_on_answer(info.run_id, epoch)
        self.leases.drop(info.run_id, epoch)
        self.faults.reach("after_hand_on", step_no)
        if info.entry_point != "delegation":
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
