"""The functions of approvals, delegation, waits, entry points, crons and deliveries."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Transport, reason_param


class EntryFunctions(Transport):
    """One method per SQL function of approvals, delegation, waits, entries and crons."""


    # -- approvals --------------------------------------------------------

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
        return await self.one(
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
        return await self.one(
            models.Approval, "decide_approval", (approval_id, approve, actor, reason_param(reason)),
            conn,
        )


    async def get_approval(
        self, approval_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.Approval:
        """``ticketiq.get_approval``: The state of an approval request (waiting, approved,
        rejected).
        """
        return await self.one(models.Approval, "get_approval", (approval_id,), conn)


    # -- delegation -------------------------------------------------------

    async def delegation_status(
        self, delegation_key: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.ChildRun | None:
        """``ticketiq.delegation_status``: The child run of a delegation key: status, lease
        lapsed?, sealed answer.
        """
        rows = await self.many(models.ChildRun, "delegation_status", (delegation_key,), conn)
        return rows[0] if rows else None


    async def take_over_child(
        self,
        parent_run_id: uuid.UUID,
        parent_epoch: int,
        child_run_id: uuid.UUID,
        holder: str,
        ttl: float,
        *,
        max_losses: int = 2,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.AdoptedRun | None:
        """``ticketiq.take_over_child``: A resumed parent takes over its child whose lease lapsed
        (CAS like a sweep, then adopt), once.
        """
        rows = await self.many(
            models.AdoptedRun,
            "take_over_child",
            (parent_run_id, parent_epoch, child_run_id, holder, ttl, max_losses),
            conn,
        )
        return rows[0] if rows else None


    # -- waiting ----------------------------------------------------------

    async def suspend_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        wait_key: str,
        detail: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Suspended:
        """``ticketiq.suspend_run``: A run that may wait gives its lease up until the event
        p_wait_key names.
        """
        return await self.one(
            models.Suspended, "suspend_run", (run_id, epoch, wait_key, Jsonb(detail or {})), conn
        )


    async def wake_runs(self, wait_key: str, *, conn: psycopg.AsyncConnection | None = None) -> int:
        """``ticketiq.wake_runs``: Wake every run suspended on p_wait_key (claimed, epoch + 1,
        NOTIFY ticketiq_resume).
        """
        return int(await self.scalar("wake_runs", (wait_key,), conn))


    # -- entry points -----------------------------------------------------

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
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.AcceptedEntry:
        """``ticketiq.accept_entry``: Write a request to the durable inbox keyed by (kind,
        owner, sender id).
        """
        return await self.one(
            models.AcceptedEntry,
            "accept_entry",
            (kind, sender_id, Jsonb(payload), owner, run_as, channel, may_wait, durable),
            conn,
        )


    async def claim_entries(
        self,
        holder: str,
        ttl: float,
        limit: int = 10,
        *,
        min_age: float = 0.0,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.ClaimedEntry]:
        """``ticketiq.claim_entries``: Claim pending entries (SKIP LOCKED) and start each one's run
        held by p_holder, in one statement.
        """
        return await self.many(
            models.ClaimedEntry, "claim_entries", (holder, ttl, limit, min_age), conn
        )


    async def get_entry(
        self, kind: str, sender_id: str, *, owner: str | None = None,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Entry | None:
        """``ticketiq.get_entry``: An entry by (kind, sender id, owner) with its run's status
        and sealed answer (sender ids are each owner's own; ``owner`` None: the oldest of
        any owner's).
        """
        rows = await self.many(models.Entry, "get_entry", (kind, sender_id, owner), conn)
        return rows[0] if rows else None


    async def get_entry_by_run(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.EntryOfRun | None:
        """``ticketiq.get_entry_by_run``: The entry of a run id (a pending one too) with its
        owner, run-as, run status and sealed answer.
        """
        rows = await self.many(models.EntryOfRun, "get_entry_by_run", (run_id,), conn)
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
        return await self.one(
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
        return await self.many(models.CronFire, "fire_due_crons", (durable, limit), conn)


    async def mark_delivery(
        self, run_id: uuid.UUID, epoch: int, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.DeliveryMark:
        """``ticketiq.mark_delivery``: Mark that a sealed answer's delivery is about to be sent
        (read it back on resume before posting).
        """
        return await self.one(models.DeliveryMark, "mark_delivery", (run_id, epoch), conn)
