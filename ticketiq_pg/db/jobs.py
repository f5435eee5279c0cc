"""The job functions: one method per SQL function of ``ticketiq.jobs`` (schema version 4).

A job is queued by ``enqueue_job`` and claimed by any process's
:class:`~ticketiq_pg.runtime.jobs.JobWorker`; every write of an attempt is fenced by
epoch exactly like a run's (TQ002 / TQ003).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db.transport import reason_param

if TYPE_CHECKING:
    from ticketiq_pg.db.transport import Transport

#: NOTIFY channel of ``enqueue_job`` and ``sweep_jobs`` (a job was queued).
JOB_CHANNEL = "ticketiq_job"

#: Whether a job of each known kind is resumable, when the caller does not say.
RESUMABLE_KINDS: Mapping[str, bool] = {
    "source_sync": True,
    "fine_tune": True,
    "classifier_training": False,
    "red_team": False,
}


# -- rows ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnqueuedJob:
    job_id: uuid.UUID
    created: bool  # false: the idempotency key found an existing job
    kind: str
    state: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    job_id: uuid.UUID
    kind: str
    resumable: bool
    payload: dict[str, Any]
    progress: dict[str, Any]
    epoch: int
    attempts: int
    lease_expires_at: datetime


@dataclass(frozen=True, slots=True)
class JobCheckpointed:
    job_id: uuid.UUID
    epoch: int
    checkpointed_at: datetime
    lease_expires_at: datetime


@dataclass(frozen=True, slots=True)
class JobLeaseRenewal:
    job_id: uuid.UUID
    epoch: int
    held: bool
    lease_expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class JobEnded:
    job_id: uuid.UUID
    state: str
    finished_at: datetime


@dataclass(frozen=True, slots=True)
class SweptJob:
    job_id: uuid.UUID
    kind: str
    epoch: int
    attempts: int
    state: str  # queued (resumable) or failed (interrupted)
    lapsed_holder: str | None
    lapsed_at: datetime | None


@dataclass(frozen=True, slots=True)
class Job:
    job_id: uuid.UUID
    kind: str
    resumable: bool
    state: str
    payload: dict[str, Any]
    progress: dict[str, Any]
    result: Any
    epoch: int
    holder: str | None
    lease_expires_at: datetime | None
    attempts: int
    idempotency_key: str | None
    failure_reason: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


# -- the store ------------------------------------------------------------------


def _object(value: Any) -> Jsonb | None:
    """A mapping as a JSON object; anything else as is, for the database to refuse (TQ004)."""
    if value is None:
        return None
    return Jsonb(dict(value) if isinstance(value, Mapping) else value)


class JobStore:
    """One method per job function, through the driver's transport.

    Each method sends one statement and raises the typed errors of
    :mod:`ticketiq_pg.errors` (``UnknownJob`` for TQ010).  Pass ``conn`` to
    run inside your own transaction.
    """

    def __init__(self, db: Transport) -> None:
        self.db = db

    async def enqueue(
        self,
        kind: str,
        payload: Mapping[str, Any] | None = None,
        *,
        resumable: bool | None = None,
        idempotency_key: str | None = None,
        conn: psycopg.AsyncConnection | None = None,
    ) -> EnqueuedJob:
        """Queue a job; ``resumable`` defaults to :data:`RESUMABLE_KINDS` for known kinds."""
        if resumable is None:
            if kind not in RESUMABLE_KINDS:
                raise ValueError(f"say whether a {kind!r} job is resumable")
            resumable = RESUMABLE_KINDS[kind]
        return await self.db.one(
            EnqueuedJob,
            "enqueue_job",
            (kind, _object({} if payload is None else payload), resumable, idempotency_key),
            conn,
        )

    async def claim(
        self,
        holder: str,
        ttl: float,
        kinds: Sequence[str] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> ClaimedJob | None:
        rows = await self.db.many(
            ClaimedJob,
            "claim_job",
            (holder, ttl, None if kinds is None else list(kinds)),
            conn,
        )
        return rows[0] if rows else None

    async def checkpoint(
        self,
        job_id: uuid.UUID,
        epoch: int,
        progress: Mapping[str, Any],
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> JobCheckpointed:
        return await self.db.one(
            JobCheckpointed,
            "checkpoint_job",
            (job_id, epoch, _object(progress)),
            conn,
        )

    async def renew(
        self,
        holder: str,
        held: Sequence[tuple[uuid.UUID, int]],
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[JobLeaseRenewal]:
        """``ticketiq.renew_leases`` (kind ``job``): the one renewal, for the jobs listed."""
        rows = await self.db.rows(
            "renew_leases",
            (holder, [job_id for job_id, _ in held], [epoch for _, epoch in held], ttl, "job"),
            conn,
        )
        return [JobLeaseRenewal(r["lease_id"], r["epoch"], r["held"], r["lease_expires_at"])
                for r in rows]

    async def finish(
        self,
        job_id: uuid.UUID,
        epoch: int,
        result: Any = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> JobEnded:
        """Complete the job; ``result`` is any JSON value (None is JSON null)."""
        return await self.db.one(JobEnded, "finish_job", (job_id, epoch, Jsonb(result)), conn)

    async def fail(
        self,
        job_id: uuid.UUID,
        epoch: int,
        reason: str,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> JobEnded:
        """Fail the job with its reason, cut to 2,000 characters."""
        return await self.db.one(JobEnded, "fail_job", (job_id, epoch, reason_param(reason)),
                                 conn)

    async def sweep(
        self,
        sweeper: str,
        limit: int = 1000,
        *,
        max_losses: int = 2,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[SweptJob]:
        return await self.db.many(SweptJob, "sweep_jobs", (sweeper, limit, max_losses), conn)

    async def get(
        self, job_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> Job:
        return await self.db.one(Job, "get_job", (job_id,), conn)
