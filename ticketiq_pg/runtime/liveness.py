"""Liveness: notice a dead process by its PostgreSQL session; the lease stays the fence.

When a process dies on its host, the kernel closes its sockets and
PostgreSQL ends its sessions within milliseconds.  Each app process holds a
*liveness token* — a session-level advisory lock, ``ticketiq.hold_liveness``
— on one dedicated, direct, autocommit connection, and on that same
connection it looks at its peers' tokens every ``interval`` seconds
(``ticketiq.watch_processes``).  A peer seen alive in this very session
whose token is gone died while this session stayed up: its leases are cut
to a short *grace* (three intervals) and then claimed through the sweep's
own once-only claim, and the resume workers adopt them through NOTIFY,
well under a second after the kill instead of the lease TTL plus a sweep
interval.

The grace is what makes a takeover safe against a process that has not
noticed yet that its session ended (a partition that ended it on the
server's side first, a stalled event loop): a process makes an outside
call only while a watch of its own, sent less than 0.8 grace ago,
confirmed its token held (:meth:`Liveness.may_call`), so it has stopped
calling before the grace a peer gave its leases runs out.

The lease stays the fence and the fallback:

* a stalled process (SIGSTOP) keeps its session, so it is taken over only
  when its lease lapses, by the sweep;
* a host that vanishes without closing its sockets keeps its session until
  TCP keepalives end it, and meanwhile its lease lapses;
* a PostgreSQL restart or failover ends every session at once, the
  watcher's own among them: what it saw alive is forgotten with its
  session (the SQL honours ``seen`` only on the session that saw it), so
  no run is handed over merely because every session ended; the processes
  reconnect, hold new tokens and keep renewing their leases;
* a process whose liveness connection drops while it is alive (a network
  blip, ``pg_terminate_backend``) may have its runs taken over.  It makes
  no outside call without a fresh confirmation
  (:meth:`~ticketiq_pg.runtime.leases.LeaseKeeper.ready` for a run's calls,
  :meth:`~ticketiq_pg.runtime.jobs.JobContext.ready` for a job's, wait) until it
  has held its token again and renewed its run and job leases; renewal
  tells it which runs and jobs it lost (back within the grace, it keeps
  them all), and the epoch fences any write it would still try for them.

The watch runs in a thread of its own, on its own event loop and connection: a
confirmation must not wait for the app's event loop.  A process taking over ten
thousand runs keeps that loop busy for seconds at a time; a watch queued behind the
runs' work came back stale, and every outside call waited for a fresh one
(``calls_held`` counts them: 2,700 to 7,000 in a 10,000-run takeover with the thread,
from collector pauses, bench section 8).  What the watch
learns is handed to the app's loop thread-safely: its events (``ok``, ``confirmed``,
``watching``) are set there, ``on_claimed`` is called there, and a renewal of the
lease books after a gap runs there.  :meth:`Liveness.may_call` reads the plain
figures the thread writes, so it is current whatever the app's loop is doing.

The token must be held on a direct connection: a transaction-mode pooler
(PgBouncer ``pool_mode=transaction``) hands sessions from client to client
and would break it.  Set ``TICKETIQ_LIVENESS_INTERVAL=0`` there to rely on
lease expiry alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.listener import KEEPALIVE_KWARGS
from ticketiq_pg.runtime.leases import LeaseBook

log = logging.getLogger(__name__)

#: Reconnection backoff bounds, in seconds.
MIN_BACKOFF = 0.05
MAX_BACKOFF = 1.0

#: The grace a dead peer's leases get, in liveness intervals.
GRACE_INTERVALS = 3

#: A process calls out only on a confirmation sent less than this part of the grace ago.
CALL_WINDOW = 0.8

#: The liveness session never times out on its own: ending it is dying.
SESSION_OPTIONS = ("-c statement_timeout=0 -c lock_timeout=0 -c idle_session_timeout=0 "
                   "-c idle_in_transaction_session_timeout=0")


class Liveness:
    """Holds this process's liveness token and watches its peers' on one connection."""

    def __init__(
        self,
        db: TicketIQ,
        conninfo: str,
        process_id: str,
        *,
        interval: float = 0.1,
        max_losses: int = 2,
        books: Sequence[LeaseBook] = (),
        on_claimed: Callable[[int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0:
            raise ValueError("the liveness interval must be positive")
        self.db = db
        self.conninfo = conninfo
        self.process_id = process_id
        self.interval = interval
        self.max_losses = max_losses
        #: The lease books (runs', jobs') to renew once after a gap, so that what was
        #: taken over meanwhile is known lost before any call goes (the worker wires them).
        self.books = list(books)
        self.on_claimed = on_claimed
        self.clock = clock
        #: Seconds a dead peer's leases get before they are claimed.
        self.grace = round(GRACE_INTERVALS * interval, 6)
        #: Set while the token is held and the leases are known good; cleared
        #: the moment the connection is seen to drop (on the app's loop: ``_ok`` is
        #: the watch thread's own, current, figure).
        self.ok = asyncio.Event()
        self._ok = False
        #: When (``clock``) the last watch that found this process's token held
        #: was sent; and an event set at each such confirmation.
        self.confirmed_sent = float("-inf")
        #: Times an outside call waited for a fresher confirmation (a busy event loop
        #: that confirms late holds every call: ``ticketiq_liveness_calls_held``).
        self.calls_held = 0
        self.confirmed = asyncio.Event()
        self.key: int | None = None
        #: The peers this session has seen alive (its last watch): a peer is noticed
        #: dead by its session only once it is here.
        self.peers: list[str] = []
        #: Set once a watch has listed the live peers: from then on a peer that dies is
        #: noticed by its session; a process says it is ready only after (issue 46, 18).
        self.watching = asyncio.Event()
        self.holds = 0
        self.drops = 0
        self.reaped_peers: list[str] = []
        self.runs_claimed = 0
        self._conn: psycopg.AsyncConnection | None = None
        #: The app's loop (where the events are set) and the watch's thread, its loop
        #: and task (set by the thread once it runs).
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._running = threading.Event()
        self._release = True
        self._confirmed = True  # no leases to confirm before the first hold
        self._held_since_backoff = False

    # -- life cycle -------------------------------------------------------

    def start(self) -> None:
        """Start holding the token and watching, in the watch's own thread (once)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._app_loop = asyncio.get_running_loop()
        self._running.clear()
        self._release = True
        self._thread = threading.Thread(
            target=self._thread_main, name=f"ticketiq-liveness:{self.process_id}", daemon=True
        )
        self._thread.start()

    async def stop(self, *, release: bool = True) -> None:
        """Stop watching; with ``release``, give the token up (a clean exit, not a death).

        Call it before the lease books stop: the watch loop may renew leases.
        """
        thread = self._thread
        if thread is not None:
            self._release = release
            await asyncio.to_thread(self._running.wait, 5.0)
            loop, task = self._thread_loop, self._task
            if loop is not None and task is not None:
                with contextlib.suppress(RuntimeError):  # its loop has ended already
                    loop.call_soon_threadsafe(task.cancel)
            await asyncio.to_thread(thread.join)
            self._thread = None
        self._ok = False
        self.ok.clear()

    # -- the watch's thread ----------------------------------------------------

    def _thread_main(self) -> None:
        asyncio.run(self._in_thread())

    async def _in_thread(self) -> None:
        self._thread_loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()  # type: ignore[assignment]
        self._running.set()
        try:
            await self._run_forever()
        except asyncio.CancelledError:
            pass
        finally:
            if self._conn is not None:
                if self._release and not self._conn.closed:
                    try:
                        await self.db.processes.release_liveness(self.process_id,
                                                                 conn=self._conn)
                    except Exception:  # noqa: BLE001 - closing ends the session (and the lock)
                        log.warning("releasing the liveness token failed", exc_info=True)
                await self._close()
            self._thread_loop = None
            self._task = None

    def _on_app_loop(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` on the app's loop (dropped once that loop has closed)."""
        loop = self._app_loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(callback, *args)

    def _set_ok(self, ok: bool) -> None:
        self._ok = ok
        self._on_app_loop(self.ok.set if ok else self.ok.clear)

    def _pulse_confirmed(self) -> None:
        self.confirmed.set()
        self.confirmed.clear()

    def may_call(self) -> bool:
        """Whether an outside call may go now: token held, confirmed recently enough."""
        return self._ok and self.clock() - self.confirmed_sent < CALL_WINDOW * self.grace

    # -- the loop ---------------------------------------------------------

    async def _run_forever(self) -> None:
        backoff = MIN_BACKOFF
        while True:
            try:
                await self._hold_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reconnect and hold a new token
                self._set_ok(False)
                self.drops += 1
                self._confirmed = False
                log.warning("liveness connection lost (%s); holding a new token", exc)
            if self._held_since_backoff:
                backoff = MIN_BACKOFF  # it held a token since the last drop: start over
            self._held_since_backoff = False
            await self._close()
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF, backoff * 2)

    async def _hold_and_watch(self) -> None:
        self._conn = conn = await psycopg.AsyncConnection.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=2,
            application_name=f"ticketiq-liveness:{self.process_id}",
            options=SESSION_OPTIONS,
            **KEEPALIVE_KWARGS,
        )
        token = await self.db.processes.hold_liveness(self.process_id, conn=conn)
        self.key = token.liveness_key
        self.holds += 1
        self._held_since_backoff = True
        if token.was_reaped:
            log.warning(
                "process %s was taken for dead while its liveness connection was down; "
                "its runs lapse after the grace and are fenced", self.process_id,
            )
        session: str | None = None
        seen: list[str] = []
        while True:
            if not self._confirmed:
                self._confirmed = await self._confirm_leases()
            if self._confirmed and not self._ok:
                self._set_ok(True)
            sent = self.clock()
            try:
                rows = await self.db.processes.watch_processes(
                    self.process_id, session, seen, self.max_losses, self.grace, conn=conn
                )
            except Exception as exc:
                # Only a dead session ends the token; any other error (a deadlock,
                # a cancel, a full disk) leaves it held: closing it would be dying.
                if conn.closed or conn.broken:
                    raise
                log.warning("watching the peers failed (%s); the token stays held", exc)
                await asyncio.sleep(self.interval)
                continue
            if rows:
                session = rows[0].session
            seen = [row.process_id for row in rows if row.alive]
            self.peers = [p for p in seen if p != self.process_id]
            if session is not None and not self.watching.is_set():
                self._on_app_loop(self.watching.set)
            if self.process_id in seen:
                self.confirmed_sent = sent
                self._on_app_loop(self._pulse_confirmed)
            reaped = [row for row in rows if not row.alive and row.runs_claimed]
            for row in reaped:
                log.warning(
                    "process %s died (its liveness session ended): claimed %d runs",
                    row.process_id, row.runs_claimed,
                )
                self.reaped_peers.append(row.process_id)
            del self.reaped_peers[:-100]
            claimed = sum(row.runs_claimed for row in reaped)
            if claimed:
                self.runs_claimed += claimed
                if self.on_claimed is not None:
                    self._on_app_loop(self.on_claimed, claimed)
            # Wait on the socket: a dropped session is seen at once, not at the next look.
            async for _ in conn.notifies(timeout=self.interval):
                pass

    async def _confirm_leases(self) -> bool:
        """After a gap, renew all leases once: runs and jobs taken over meanwhile are known lost."""
        try:
            for book in self.books:
                # The books are the app loop's: renewed there, awaited here.
                if self._app_loop is None or self._app_loop is asyncio.get_running_loop():
                    await book.renew_once()
                else:
                    await asyncio.wrap_future(
                        asyncio.run_coroutine_threadsafe(book.renew_once(), self._app_loop))
        except Exception as exc:  # noqa: BLE001 - try again at the next look
            log.warning("renewal after the liveness gap failed (%s); calls still wait", exc)
            return False
        return True

    async def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
            self._conn = None

    # -- for callers ------------------------------------------------------

    async def until_may_call(self, check: Callable[[], None], left: Callable[[], float]) -> None:
        """Return once an outside call may go; ``check()`` raises while it must not at all.

        ``check`` is the lease's own test (it raises once the run or job is
        known lost, or its deadline passed); past it, wait for the next
        confirmation of the token, at most ``left()`` seconds (the time to
        the lease's deadline, re-read each time: renewals move it).  The
        gate of :meth:`LeaseKeeper.ready` and :meth:`JobContext.ready`.
        """
        while True:
            check()
            if self.may_call():
                return
            self.calls_held += 1
            await self.wait_confirmed(min(max(left(), 0.0), self.interval * 2))

    async def wait_confirmed(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the next confirmation of the token."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.confirmed.wait(), max(0.0, seconds))

    async def wait_watching(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for a watch to have seen the live peers."""
        if self.watching.is_set():
            return True
        try:
            await asyncio.wait_for(self.watching.wait(), max(0.0, seconds))
        except TimeoutError:
            return False
        return True

    async def wait_ok(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the token to be held and the leases confirmed."""
        if self.ok.is_set():
            return True
        try:
            await asyncio.wait_for(self.ok.wait(), max(0.0, seconds))
        except TimeoutError:
            return False
        return True
