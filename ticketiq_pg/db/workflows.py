"""The functions of workflow runs' durable waits: timers and signals (schema 15)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Transport


class WorkflowFunctions(Transport):
    """One method per SQL function of workflow waits."""

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
        return await self.one(
            models.WaitOutcome, "wait_run",
            (run_id, epoch, step_key, wait_key, seconds, Jsonb(detail or {})), conn,
        )

    async def fire_due_timers(
        self, limit: int = 100, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.TimerFired]:
        """``ticketiq.fire_due_timers``: Fire each due workflow timer once and wake the run
        suspended on it."""
        return await self.many(models.TimerFired, "fire_due_timers", (limit,), conn)

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
        return await self.one(
            models.SignalSent, "send_signal", (run_id, name, Jsonb(payload), sender_key, actor),
            conn,
        )
