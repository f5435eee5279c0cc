"""The thin driver: one async method per ``ticketiq`` SQL function.

Each method sends exactly one statement, ``SELECT * FROM ticketiq.fn(...)``,
maps the rows to the dataclasses of :mod:`ticketiq_pg.models` and turns every
documented SQLSTATE into the typed exceptions of :mod:`ticketiq_pg.errors`.

Every method takes an optional ``conn``: pass an open ``AsyncConnection`` to
run the call inside your own transaction; without one, the call takes an
autocommit connection from the pool, so it commits on its own.

``statements`` counts the statements sent per function, so tests and the
benchmark can prove how many round trips a step costs.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from . import errors, models

T = TypeVar("T")

#: Schema versions this driver knows how to talk to.
KNOWN_SCHEMA_VERSIONS = frozenset({5})

#: NOTIFY channels the functions use.
RESUME_CHANNEL = "ticketiq_resume"
LEADER_CHANNEL = "ticketiq_leader"
FINISHED_CHANNEL = "ticketiq_run_finished"
STOP_CHANNEL = "ticketiq_stop"
APPROVAL_CHANNEL = "ticketiq_approval"
ENTRY_CHANNEL = "ticketiq_entry"


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


class TicketIQ:
    """Async client of the ``ticketiq`` schema.

    Build one with :meth:`connect` (it opens its own pool and checks the
    schema version) or hand it an existing ``AsyncConnectionPool`` whose
    connections are in autocommit mode.
    """

    def __init__(self, pool: AsyncConnectionPool | None = None) -> None:
        self.pool = pool
        self._own_pool = False
        self.statements: Counter[str] = Counter()

    @classmethod
    async def connect(
        cls,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        check_schema: bool = True,
        **pool_kwargs: Any,
    ) -> TicketIQ:
        pool_kwargs.setdefault("check", AsyncConnectionPool.check_connection)
        pool = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=False,
            **pool_kwargs,
        )
        await pool.open(wait=True)
        client = cls(pool)
        client._own_pool = True
        if check_schema:
            try:
                await client.check_schema()
            except BaseException:
                await client.close()
                raise
        return client

    async def close(self) -> None:
        if self.pool is not None and self._own_pool:
            await self.pool.close()

    async def __aenter__(self) -> TicketIQ:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- plumbing ---------------------------------------------------------

    async def _rows(
        self,
        function: str,
        args: Sequence[Any],
        conn: psycopg.AsyncConnection | None,
    ) -> list[dict[str, Any]]:
        placeholders = ", ".join(["%s"] * len(args))
        query = f"SELECT * FROM ticketiq.{function}({placeholders})"
        self.statements[function] += 1
        try:
            if conn is not None:
                async with conn.cursor(row_factory=dict_row) as cur:
                    await cur.execute(query, args)
                    return await cur.fetchall()
            if self.pool is None:
                raise RuntimeError("TicketIQ has no pool: pass conn= or use TicketIQ.connect()")
            async with self.pool.connection() as pooled, pooled.cursor(row_factory=dict_row) as cur:
                await cur.execute(query, args)
                return await cur.fetchall()
        except psycopg.Error as exc:
            translated = errors.translate(exc)
            if translated is exc:
                raise
            raise translated from exc

    async def _one(
        self,
        model: type[T],
        function: str,
        args: Sequence[Any],
        conn: psycopg.AsyncConnection | None,
    ) -> T:
        rows = await self._rows(function, args, conn)
        return models.from_row(model, rows[0])

    async def _many(
        self,
        model: type[T],
        function: str,
        args: Sequence[Any],
        conn: psycopg.AsyncConnection | None,
    ) -> list[T]:
        return [models.from_row(model, row) for row in await self._rows(function, args, conn)]

    async def _scalar(
        self, function: str, args: Sequence[Any], conn: psycopg.AsyncConnection | None
    ) -> Any:
        rows = await self._rows(function, args, conn)
        return next(iter(rows[0].values()))

    # -- schema -----------------------------------------------------------

    async def schema_version(self, conn: psycopg.AsyncConnection | None = None) -> int | None:
        return await self._scalar("schema_version", (), conn)

    async def check_schema(self, conn: psycopg.AsyncConnection | None = None) -> int:
        """Return the schema version, or raise SchemaVersionMismatch if unknown."""
        try:
            version = await self.schema_version(conn)
        except (psycopg.errors.UndefinedFunction, psycopg.errors.InvalidSchemaName) as exc:
            raise errors.SchemaVersionMismatch(
                "schema ticketiq is not installed: run `ticketiq-pg migrate`"
            ) from exc
        if version not in KNOWN_SCHEMA_VERSIONS:
            newest = max(KNOWN_SCHEMA_VERSIONS)
            advice = (
                "run `ticketiq-pg migrate`"
                if version is not None and version < newest
                else "upgrade ticketiq_pg"
            )
            raise errors.SchemaVersionMismatch(
                f"database schema version {version} is not one this driver knows "
                f"({sorted(KNOWN_SCHEMA_VERSIONS)}): {advice}"
            )
        return version

    async def now(self, conn: psycopg.AsyncConnection | None = None) -> Any:
        """The database clock that decides leases (``ticketiq.now()``)."""
        return await self._scalar("now", (), conn)

    # -- runs -------------------------------------------------------------

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
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.StartedRun:
        return await self._one(
            models.StartedRun,
            "start_run",
            (
                holder,
                owner,
                run_as,
                channel,
                entry_point,
                may_wait,
                ttl,
                Jsonb({} if input is None else input),
                correlation_id,
                idempotency_key,
                Jsonb({} if meta is None else meta),
                run_id,
                parent_run_id,
                durable,
            ),
            conn,
        )

    async def write_checkpoint(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        body: dict[str, Any],
        seal: str,
        seal_key_id: str,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CheckpointWritten:
        return await self._one(
            models.CheckpointWritten,
            "write_checkpoint",
            (run_id, epoch, step, _json(body), seal, seal_key_id),
            conn,
        )

    async def mark_in_doubt(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        call_id: str,
        classification: str | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CallMark:
        return await self._one(
            models.CallMark,
            "mark_in_doubt",
            (run_id, epoch, step, call_id, classification),
            conn,
        )

    async def record_outcome(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        call_id: str,
        outcome: Any,
        settlement: str = "made",
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CallOutcome:
        return await self._one(
            models.CallOutcome,
            "record_outcome",
            (run_id, epoch, step, call_id, _json(outcome), settlement),
            conn,
        )

    async def renew_leases(
        self,
        holder: str,
        held: Sequence[tuple[uuid.UUID, int]],
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.LeaseRenewal]:
        run_ids = [run_id for run_id, _ in held]
        epochs = [epoch for _, epoch in held]
        return await self._many(
            models.LeaseRenewal, "renew_leases", (holder, run_ids, epochs, ttl), conn
        )

    async def sweep_lapsed(
        self,
        sweeper: str,
        *,
        max_losses: int = 2,
        limit: int = 1000,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.SweptRun]:
        return await self._many(
            models.SweptRun, "sweep_lapsed", (sweeper, max_losses, limit), conn
        )

    async def adopt_run(
        self,
        holder: str,
        ttl: float,
        run_id: uuid.UUID | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.AdoptedRun | None:
        rows = await self._many(models.AdoptedRun, "adopt_run", (holder, ttl, run_id), conn)
        return rows[0] if rows else None

    async def release_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str = "shutdown",
        outcomes: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Released:
        return await self._one(
            models.Released, "release_run", (run_id, epoch, reason, Jsonb(outcomes or {})), conn
        )

    async def seal_answer(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        body: Any,
        seal: str,
        seal_key_id: str,
        retain: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.SealedAnswer:
        return await self._one(
            models.SealedAnswer,
            "seal_answer",
            (run_id, epoch, step, _json(body), seal, seal_key_id, retain),
            conn,
        )

    async def hand_on_answer(
        self, run_id: uuid.UUID, epoch: int, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.HandedOn:
        return await self._one(models.HandedOn, "hand_on_answer", (run_id, epoch), conn)

    async def fail_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str,
        event: str = "agent.run.failed",
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.RunEnded:
        return await self._one(models.RunEnded, "fail_run", (run_id, epoch, reason, event), conn)

    async def stop_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str = "stop requested",
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.RunEnded:
        return await self._one(models.RunEnded, "stop_run", (run_id, epoch, reason), conn)

    async def request_stop(
        self,
        run_id: uuid.UUID,
        actor: str,
        reason: str | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.StopRequest:
        return await self._one(models.StopRequest, "request_stop", (run_id, actor, reason), conn)

    async def record_resume(
        self,
        run_id: uuid.UUID,
        epoch: int,
        settlements: Sequence[dict[str, Any]] = (),
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.ResumeAudited:
        return await self._one(
            models.ResumeAudited,
            "record_resume",
            (run_id, epoch, Jsonb(list(settlements))),
            conn,
        )

    # -- processes and leadership -----------------------------------------

    async def register_process(
        self,
        process_id: str,
        host: str | None = None,
        os_pid: int | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.ProcessRegistration:
        return await self._one(
            models.ProcessRegistration, "register_process", (process_id, host, os_pid), conn
        )

    async def claim_leader(
        self,
        name: str,
        holder: str,
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.LeaderLease:
        return await self._one(models.LeaderLease, "claim_leader", (name, holder, ttl), conn)

    async def renew_leader(
        self,
        name: str,
        holder: str,
        epoch: int,
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> bool:
        return bool(await self._scalar("renew_leader", (name, holder, epoch, ttl), conn))

    async def resign_leader(
        self, name: str, holder: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> bool:
        return bool(await self._scalar("resign_leader", (name, holder), conn))

    async def purge_answers(
        self, limit: int = 1000, *, conn: psycopg.AsyncConnection | None = None
    ) -> int:
        return int(await self._scalar("purge_answers", (limit,), conn))

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
        return await self._one(
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
        return await self._one(
            models.Approval, "decide_approval", (approval_id, approve, actor, reason), conn
        )

    async def get_approval(
        self, approval_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.Approval:
        return await self._one(models.Approval, "get_approval", (approval_id,), conn)

    # -- delegation -------------------------------------------------------

    async def delegation_status(
        self, delegation_key: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.ChildRun | None:
        rows = await self._many(models.ChildRun, "delegation_status", (delegation_key,), conn)
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
        rows = await self._many(
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
        return await self._one(
            models.Suspended, "suspend_run", (run_id, epoch, wait_key, Jsonb(detail or {})), conn
        )

    async def wake_runs(self, wait_key: str, *, conn: psycopg.AsyncConnection | None = None) -> int:
        return int(await self._scalar("wake_runs", (wait_key,), conn))

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
        return await self._one(
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
        return await self._many(
            models.ClaimedEntry, "claim_entries", (holder, ttl, limit, min_age), conn
        )

    async def get_entry(
        self, kind: str, sender_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.Entry | None:
        rows = await self._many(models.Entry, "get_entry", (kind, sender_id), conn)
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
        return await self._one(
            models.CronSchedule,
            "upsert_cron_schedule",
            (name, every_seconds, Jsonb(payload), owner, run_as, channel, first_at, enabled),
            conn,
        )

    async def fire_due_crons(
        self, durable: bool = True, limit: int = 100, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.CronFire]:
        return await self._many(models.CronFire, "fire_due_crons", (durable, limit), conn)

    async def mark_delivery(
        self, run_id: uuid.UUID, epoch: int, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.DeliveryMark:
        return await self._one(models.DeliveryMark, "mark_delivery", (run_id, epoch), conn)

    # -- reading runs -----------------------------------------------------

    async def get_run(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.RunView:
        return await self._one(models.RunView, "get_run", (run_id,), conn)

    async def run_transcript(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.TranscriptLine]:
        return await self._many(models.TranscriptLine, "run_transcript", (run_id,), conn)
