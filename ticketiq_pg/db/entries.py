"""The functions of entry points: the durable inbox and the crons that fill it."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Transport


class EntryFunctions:
    """One method per SQL function of the inbox and crons (``TicketIQ.entries``)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport



    async def accept_entry(
        self,
        kind: str,
        sender_id: str,
        payload: dict[str, Any],
        *,
        owner: str,
        run_as: str,
        channel: str,
        may_wait: bool = False,
        durable: bool = True,
        priority: int = 0,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.AcceptedEntry:
        """``ticketiq.accept_entry``: Write a request to the durable inbox keyed by (kind,
        owner, sender id); ``priority`` (-1000..1000, higher first) orders the runs waiting
        to start.
        """
        return await self._t.one(
            models.AcceptedEntry,
            "accept_entry",
            (kind, sender_id, Jsonb(payload), owner, run_as, channel, may_wait, durable,
             priority),
            conn,
        )


    async def claim_entries(
        self,
        holder: str,
        ttl: float,
        limit: int = 10,
        *,
        min_age: float = 0.0,
        owner_limit: int | None = None,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.ClaimedEntry]:
        """``ticketiq.claim_entries``: Claim pending entries (SKIP LOCKED; by priority, then
        each owner's oldest before any owner's second; an owner with ``owner_limit`` runs in
        flight waits) and start each one's run held by p_holder, in one statement.
        """
        return await self._t.many(
            models.ClaimedEntry, "claim_entries", (holder, ttl, limit, min_age, owner_limit),
            conn,
        )


    async def get_entry(
        self, kind: str, sender_id: str, *, owner: str | None = None,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Entry | None:
        """``ticketiq.get_entry``: An entry by (kind, sender id, owner) with its run's status
        and sealed answer (sender ids are each owner's own; ``owner`` None: the oldest of
        any owner's).
        """
        rows = await self._t.many(models.Entry, "get_entry", (kind, sender_id, owner), conn)
        return rows[0] if rows else None


    async def get_entry_by_run(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.EntryOfRun | None:
        """``ticketiq.get_entry_by_run``: The entry of a run id (a pending one too) with its
        owner, run-as, run status and sealed answer.
        """
        rows = await self._t.many(models.EntryOfRun, "get_entry_by_run", (run_id,), conn)
        return rows[0] if rows else None


    async def upsert_cron_schedule(
        self,
        name: str,
        every_seconds: float,
        payload: dict[str, Any],
        *,
        owner: str,
        run_as: str,
        channel: str = "cron",
        first_at: Any = None,
        enabled: bool = True,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CronSchedule:
        """``ticketiq.upsert_cron_schedule``: Create or change a cron schedule firing every
        p_every_seconds.
        """
        return await self._t.one(
            models.CronSchedule,
            "upsert_cron_schedule",
            (name, every_seconds, Jsonb(payload), owner, run_as, channel, first_at, enabled),
            conn,
        )


    async def fire_due_crons(
        self, durable: bool = True, limit: int = 100, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.CronFire]:
        """``ticketiq.fire_due_crons``: Write one cron entry per due schedule (each fire once, SKIP
        LOCKED) and advance it.
        """
        return await self._t.many(models.CronFire, "fire_due_crons", (durable, limit), conn)


