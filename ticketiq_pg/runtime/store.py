"""The step engine's one narrow, typed interface to the database.

Every durable act of the engine's parts (:mod:`ticketiq_pg.runtime.runner` and the parts it
is composed of) is one of the functions below, each one ``ticketiq.*`` statement; the parts
name :class:`RunStore`, never the whole driver.  :class:`~ticketiq_pg.db.driver.TicketIQ`
is one (its ``waits`` part the :class:`WaitStore`); a test may hand the engine another.
Like Oban's engine behaviour or River's driver interface, this is the contract between
the runtime and the storage: what the engine may ask of PostgreSQL, and nothing more.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from ticketiq_pg.db import rows as models
from ticketiq_pg.seal import JsonText

__all__ = ["RunStore", "WaitStore"]


class WaitStore(Protocol):
    """What a run waits for: a person's approval, a child run, a workflow's timer or signal."""

    async def request_approval(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        call_id: str,
        summary: dict[str, Any] | None = None,
    ) -> models.Approval:
        """``ticketiq.request_approval``: File one approval request per held call, or return
        the one already filed (coalesced), decided or not.
        """
        ...

    async def get_approval(
        self, approval_id: uuid.UUID
    ) -> models.Approval:
        """``ticketiq.get_approval``: The state of an approval request (waiting, approved,
        rejected).
        """
        ...

    async def await_first(
        self,
        run_id: uuid.UUID,
        epoch: int,
        group: str,
        children: list[uuid.UUID],
        detail: dict[str, Any] | None = None,
    ) -> models.FirstEnd:
        """``ticketiq.await_first``: The first of several child runs to end (written once),
        else the run suspends (or, if it may not wait, waits) until one does (fenced)."""
        ...

    async def delegation_status(
        self, delegation_key: str
    ) -> models.ChildRun | None:
        """``ticketiq.delegation_status``: The child run of a delegation key: status, lease
        lapsed?, sealed answer.
        """
        ...

    async def wait_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step_key: str,
        wait_key: str,
        seconds: float | None = None,
        detail: dict[str, Any] | None = None,
    ) -> models.WaitOutcome:
        """``ticketiq.wait_run``: A workflow step waits for its timer or a signal: answers
        signal/due/timeout at once when the wait is over, else suspends the run (fenced).
        """
        ...

    async def wake_runs(self, wait_key: str) -> int:
        """``ticketiq.wake_runs``: Wake every run suspended on p_wait_key (claimed, epoch + 1,
        NOTIFY ticketiq_resume).
        """
        ...


class RunStore(Protocol):
    """A run's durable acts, each fenced by its epoch and lease (I1) unless it starts one."""

    @property
    def waits(self) -> WaitStore: ...

    async def start_run(
        self,
        *,
        holder: str,
        owner: str,
        run_as: str,
        channel: str,
        entry_point: str,
        may_wait: bool,
        ttl: float,
        input: Any = None,
        correlation_id: str | None = None,
        idempotency_key: str | None = None,
        meta: dict[str, Any] | None = None,
        run_id: uuid.UUID | None = None,
        parent_run_id: uuid.UUID | None = None,
        durable: bool = True,
    ) -> models.StartedRun:
        """``ticketiq.start_run``: Start a run holding lease checkpoint:<run id> at epoch 1.
        """
        ...

    async def write_checkpoint(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        body: dict[str, Any] | JsonText,
        seal: str,
        seal_key_id: str,
    ) -> models.CheckpointWritten:
        """Write the checkpoint of ``step``; on the pool, grouped with other runs' ones."""
        ...

    async def mark_in_doubt(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        call_id: str,
        classification: str | None = None,
        *,
        seal: str | None = None,
        seal_key_id: str | None = None,
    ) -> models.CallMark:
        """``ticketiq.mark_in_doubt``: Mark a changing call of the last step in doubt before it
        is made, with the runner's seal of the mark (fenced, idempotent).
        """
        ...

    async def mark_calls_in_doubt(
        self, run_id: uuid.UUID, epoch: int, step: int, marks: Sequence[dict[str, Any]],
    ) -> list[models.CallMark]:
        """``ticketiq.mark_calls_in_doubt``: Mark the changing calls a step makes at once in
        doubt, in one statement: each as mark_in_doubt marks one, all or none.
        """
        ...

    async def record_outcome(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        call_id: str,
        outcome: Any,
        settlement: str = "made",
        *,
        seal: str | None = None,
        seal_key_id: str | None = None,
    ) -> models.CallOutcome:
        """``ticketiq.record_outcome``: Record a call's outcome and how it was settled, with
        the runner's seal of it (fenced; idempotent for the same outcome).
        """
        ...

    async def record_attempt(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        target: str,
        error: str,
    ) -> models.Attempt:
        """Count one failed attempt of ``target`` at ``step``; the count spans every epoch."""
        ...

    async def audit_once(
        self,
        run_id: uuid.UUID,
        epoch: int,
        event: str,
        key: str,
        detail: dict[str, Any],
    ) -> models.AuditOnce:
        """Audit ``event`` once per run and ``key``; a repeat returns the first row's id."""
        ...

    async def record_resume(
        self,
        run_id: uuid.UUID,
        epoch: int,
        settlements: Sequence[dict[str, Any]] = (),
    ) -> models.ResumeAudited:
        """``ticketiq.record_resume``: Record settlements of the calls the last step left, on
        their calls and on this resume's audit row (written at adoption), as they are
        decided.
        """
        ...

    async def release_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str = "shutdown",
        outcomes: dict[str, Any] | None = None,
    ) -> models.Released:
        """``ticketiq.release_run``: Hand a held run back (claimed, epoch + 1, no loss counted,
        known outcomes kept) and NOTIFY ticketiq_resume.  ``reason`` is cut to 2,000
        characters.
        """
        ...

    async def suspend_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        wait_key: str,
        detail: dict[str, Any] | None = None,
    ) -> models.Suspended:
        """``ticketiq.suspend_run``: A run that may wait gives its lease up until the event
        p_wait_key names.
        """
        ...

    async def take_over_child(
        self,
        parent_run_id: uuid.UUID,
        parent_epoch: int,
        child_run_id: uuid.UUID,
        holder: str,
        ttl: float,
        *,
        max_losses: int = 2,
    ) -> models.AdoptedRun | None:
        """``ticketiq.take_over_child``: A resumed parent takes over its child whose lease
        lapsed (CAS like a sweep, then adopt), once.
        """
        ...

    async def seal_answer(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        body: Any,
        seal: str,
        seal_key_id: str,
        retain: float,
    ) -> models.SealedAnswer:
        """``ticketiq.seal_answer``: Seal a run's final answer (step = last step + 1), write-
        once and kept until the retention time.
        """
        ...

    async def mark_delivery(
        self, run_id: uuid.UUID, epoch: int
    ) -> models.DeliveryMark:
        """``ticketiq.mark_delivery``: Mark that a sealed answer's delivery is about to be sent
        (read it back on resume before posting).
        """
        ...

    async def hand_on_answer(
        self, run_id: uuid.UUID, epoch: int
    ) -> models.HandedOn:
        """``ticketiq.hand_on_answer``: Hand a sealed answer on at most once and complete the
        run (transcript, audit, lease released).
        """
        ...

    async def fail_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str,
        event: str = "agent.run.failed",
    ) -> models.RunEnded:
        """``ticketiq.fail_run``: Fail the run with its reason (transcript told, audited under
        p_event, lease released).  ``reason`` is cut to 2,000 characters.
        """
        ...

    async def stop_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str = "stop requested",
    ) -> models.RunEnded:
        """``ticketiq.stop_run``: End the run as stopped (transcript told, audited, lease
        released).  ``reason`` is cut to 2,000 characters.
        """
        ...

    # -- a vendor's limits (ticketiq_pg.agent.VendorLimit) ---------------------

    async def take_vendor_token(
        self, vendor: str, run_id: uuid.UUID, epoch: int, call_id: str, owner: str | None,
    ) -> tuple[bool, float, bool]:
        """``ticketiq.take_vendor_token``: A vendor token for one call now (True, 0), or the
        seconds to wait (False, seconds); whether it counts in flight.  Fenced.
        """
        ...

    async def give_vendor_token(self, run_id: uuid.UUID, call_id: str) -> bool:
        """``ticketiq.give_vendor_token``: The call ended: no longer in flight."""
        ...

    async def suspend_for_vendor(
        self, vendor: str, run_id: uuid.UUID, epoch: int, call_id: str, owner: str | None,
    ) -> dict[str, Any]:
        """``ticketiq.suspend_for_vendor``: The run gives its lease up until its turn for a
        token of the vendor (a timer wakes it).  Fenced.
        """
        ...

    async def slow_vendor(self, vendor: str, owner: str | None, seconds: float) -> bool:
        """``ticketiq.slow_vendor``: The vendor asked to wait (429/503 with Retry-After):
        every process waits until then.
        """
        ...
