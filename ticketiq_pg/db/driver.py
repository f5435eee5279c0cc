"""The thin driver: one async method per ``ticketiq`` SQL function.

Each method sends exactly one statement, ``SELECT * FROM ticketiq.fn(...)``,
maps the rows to the dataclasses of :mod:`ticketiq_pg.db.rows` and turns every
documented SQLSTATE into the typed exceptions of :mod:`ticketiq_pg.errors`.

Every method takes an optional ``conn``: pass an open ``AsyncConnection`` to
run the call inside your own transaction; without one, the call takes an
autocommit connection from the pool, so it commits on its own.

``statements`` counts the statements sent per function, so tests and the
benchmark can prove how many round trips a step costs.

A call made from the pool whose connection fails (the primary was killed,
a failover is under way) is sent again, on a fresh connection through the
same (multi-host) conninfo, where a repeat is harmless: the rules per
function and their reasons are in :mod:`ticketiq_pg.db.retry`.  A repeat that
raises because the interrupted first attempt did commit (the run is
completed, the resume audited, ...) is recognised by a ``_recognise_*``
method below, which reads the run back and returns what the first attempt
did.  ``retries`` and ``recognised`` count both per function.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ticketiq_pg import errors
from ticketiq_pg.db import retry
from ticketiq_pg.db import rows as models
from ticketiq_pg.db.audit import AuditFunctions
from ticketiq_pg.db.entries import EntryFunctions
from ticketiq_pg.db.group_commit import DEFAULT_GROUP, CheckpointBatcher, ResumeBatcher
from ticketiq_pg.db.jobs import JobStore
from ticketiq_pg.db.keys import KeyFunctions
from ticketiq_pg.db.manage import ManageFunctions
from ticketiq_pg.db.processes import ProcessFunctions
from ticketiq_pg.db.recognisers import BY_FUNCTION
from ticketiq_pg.db.transport import (
    FailoverConnection,
    Transport,
    json_array_param,
    json_param,
    reason_param,
)
from ticketiq_pg.db.waits import WaitFunctions
from ticketiq_pg.seal import JsonText

#: Schema versions this driver knows how to talk to.
KNOWN_SCHEMA_VERSIONS = frozenset({26})

#: NOTIFY channels the functions use.
RESUME_CHANNEL = "ticketiq_resume"
LEADER_CHANNEL = "ticketiq_leader"
FINISHED_CHANNEL = "ticketiq_run_finished"
STOP_CHANNEL = "ticketiq_stop"
APPROVAL_CHANNEL = "ticketiq_approval"
ENTRY_CHANNEL = "ticketiq_entry"


class TicketIQ(Transport):
    """Async client of the ``ticketiq`` schema: one method per SQL function.

    A run's own functions (its start, checkpoints, marks, outcomes, adoption, answer,
    end and the writes its attempt makes on the way) are methods of this class; the
    rest are grouped by what they serve, each a part holding this transport:
    :attr:`processes` (leases, the sweep, the leader, liveness, retention),
    :attr:`waits` (approvals, delegations, workflow timers and signals, wakes),
    :attr:`entries` (the inbox and crons), :attr:`keys` (the front's API keys),
    :attr:`audit` (the inspector's audit, losses, trace contexts) and :attr:`jobs`.

    Build one with :meth:`connect` (it opens its own pool and checks the schema
    version) or hand it an existing ``AsyncConnectionPool`` whose connections are in
    autocommit mode.  Every method takes an optional ``conn``: pass an open
    ``AsyncConnection`` to run the call inside your own transaction.
    """

    recognisers = BY_FUNCTION

    def __init__(
        self,
        pool: AsyncConnectionPool | None = None,
        *,
        retry_policy: retry.RetryPolicy | None = None,
        group_commit: bool = True,
        group_size: int = DEFAULT_GROUP,
    ) -> None:
        super().__init__(pool, retry_policy=retry_policy)
        #: Pooled checkpoints of runs that step at the same moment share one
        #: statement (:mod:`ticketiq_pg.db.group_commit`); None: one each.
        self.checkpoints: CheckpointBatcher | None = (
            CheckpointBatcher(self, group=group_size) if group_commit else None
        )
        #: Pooled settlements of runs resumed at the same moment share one statement.
        self.resumes: ResumeBatcher | None = (
            ResumeBatcher(self, group=group_size) if group_commit else None
        )
        self.processes = ProcessFunctions(self)
        self.waits = WaitFunctions(self)
        self.entries = EntryFunctions(self)
        self.keys = KeyFunctions(self)
        self.audit = AuditFunctions(self)
        #: A person's acts on runs as a whole: the list, a Stop by filter, restart, fork.
        self.manage = ManageFunctions(self)
        #: The job functions: ``await tq.jobs.enqueue("backlog", {...}, resumable=True,
        #: idempotency_key=key)`` queues a job; ``await tq.jobs.get(job_id)`` reads one.
        self.jobs = JobStore(self)

    @classmethod
    async def connect(
        cls,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        check_schema: bool = True,
        retry_policy: retry.RetryPolicy | None = None,
        group_commit: bool = True,
        group_size: int = DEFAULT_GROUP,
        prepared: bool = True,
        **pool_kwargs: Any,
    ) -> TicketIQ:
        """Open a pool on ``conninfo`` and check the schema version (SchemaVersionMismatch).

        ``prepared=False``: the pool's connections never prepare a statement (psycopg
        prepares one run 5 times on a session), for a transaction-mode pooler that
        hands the session to another client after every transaction."""
        client = cls(retry_policy=retry_policy, group_commit=group_commit, group_size=group_size)
        pool_kwargs.setdefault("check", client._check_pooled)
        pool_kwargs.setdefault("connection_class", FailoverConnection)
        pool = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            # UTF-8 whatever the database's encoding: psycopg reads and writes JSON as UTF-8
            kwargs={"autocommit": True, "client_encoding": "UTF8",
                    **({} if prepared else {"prepare_threshold": None})},
            open=False,
            **pool_kwargs,
        )
        await pool.open(wait=True)
        client.pool = pool
        client._own_pool = True
        if check_schema:
            try:
                await client.check_schema()
            except BaseException:
                await client.close()
                raise
        return client

    async def close(self) -> None:
        """Write the checkpoints and settlements still grouped, then close the pool if this
        client opened it."""
        if self.checkpoints is not None:
            await self.checkpoints.drain()
        if self.resumes is not None:
            await self.resumes.drain()
        await super().close()


    # -- schema -----------------------------------------------------------

    async def schema_version(self, conn: psycopg.AsyncConnection | None = None) -> int | None:
        """``ticketiq.schema_version``: The highest migration applied to this database."""
        return await self.scalar("schema_version", (), conn)

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
        return await self.scalar("now", (), conn)

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
        """``ticketiq.start_run``: Start a run holding lease checkpoint:<run id> at epoch 1."""
        # Named here rather than by the database, so a repeat after a lost
        # connection can recognise the run its first attempt started.
        if run_id is None:
            run_id = uuid.uuid4()
        return await self.one(
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
        body: dict[str, Any] | JsonText,
        seal: str,
        seal_key_id: str,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CheckpointWritten:
        """Write the checkpoint of ``step``; on the pool, grouped with other runs' ones.

        With ``conn`` (the caller's transaction) or without group commit it is
        one ``write_checkpoint`` statement; on the pool it goes through
        :attr:`checkpoints`, which sends it alone when nothing is in flight and
        otherwise with the checkpoints that queued meanwhile.  Either way it
        is written (or refused, with the same typed error) before this returns.
        """
        checkpoint = (run_id, epoch, step, body, seal, seal_key_id)
        if conn is None and self.checkpoints is not None and self.pool is not None:
            return await self.checkpoints.write(checkpoint)
        return await self.write_checkpoint_alone(*checkpoint, conn=conn)

    async def write_checkpoint_alone(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        body: dict[str, Any] | JsonText,
        seal: str,
        seal_key_id: str,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CheckpointWritten:
        """One ``ticketiq.write_checkpoint`` statement, never grouped."""
        return await self.one(
            models.CheckpointWritten,
            "write_checkpoint",
            (run_id, epoch, step, json_param(body), seal, seal_key_id),
            conn,
        )

    async def write_checkpoints(
        self,
        checkpoints: Sequence[tuple[uuid.UUID, int, int, Any, str, str]],
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> dict[int, models.CheckpointWritten]:
        """``ticketiq.write_checkpoints``: several runs' checkpoints in one statement.

        ``checkpoints`` holds ``(run_id, epoch, step, body, seal, seal_key_id)``
        tuples.  Returns the checkpoints written (``replayed`` false) by their
        index in ``checkpoints``; any other one was not written and goes through
        :meth:`write_checkpoint` on its own.
        """
        args = (
            [c[0] for c in checkpoints],
            [c[1] for c in checkpoints],
            [c[2] for c in checkpoints],
            json_array_param([c[3] for c in checkpoints]),  # one JSON array: no jsonb[] quoting
            [c[4] for c in checkpoints],
            [c[5] for c in checkpoints],
        )
        rows = await self.rows("write_checkpoints", args, conn)
        return {
            row["item"] - 1: models.CheckpointWritten(
                row["run_id"], row["step"], row["written_at"], row["lease_expires_at"],
                False, row["stop_requested"],
            )
            for row in rows
        }

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
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CallMark:
        """``ticketiq.mark_in_doubt``: Mark a changing call of the last step in doubt before it is
        made, with the runner's seal of the mark (fenced, idempotent).
        """
        return await self.one(
            models.CallMark,
            "mark_in_doubt",
            (run_id, epoch, step, call_id, classification, seal, seal_key_id),
            conn,
        )

    async def mark_calls_in_doubt(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        marks: Sequence[dict[str, Any]],
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.CallMark]:
        """``ticketiq.mark_calls_in_doubt``: Mark the changing calls a step makes at once in
        doubt, in one statement: each as mark_in_doubt marks one, all or none.

        ``marks``: one ``{"call_id", "classification", "seal", "seal_key_id"}`` a call.
        """
        return await self.many(
            models.CallMark, "mark_calls_in_doubt", (run_id, epoch, step, Jsonb(list(marks))),
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
        seal: str | None = None,
        seal_key_id: str | None = None,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.CallOutcome:
        """``ticketiq.record_outcome``: Record a call's outcome and how it was settled, with the
        runner's seal of it (fenced; idempotent for the same outcome)."""
        return await self.one(
            models.CallOutcome,
            "record_outcome",
            (run_id, epoch, step, call_id, json_param(outcome), settlement, seal, seal_key_id),
            conn,
        )

    async def adopt_run(
        self,
        holder: str,
        ttl: float,
        run_id: uuid.UUID | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.AdoptedRun | None:
        """``ticketiq.adopt_run``: Adopt one claimed run (SKIP LOCKED, epoch + 1, lease to
        p_holder) and return it with its last checkpoint and any sealed answer.
        """
        rows = await self.many(models.AdoptedRun, "adopt_run", (holder, ttl, run_id), conn)
        return rows[0] if rows else None

    async def adopt_runs(
        self,
        holder: str,
        ttl: float,
        limit: int = 100,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.AdoptedRun]:
        """``ticketiq.adopt_runs``: Adopt up to ``limit`` claimed runs in one statement, each
        as ``adopt_run`` does, and return them (a dead peer's many runs in a few round trips).
        """
        return await self.many(models.AdoptedRun, "adopt_runs", (holder, ttl, limit), conn)

    async def release_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str = "shutdown",
        outcomes: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Released:
        """``ticketiq.release_run``: Hand a held run back (claimed, epoch + 1, no loss counted,
        known outcomes kept) and NOTIFY ticketiq_resume.  ``reason`` is cut to 2,000 characters.
        """
        args = (run_id, epoch, reason_param(reason), Jsonb(outcomes or {}))
        return await self.one(models.Released, "release_run", args, conn)

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
        """``ticketiq.seal_answer``: Seal a run's final answer (step = last step + 1), write-once
        and kept until the retention time.
        """
        return await self.one(
            models.SealedAnswer,
            "seal_answer",
            (run_id, epoch, step, json_param(body), seal, seal_key_id, retain),
            conn,
        )

    async def hand_on_answer(
        self, run_id: uuid.UUID, epoch: int, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.HandedOn:
        """``ticketiq.hand_on_answer``: Hand a sealed answer on at most once and complete the run
        (transcript, audit, lease released).
        """
        return await self.one(models.HandedOn, "hand_on_answer", (run_id, epoch), conn)

    async def fail_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str,
        event: str = "agent.run.failed",
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.RunEnded:
        """``ticketiq.fail_run``: Fail the run with its reason (transcript told, audited under
        p_event, lease released).  ``reason`` is cut to 2,000 characters.
        """
        args = (run_id, epoch, reason_param(reason), event)
        return await self.one(models.RunEnded, "fail_run", args, conn)

    async def stop_run(
        self,
        run_id: uuid.UUID,
        epoch: int,
        reason: str = "stop requested",
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.RunEnded:
        """``ticketiq.stop_run``: End the run as stopped (transcript told, audited, lease
        released).  ``reason`` is cut to 2,000 characters.
        """
        return await self.one(models.RunEnded, "stop_run", (run_id, epoch, reason_param(reason)),
                              conn)

    async def request_stop(
        self,
        run_id: uuid.UUID,
        actor: str,
        reason: str | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.StopRequest:
        """``ticketiq.request_stop``: Record a person's Stop for a run (not fenced)."""
        args = (run_id, actor, reason_param(reason))
        return await self.one(models.StopRequest, "request_stop", args, conn)

    async def record_resume(
        self,
        run_id: uuid.UUID,
        epoch: int,
        settlements: Sequence[dict[str, Any]] = (),
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.ResumeAudited:
        """``ticketiq.record_resume``: Record settlements of the calls the last step left, on
        their calls and on this resume's audit row (written at adoption), as they are decided.

        On the pool it goes through :attr:`resumes`, with the settlements of other
        resumes queued meanwhile (``ticketiq.record_resumes``); recorded, or refused with
        the same typed error, before this returns.
        """
        if conn is None and self.resumes is not None and self.pool is not None:
            return await self.resumes.write((run_id, epoch, settlements))
        return await self.record_resume_alone(run_id, epoch, settlements, conn=conn)

    async def record_resume_alone(
        self,
        run_id: uuid.UUID,
        epoch: int,
        settlements: Sequence[dict[str, Any]] = (),
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.ResumeAudited:
        """One ``ticketiq.record_resume`` statement, never grouped."""
        return await self.one(
            models.ResumeAudited,
            "record_resume",
            (run_id, epoch, Jsonb(list(settlements))),
            conn,
        )

    async def record_resumes(
        self,
        items: Sequence[tuple[uuid.UUID, int, Sequence[dict[str, Any]]]],
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> dict[int, models.ResumeAudited]:
        """``ticketiq.record_resumes``: several resumes' settlements in one statement.

        ``items`` holds ``(run_id, epoch, settlements)`` tuples.  Returns those
        recorded by their index in ``items``; any other one (its run's row locked
        at that moment, or listed twice) goes through :meth:`record_resume_alone`.
        """
        args = (
            [i[0] for i in items],
            [i[1] for i in items],
            json_array_param([list(i[2]) for i in items]),
        )
        rows = await self.rows("record_resumes", args, conn)
        return {
            row["item"] - 1: models.ResumeAudited(
                row["run_id"], row["step"], row["loss_count"], row["audit_id"]
            )
            for row in rows
        }

    # -- reading runs -----------------------------------------------------

    async def record_attempt(
        self,
        run_id: uuid.UUID,
        epoch: int,
        step: int,
        target: str,
        error: str,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.Attempt:
        """Count one failed attempt of ``target`` at ``step``; the count spans every epoch."""
        return await self.one(
            models.Attempt, "record_attempt", (run_id, epoch, step, target, error), conn
        )

    async def audit_once(
        self,
        run_id: uuid.UUID,
        epoch: int,
        event: str,
        key: str,
        detail: dict[str, Any],
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.AuditOnce:
        """Audit ``event`` once per run and ``key``; a repeat returns the first row's id."""
        return await self.one(
            models.AuditOnce, "audit_once", (run_id, epoch, event, key, json_param(detail)), conn
        )

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

    async def mark_delivery(
        self, run_id: uuid.UUID, epoch: int, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.DeliveryMark:
        """``ticketiq.mark_delivery``: Mark that a sealed answer's delivery is about to be sent
        (read it back on resume before posting).
        """
        return await self.one(models.DeliveryMark, "mark_delivery", (run_id, epoch), conn)

    async def get_run(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.RunView:
        """``ticketiq.get_run``: A run's status, lease, losses, last step, answer and failure
        reason.
        """
        return await self.one(models.RunView, "get_run", (run_id,), conn)

    async def get_answer(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.AnswerView | None:
        """The run's sealed answer with its seal, or None while it has none (UnknownRun)."""
        rows = await self.many(models.AnswerView, "get_answer", (run_id,), conn)
        return rows[0] if rows else None

    async def run_events_after(
        self, run_id: uuid.UUID, after: int = 0, limit: int = 1000, *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[dict[str, Any]]:
        """``ticketiq.run_events_after``: A run's durable events after event id ``after``,
        oldest first (``ticketiq_pg.db.events.RunEvent.from_row`` reads each row).
        """
        return await self.rows("run_events_after", (run_id, after, limit), conn)

    async def set_vendor_limit(
        self, vendor: str, rate: float | None, burst: int, concurrency: int | None,
        per: str = "all", set_by: str = "app",
    ) -> dict[str, Any]:
        """``ticketiq.set_vendor_limit``: Set a vendor's limits; the row as it stands (an
        operator's setting stays over the app's)."""
        rows = await self.rows("set_vendor_limit", (vendor, rate, burst, concurrency, per,
                                                    set_by), None)
        return rows[0]

    async def take_vendor_token(
        self, vendor: str, run_id: uuid.UUID, epoch: int, call_id: str, owner: str | None,
    ) -> tuple[bool, float, bool]:
        """``ticketiq.take_vendor_token``: A vendor token for one call now (True, 0), or
        the seconds to wait (False, seconds); and whether the call counts in flight (give
        it back when it ends)."""
        rows = await self.rows("take_vendor_token", (vendor, run_id, epoch, call_id, owner),
                               None)
        row = rows[0]
        return bool(row["granted"]), float(row["wait_seconds"]), bool(row["counted"])

    async def give_vendor_token(self, run_id: uuid.UUID, call_id: str) -> bool:
        """``ticketiq.give_vendor_token``: The call ended: no longer in flight."""
        return bool(await self.scalar("give_vendor_token", (run_id, call_id), None))

    async def slow_vendor(self, vendor: str, owner: str | None, seconds: float) -> bool:
        """``ticketiq.slow_vendor``: The vendor asked to wait: every process waits."""
        return bool(await self.scalar("slow_vendor", (vendor, owner, seconds), None))

    async def suspend_for_vendor(
        self, vendor: str, run_id: uuid.UUID, epoch: int, call_id: str, owner: str | None,
    ) -> dict[str, Any]:
        """``ticketiq.suspend_for_vendor``: The run waited long enough for a token: it
        gives its lease up until its turn (a timer wakes it); its due time and new epoch."""
        rows = await self.rows("suspend_for_vendor", (vendor, run_id, epoch, call_id, owner),
                               None)
        return rows[0]

    async def vendor_limit_figures(self) -> list[dict[str, Any]]:
        """``ticketiq.vendor_limit_figures``: Each vendor bucket's limits and figures."""
        return await self.rows("vendor_limit_figures", (), None)

    async def notify_many(self, channel: str, payloads: list[str]) -> None:
        """NOTIFY ``channel`` once per payload, in order, in one statement: hints and live
        events (``ticketiq_pg.db.events``), never state."""
        if not payloads:
            return
        if self.pool is None:
            raise RuntimeError("TicketIQ has no pool: use TicketIQ.connect()")
        self.statements["notify"] += 1
        async with self.pool.connection() as conn:
            await conn.execute(
                "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) WITH ORDINALITY AS u (p, i) "
                "ORDER BY i", (channel, payloads), prepare=False)

    async def run_transcript(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.TranscriptLine]:
        """``ticketiq.run_transcript``: A run's steps (from its checkpoints) and transcript entries
        in time order.
        """
        return await self.many(models.TranscriptLine, "run_transcript", (run_id,), conn)
