"""The functions of what a run waits for: a person's approval, a child run, a workflow's
timer or signal, and the wakes that end a wait."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Transport, reason_param


class WaitFunctions:
    """One method per SQL function of waits (``TicketIQ.waits``)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def wait_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step_key: str,
        wait_key: str,
        seconds: float | None = None,
        detail: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.WaitOutcome:
        """``ticketiq.wait_run``: A workflow step waits for its timer or a signal: answers
        signal/due/timeout at once when the wait is over, else suspends the run (fenced)."""
        return await self._t.one(
            models.WaitOutcome, "wait_run",
            (run_id, epoch, step_key, wait_key, seconds, Jsonb(detail or {})), conn,
        )

    async def fire_due_timers(
        self, limit: int = 100, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.TimerFired]:
        """``ticketiq.fire_due_timers``: Fire each due workflow timer once and wake the run
        suspended on it."""
        return await self._t.many(models.TimerFired, "fire_due_timers", (limit,), conn)

    async def send_signal(
        self,
        run_id: uuid.UUID,
        name: str,
        payload: Any,
        sender_key: str,
        actor: str | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.SignalSent:
        """``ticketiq.send_signal``: Deliver a signal once per (run, name, sender key) and
        wake the run if it waits for it."""
        return await self._t.one(
            models.SignalSent, "send_signal", (run_id, name, Jsonb(payload), sender_key, actor),
            conn,
        )

    async def request_approval(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        call_id: str,
        summary: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Approval:
        """``ticketiq.request_approval``: File one approval request per held call, or return the
        one already filed (coalesced), decided or not.
        """
        return await self._t.one(
            models.Approval,
            "request_approval",
            (run_id, epoch, step, call_id, Jsonb(summary or {})),
            conn,
        )

    async def decide_approval(
        self,
        approval_id: uuid.UUID,
        approve: bool,
        actor: str,
        reason: str | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Approval:
        """``ticketiq.decide_approval``: A person approves or rejects a held call (not fenced);
        ``reason`` is cut to 2,000 characters."""
        return await self._t.one(
            models.Approval, "decide_approval", (approval_id, approve, actor, reason_param(reason)),
            conn,
        )

    async def get_approval(
        self, approval_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.Approval:
        """``ticketiq.get_approval``: The state of an approval request (waiting, approved,
        rejected).
        """
        return await self._t.one(models.Approval, "get_approval", (approval_id,), conn)

    async def delegation_status(
        self, delegation_key: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.ChildRun | None:
        """``ticketiq.delegation_status``: The child run of a delegation key: status, lease
        lapsed?, sealed answer.
        """
        rows = await self._t.many(models.ChildRun, "delegation_status", (delegation_key,), conn)
        return rows[0] if rows else None

    async def await_first(
        self,
        run_id: uuid.UUID,
        epoch: int,
        group: str,
        children: list[uuid.UUID],
        detail: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.FirstEnd:
        """``ticketiq.await_first``: The first of several child runs to end (written once),
        else the run suspends (or, if it may not wait, waits) until one does (fenced)."""
        return await self._t.one(
            models.FirstEnd, "await_first",
            (run_id, epoch, group, children, Jsonb(detail or {})), conn,
        )

    async def wake_runs(self, wait_key: str, *, conn: psycopg.AsyncConnection | None = None) -> int:
        """``ticketiq.wake_runs``: Wake every run suspended on p_wait_key (claimed, epoch + 1,
        NOTIFY ticketiq_resume).
        """
        return int(await self._t.scalar("wake_runs", (wait_key,), conn))
