"""LISTEN on a dedicated autocommit connection, with keepalive and reconnect.

A notification is only a wake-up hint: whoever waits on :class:`Wakeup`
also polls on a short interval, which is the truth.  When the connection
drops, the listener reconnects with backoff and wakes everybody once (a
notification may have been missed meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping

import psycopg
from psycopg import sql

from ticketiq_pg.background import Background

log = logging.getLogger(__name__)

KEEPALIVE_KWARGS = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}


class Wakeup:
    """An event per channel, set by notifications and by reconnects."""

    def __init__(self, channels: Iterable[str],
                 handlers: Mapping[str, Callable[[str], None]] | None = None) -> None:
        self.events = {channel: asyncio.Event() for channel in channels}
        self.payloads: dict[str, list[str]] = {channel: [] for channel in self.events}
        #: Channels whose payloads go to a function as they come (listened to as well).
        self.handlers = dict(handlers or {})
        for channel in self.handlers:
            self.events.setdefault(channel, asyncio.Event())
            self.payloads.setdefault(channel, [])

    def notify(self, channel: str, payload: str = "") -> None:
        handler = self.handlers.get(channel)
        if handler is not None:
            handler(payload)
            return
        if channel in self.events:
            if payload:
                self.payloads[channel].append(payload)
                del self.payloads[channel][:-1000]
            self.events[channel].set()

    def notify_all(self) -> None:
        for channel in self.events:
            self.events[channel].set()

    async def wait(self, channel: str, seconds: float) -> list[str]:
        """Wait for a hint on ``channel`` or the timeout; return payloads seen."""
        event = self.events[channel]
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            pass
        event.clear()
        payloads, self.payloads[channel] = self.payloads[channel], []
        return payloads


class Listener:
    """Keeps one LISTEN session open; reconnects with backoff whenever it drops.

    ``application_name`` names the session in ``pg_stat_activity`` (operators,
    and tests that end it with ``pg_terminate_backend``); ``backend_pid`` is
    the current session's backend, ``reconnects`` counts the sessions lost.
    """

    def __init__(
        self,
        conninfo: str,
        wakeup: Wakeup,
        *,
        keepalive_interval: float = 10.0,
        application_name: str | None = None,
    ):
        self.conninfo = conninfo
        self.wakeup = wakeup
        self.keepalive_interval = keepalive_interval
        # PostgreSQL keeps at most 63 bytes of it.
        self.application_name = application_name[:63] if application_name else None
        self.connected = asyncio.Event()
        self.reconnects = 0
        self.backend_pid: int | None = None
        self._loop = Background("listener", self.run_forever)

    async def _session(self) -> None:
        extra: dict[str, object] = dict(KEEPALIVE_KWARGS)
        if self.application_name:
            extra["application_name"] = self.application_name
        async with await psycopg.AsyncConnection.connect(
            self.conninfo, autocommit=True, **extra
        ) as conn:
            for channel in self.wakeup.events:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.backend_pid = conn.info.backend_pid
            self.connected.set()
            log.debug("LISTEN session up (backend %s)", self.backend_pid)
            # Anything sent while we were away is lost: poll everything once.
            self.wakeup.notify_all()
            while True:
                async for note in conn.notifies(timeout=self.keepalive_interval):
                    self.wakeup.notify(note.channel, note.payload)
                # keepalive: fails fast on a dead link; never prepared (a pooler in
                # transaction mode may hand this client another server session)
                await conn.execute("SELECT 1", prepare=False)

    async def run_forever(self) -> None:
        backoff = 0.1
        while True:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reconnect whatever happened
                self.connected.clear()
                self.reconnects += 1
                log.warning("LISTEN connection lost (%s); reconnecting in %.1fs", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
            else:
                backoff = 0.1

    def start(self) -> asyncio.Task[None]:
        return self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
