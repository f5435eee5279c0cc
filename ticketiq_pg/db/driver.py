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

import asyncio
import logging
import select
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ticketiq_pg import errors
from ticketiq_pg.db import retry
from ticketiq_pg.db import rows as models
from ticketiq_pg.db.group_commit import CheckpointBatcher
from ticketiq_pg.seal import JsonText

T = TypeVar("T")

log = logging.getLogger(__name__)

#: Schema versions this driver knows how to talk to.
KNOWN_SCHEMA_VERSIONS = frozenset({8})

#: NOTIFY channels the functions use.
RESUME_CHANNEL = "ticketiq_resume"
LEADER_CHANNEL = "ticketiq_leader"
FINISHED_CHANNEL = "ticketiq_run_finished"
STOP_CHANNEL = "ticketiq_stop"
APPROVAL_CHANNEL = "ticketiq_approval"
ENTRY_CHANNEL = "ticketiq_entry"


def _readable(conn: psycopg.AsyncConnection) -> bool:
    """Whether the connection's socket has input waiting (or was closed), without blocking."""
    try:
        poller = select.poll()  # no FD_SETSIZE limit, unlike select()
        poller.register(conn.pgconn.socket, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError, psycopg.OperationalError):
        return True  # no usable socket: let the real check say what is wrong


def _json(value: Any) -> Jsonb | None:
    if value is None:
        return None
    if isinstance(value, JsonText):  # encoded already (the seal's canonical text)
        return Jsonb(value.text, dumps=str)
    return Jsonb(value)


def _json_array(values: Sequence[Any]) -> Jsonb:
    """One JSON array of the values: their texts joined when every one has its text."""
    if values and all(isinstance(v, JsonText) for v in values):
        return Jsonb("[" + ",".join(v.text for v in values) + "]", dumps=str)
    return Jsonb([v.value if isinstance(v, JsonText) else v for v in values])


class FailoverConnection(psycopg.AsyncConnection[Any]):
    """The pool's connection class: connecting tries again, briefly, while no host will do.

    During a failover the old primary is gone and the standby answers
    read-only (``target_session_attrs=read-write`` refuses it) until it is
    promoted, a fraction of a second later.  The pool's own reconnection
    backs off 1, 2, 4 s; this tries every 50-500 ms for ``reconnect_window``
    seconds first, so the pool refills as soon as the new primary takes
    writes.
    """

    reconnect_window: float = 3.0

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
        deadline = time.monotonic() + cls.reconnect_window
        delay = 0.05
        while True:
            try:
                return await super().connect(conninfo, **kwargs)
            except psycopg.OperationalError:
                if time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)


class TicketIQ:
    """Async client of the ``ticketiq`` schema.

    Build one with :meth:`connect` (it opens its own pool and checks the
    schema version) or hand it an existing ``AsyncConnectionPool`` whose
    connections are in autocommit mode.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool | None = None,
        *,
        retry_policy: retry.RetryPolicy | None = None,
        group_commit: bool = True,
        group_size: int = 4,
    ) -> None:
        self.pool = pool
        self._own_pool = False
        self.statements: Counter[str] = Counter()
        #: How a pooled call is tried again after a connection error
        #: (``RetryPolicy(budget=0)``: never).
        self.retry_policy = retry_policy or retry.RetryPolicy()
        #: Attempts sent again per function, and repeats recognised as the
        #: interrupted first attempt's own work.
        self.retries: Counter[str] = Counter()
        self.recognised: Counter[str] = Counter()
        self._purge: asyncio.Task[None] | None = None
        #: Pooled checkpoints of runs that step at the same moment share one
        #: statement (:mod:`ticketiq_pg.db.group_commit`); None: one each.
        self.checkpoints: CheckpointBatcher | None = (
            CheckpointBatcher(self, group=group_size) if group_commit else None
        )

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
        group_size: int = 4,
        **pool_kwargs: Any,
    ) -> TicketIQ:
        client = cls(retry_policy=retry_policy, group_commit=group_commit, group_size=group_size)
        pool_kwargs.setdefault("check", client._check_pooled)
        pool_kwargs.setdefault("connection_class", FailoverConnection)
        pool = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            # UTF-8 whatever the database's encoding: psycopg reads and writes JSON as UTF-8
            kwargs={"autocommit": True, "client_encoding": "UTF8"},
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
        if self.checkpoints is not None:
            await self.checkpoints.drain()
        if self._purge is not None and not self._purge.done():
            self._purge.cancel()
        if self.pool is not None and self._own_pool:
            await self.pool.close()

    async def _check_pooled(self, conn: psycopg.AsyncConnection) -> None:
        """The pool's check of a connection it hands out; a broken one purges the rest.

        When the server went away every idle connection broke at once; the pool
        would find them one by one, a client sleeping (1 s, 2 s, ...) after each.

        The check is local first: an idle autocommit connection has nothing to
        read unless the server said something (a notice, or the end of the
        session when it went away), so one whose socket is quiet is handed out
        at once and only one with something waiting gets the round trip of
        the pool's own check.  A round trip on every checkout would double
        the cost of every statement (bench section 1).
        """
        try:
            if conn.closed:
                raise psycopg.OperationalError("the pooled connection is closed")
            if _readable(conn):
                await AsyncConnectionPool.check_connection(conn)
        except Exception:
            self._purge_broken()
            raise

    def _purge_broken(self) -> None:
        """Check every idle pooled connection now, in the background (once at a time)."""
        pool = self.pool
        if pool is None or (self._purge is not None and not self._purge.done()):
            return

        async def purge() -> None:
            try:
                await pool.check()
            except Exception:  # noqa: BLE001 - a closed pool: nothing to purge
                log.debug("purging the pool failed", exc_info=True)

        self._purge = asyncio.get_running_loop().create_task(purge())

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
        if conn is not None:
            # The caller's transaction: never retried here (it is gone with
            # its connection; only the caller can run it again).
            try:
                return await self._fetch(conn, query, args)
            except psycopg.Error as exc:
                raise self._translate(exc) from exc
        if self.pool is None:
            raise RuntimeError("TicketIQ has no pool: pass conn= or use TicketIQ.connect()")
        return await self._pooled(function, query, args)

    @staticmethod
    async def _fetch(
        conn: psycopg.AsyncConnection, query: str, args: Sequence[Any]
    ) -> list[dict[str, Any]]:
        async with conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(query, args)
            return await cur.fetchall()

    @staticmethod
    def _translate(exc: psycopg.Error) -> Exception:
        translated = errors.translate(exc)
        return exc if translated is exc else translated

    async def _pooled(
        self, function: str, query: str, args: Sequence[Any]
    ) -> list[dict[str, Any]]:
        """Run one call on a pooled connection, retried after a connection error.

        The first attempt takes a pooled connection; each retry a fresh one
        through the pool's conninfo (a pool whose connections all broke at
        once reconnects with a backoff of its own, seconds long).  A call
        whose statement may have run is sent again only if
        :func:`retry.may_repeat`; one that never got a connection always.
        Once an attempt may have committed, an error or a row the repeat
        returns goes through ``_recognise_<function>``, if there is one.
        """
        assert self.pool is not None
        policy = self.retry_policy
        deadline: float | None = None
        delay = policy.first_delay
        maybe_committed = False
        attempt = 0
        while True:
            sent = False
            try:
                if attempt == 0:
                    async with self.pool.connection() as pooled:
                        sent = True
                        rows = await self._fetch(pooled, query, args)
                else:
                    assert deadline is not None
                    async with await self._fresh_connection(deadline) as fresh:
                        sent = True
                        rows = await self._fetch(fresh, query, args)
            except psycopg.Error as exc:
                translated = self._translate(exc)
                if translated is not exc:
                    if maybe_committed:
                        found = await self._recognise(function, args, translated, None)
                        if found is not None:
                            return found
                    raise translated from exc
                now = time.monotonic()
                if deadline is None:
                    deadline = now + policy.budget
                lost = retry.is_connection_error(exc)
                if lost:
                    self._purge_broken()
                if (
                    not lost
                    or (sent and not retry.may_repeat(function, args))
                    or now + delay > deadline
                ):
                    raise
                maybe_committed = maybe_committed or sent
                self.retries[function] += 1
                log.warning("%s failed on its connection (%s); trying again in %.2fs",
                            function, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, policy.max_delay)
                attempt += 1
                continue
            if maybe_committed:
                found = await self._recognise(function, args, None, rows)
                if found is not None:
                    return found
            return rows

    async def _fresh_connection(self, deadline: float) -> psycopg.AsyncConnection:
        """A new autocommit connection through the pool's conninfo, within the budget."""
        assert self.pool is not None
        given = self.pool.kwargs
        kwargs: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
        kwargs["autocommit"] = True
        left = max(0.5, deadline - time.monotonic())
        try:
            return await asyncio.wait_for(
                psycopg.AsyncConnection.connect(self.pool.conninfo, **kwargs), left
            )
        except TimeoutError as exc:
            raise psycopg.errors.ConnectionTimeout(
                f"no connection within {left:.1f}s"
            ) from exc

    async def _recognise(
        self,
        function: str,
        args: Sequence[Any],
        error: Exception | None,
        rows: list[dict[str, Any]] | None,
    ) -> list[dict[str, Any]] | None:
        """Rows standing for the interrupted first attempt's own work, or None."""
        recognise = getattr(self, f"_recognise_{function}", None)
        if recognise is None:
            return None
        found = await recognise(args, error, rows)
        if found is not None:
            self.recognised[function] += 1
            log.warning("%s: the interrupted first attempt had committed; its result is used",
                        function)
        return found

    # The recognisers: each is called only after an attempt that may have
    # committed, with the repeat's translated error or its rows, and returns
    # rows in the function's own shape, or None to keep what the repeat said.

    async def _recognise_start_run(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        holder, run_id, correlation_id = args[0], args[11], args[8]
        if error is not None and not isinstance(error, errors.StepConflict):
            return None
        if rows is not None and (not rows or rows[0]["created"] or rows[0]["run_id"] != run_id):
            return None
        run = await self.get_run(run_id)
        if run.lease_holder != holder or run.epoch != 1 or run.status != "running":
            return None
        return [{"run_id": run_id, "epoch": 1, "lease_expires_at": run.lease_expires_at,
                 "created": True, "correlation_id": correlation_id or str(run_id)}]

    async def _recognise_hand_on_answer(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        if not isinstance(error, errors.RunNotRunning):
            return None
        # Handed on by the caller's own epoch: its first attempt committed (the
        # same statement completed the run).
        answer = await self.get_answer(args[0])
        if answer is None or answer.handed_on_epoch != args[1] or answer.handed_on_at is None:
            return None
        return [{"run_id": answer.run_id, "step": answer.step, "body": answer.body,
                 "seal": answer.seal, "seal_key_id": answer.seal_key_id,
                 "handed_on_at": answer.handed_on_at}]

    async def _ended_at_epoch(
        self, args: Sequence[Any], error: Exception | None, status: str
    ) -> list[dict[str, Any]] | None:
        if not isinstance(error, errors.RunNotRunning):
            return None
        run = await self.get_run(args[0])
        if run.status != status or run.epoch != args[1]:
            return None
        return [{"run_id": run.run_id, "status": status, "finished_at": run.finished_at}]

    async def _recognise_fail_run(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        return await self._ended_at_epoch(args, error, "failed")

    async def _recognise_stop_run(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        return await self._ended_at_epoch(args, error, "stopped")

    async def _recognise_release_run(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        if not isinstance(error, errors.Fenced):
            return None
        run = await self.get_run(args[0])
        if run.status != "claimed" or run.epoch != args[1] + 1:
            return None
        return [{"run_id": run.run_id, "epoch": run.epoch}]

    async def _recognise_suspend_run(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        if not isinstance(error, errors.Fenced):
            return None
        run = await self.get_run(args[0])
        if run.status != "suspended" or run.epoch != args[1] + 1 or run.wait_key != args[2]:
            return None
        return [{"run_id": run.run_id, "status": run.status, "epoch": run.epoch}]

    async def _job_ended_at_epoch(
        self, args: Sequence[Any], error: Exception | None, state: str
    ) -> list[dict[str, Any]] | None:
        if not isinstance(error, errors.RunNotRunning):
            return None
        (job,) = await self._rows("get_job", (args[0],), None)
        if job["state"] != state or job["epoch"] != args[1]:
            return None
        return [{"job_id": job["job_id"], "state": state, "finished_at": job["finished_at"]}]

    async def _recognise_finish_job(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        return await self._job_ended_at_epoch(args, error, "completed")

    async def _recognise_fail_job(
        self, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        return await self._job_ended_at_epoch(args, error, "failed")

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
        # Named here rather than by the database, so a repeat after a lost
        # connection can recognise the run its first attempt started.
        if run_id is None:
            run_id = uuid.uuid4()
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
        return await self._one(
            models.CheckpointWritten,
            "write_checkpoint",
            (run_id, epoch, step, _json(body), seal, seal_key_id),
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
            _json_array([c[3] for c in checkpoints]),  # one JSON array: no jsonb[] quoting
            [c[4] for c in checkpoints],
            [c[5] for c in checkpoints],
        )
        rows = await self._rows("write_checkpoints", args, conn)
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

    async def hold_liveness(
        self, process_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.LivenessToken:
        """Take the liveness token on ``conn``'s session: pass a dedicated, direct connection."""
        return await self._one(models.LivenessToken, "hold_liveness", (process_id,), conn)

    async def release_liveness(
        self, process_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> bool:
        return bool(await self._scalar("release_liveness", (process_id,), conn))

    async def watch_processes(
        self,
        watcher: str,
        session: str | None = None,
        seen: Sequence[str] = (),
        max_losses: int = 2,
        grace: float = 0.3,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.WatchedProcess]:
        """Peers alive now; reaps those seen alive in this session and now dead.

        Call it on the connection that holds the watcher's own token and pass
        back the ``session`` it returned: ``seen`` is only honoured on that
        session.  A dead peer's leases are cut to ``grace`` seconds; a later
        call claims its runs once they lapsed.
        """
        return await self._many(
            models.WatchedProcess, "watch_processes",
            (watcher, session, list(seen), max_losses, grace), conn,
        )

    async def purge_answers(
        self, limit: int = 1000, *, conn: psycopg.AsyncConnection | None = None
    ) -> int:
        return int(await self._scalar("purge_answers", (limit,), conn))

    async def purge_history(
        self,
        older_than: float,
        limit: int = 1000,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> dict[str, int]:
        """Delete up to ``limit`` runs finished ``older_than`` seconds ago, with their history.

        Returns the counts per table (``runs_purged``, ``checkpoints_purged``, ...,
        ``audit_purged``); call it until every count is 0.
        """
        rows = await self._rows("purge_history", (older_than, limit), conn)
        return {name: int(value) for name, value in rows[0].items()}

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

    async def get_answer(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.AnswerView | None:
        """The run's sealed answer with its seal, or None while it has none (UnknownRun)."""
        rows = await self._many(models.AnswerView, "get_answer", (run_id,), conn)
        return rows[0] if rows else None

    async def run_transcript(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.TranscriptLine]:
        return await self._many(models.TranscriptLine, "run_transcript", (run_id,), conn)
