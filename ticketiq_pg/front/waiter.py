"""The long poll of ``GET /runs/{id}?wait=``: NOTIFY as a hint, a short poll as the truth.

One dedicated LISTEN connection per front (not one per request) hears
``ticketiq_run_finished`` and wakes the requests waiting on that run; each request
also reads the run again every ``poll`` seconds, so a missed notification (a lost
connection, a run that ended on another process before LISTEN was up) costs at most
one poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ticketiq_pg.db.driver import FINISHED_CHANNEL
from ticketiq_pg.db.listener import Listener, Wakeup

T = TypeVar("T")


class _Hints(Wakeup):
    def __init__(self, waiter: RunWaiter) -> None:
        super().__init__([FINISHED_CHANNEL])
        self.waiter = waiter

    def notify(self, channel: str, payload: str = "") -> None:
        for event in self.waiter.waiting.get(payload, ()):
            event.set()

    def notify_all(self) -> None:
        for events in self.waiter.waiting.values():
            for event in events:
                event.set()


class RunWaiter:
    """Waits for runs to end, for every long-polling request of one front."""

    def __init__(self, conninfo: Callable[[], str | None], poll: float = 0.5) -> None:
        self.conninfo = conninfo  # read when the first request waits
        self.poll = poll
        self.waiting: dict[str, set[asyncio.Event]] = {}
        self._listener: Listener | None = None

    def _listen(self) -> None:
        conninfo = self.conninfo()
        if self._listener is None and conninfo:
            self._listener = Listener(conninfo, _Hints(self),
                                      application_name="ticketiq-front-waiter")
            self._listener.start()

    async def wait(self, key: str, seconds: float, read: Callable[[], Awaitable[T]],
                   done: Callable[[T], bool]) -> T:
        """``read()`` until ``done`` of it, or ``seconds`` passed; returns the last read."""
        deadline = time.monotonic() + seconds
        result = await read()
        if done(result) or seconds <= 0:
            return result
        self._listen()
        event = asyncio.Event()
        self.waiting.setdefault(key, set()).add(event)
        try:
            while not done(result):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(left, self.poll))
                event.clear()
                result = await read()
        finally:
            events = self.waiting.get(key)
            if events is not None:
                events.discard(event)
                if not events:
                    del self.waiting[key]
        return result

    async def stop(self) -> None:
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None
