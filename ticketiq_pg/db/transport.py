"""The transport under the driver: the pool, one statement per call, and its retries.

A call made from the pool whose connection fails (the primary was killed, a failover
is under way) is sent again on a fresh connection through the same (multi-host)
conninfo where a repeat is harmless (:mod:`ticketiq_pg.db.retry`); a repeat that
raises because the interrupted first attempt did commit is recognised by
:mod:`ticketiq_pg.db.recognisers`.  ``statements``, ``retries`` and ``recognised``
count per function, so tests and the benchmark can prove how many round trips a
step costs.  Documented SQLSTATEs become the typed errors of :mod:`ticketiq_pg.errors`.
"""

from __future__ import annotations

import asyncio
import logging
import select
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Self, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ticketiq_pg import errors
from ticketiq_pg.db import retry
from ticketiq_pg.db import rows as models
from ticketiq_pg.seal import JsonText

T = TypeVar("T")

log = logging.getLogger(__name__)

#: ``recognise(transport, args, error, rows)``: rows standing for a first attempt's work.
Recogniser = Callable[
    [Any, Sequence[Any], Exception | None, list[dict[str, Any]] | None],
    Awaitable[list[dict[str, Any]] | None],
]


def _readable(conn: psycopg.AsyncConnection) -> bool:
    """Whether the connection's socket has input waiting (or was closed), without blocking."""
    try:
        poller = select.poll()  # no FD_SETSIZE limit, unlike select()
        poller.register(conn.pgconn.socket, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError, psycopg.OperationalError):
        return True  # no usable socket: let the real check say what is wrong


#: Called after every statement with (function, args, seconds, rows or None, error or
#: None): the metrics and traces of :mod:`ticketiq_pg.observe` install theirs here.
STATEMENT_HOOKS: list[Callable[..., None]] = []
#: Awaited before a statement with (transport, function, args): the traces record the
#: traceparent a request came with before the entry it writes (ticketiq_pg.observe).
BEFORE_STATEMENT: list[Callable[..., Awaitable[None]]] = []


def json_param(value: Any) -> Jsonb | None:
    if value is None:
        return None
    if isinstance(value, JsonText):  # encoded already (the seal's canonical text)
        return Jsonb(value.text, dumps=str)
    return Jsonb(value)


#: The SQL functions refuse a reason (of a failure, a stop, a release, a decision) over
#: this many characters (TQ004); the driver cuts one to it, so a long error message never
#: keeps a run from being failed.
REASON_LIMIT = 2000


def reason_param(value: str | None) -> str | None:
    """A reason cut to :data:`REASON_LIMIT` characters (None stays None)."""
    return value if value is None else value[:REASON_LIMIT]


def json_array_param(values: Sequence[Any]) -> Jsonb:
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


class Transport:
    """Sends one ``SELECT * FROM ticketiq.fn(...)`` per call, pooled or on the caller's conn."""

    #: Recognisers by function name (the driver's: :data:`ticketiq_pg.db.recognisers.BY_FUNCTION`).
    recognisers: Mapping[str, Recogniser] = {}

    def __init__(
        self,
        pool: AsyncConnectionPool | None = None,
        *,
        retry_policy: retry.RetryPolicy | None = None,
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


    async def close(self) -> None:
        """Close the pool if this client opened it."""
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


    async def __aenter__(self) -> Self:
        return self


    async def __aexit__(self, *exc: object) -> None:
        await self.close()


    # -- plumbing ---------------------------------------------------------

    async def rows(
        self,
        function: str,
        args: Sequence[Any],
        conn: psycopg.AsyncConnection | None,
    ) -> list[dict[str, Any]]:
        """Send ``SELECT * FROM ticketiq.<function>(args)``: the rows as dicts."""
        placeholders = ", ".join(["%s"] * len(args))
        query = f"SELECT * FROM ticketiq.{function}({placeholders})"
        self.statements[function] += 1
        for before in BEFORE_STATEMENT:
            await before(self, function, args)
        if not STATEMENT_HOOKS:
            return await self._send(function, query, args, conn)
        started = time.perf_counter()
        try:
            found = await self._send(function, query, args, conn)
        except BaseException as exc:
            for hook in STATEMENT_HOOKS:
                hook(function, args, time.perf_counter() - started, None, exc)
            raise
        for hook in STATEMENT_HOOKS:
            hook(function, args, time.perf_counter() - started, found, None)
        return found

    async def _send(self, function: str, query: str, args: Sequence[Any],
                    conn: psycopg.AsyncConnection | None) -> list[dict[str, Any]]:
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
        recognise = self.recognisers.get(function)
        if recognise is None:
            return None
        found = await recognise(self, args, error, rows)
        if found is not None:
            self.recognised[function] += 1
            log.warning("%s: the interrupted first attempt had committed; its result is used",
                        function)
        return found


    async def one(
        self,
        model: type[T],
        function: str,
        args: Sequence[Any],
        conn: psycopg.AsyncConnection | None,
    ) -> T:
        """The first row of the function as a ``model`` (a :mod:`ticketiq_pg.db.rows` class)."""
        rows = await self.rows(function, args, conn)
        return models.from_row(model, rows[0])


    async def many(
        self,
        model: type[T],
        function: str,
        args: Sequence[Any],
        conn: psycopg.AsyncConnection | None,
    ) -> list[T]:
        """Every row of the function as a ``model``."""
        return [models.from_row(model, row) for row in await self.rows(function, args, conn)]


    async def scalar(
        self, function: str, args: Sequence[Any], conn: psycopg.AsyncConnection | None
    ) -> Any:
        """The first column of the first row."""
        rows = await self.rows(function, args, conn)
        return next(iter(rows[0].values()))
