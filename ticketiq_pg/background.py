"""The one way a part of the library runs work in the background.

:class:`Background` is a named asyncio task with a start that is idempotent and a stop
that cancels it and waits for it (``stop``), or first lets it finish what it is doing
(``finish``): a loop cancelled in the middle of a claim may have committed it, leaving a
run or a job held by nobody until its lease lapses.  :func:`poll_forever` is the loop the
resume worker, the entry pump, the leader and the job worker each run: a tick, then a
wait that a NOTIFY may cut short (the notification is a hint, the poll is the truth),
until the process stops; a failed tick is logged and the next one tries again.

The lease renewal and the LISTEN session run their own loops (each has its own
reconnect and back-off) inside a :class:`Background` too; the liveness watch runs in a
thread of its own (:mod:`ticketiq_pg.runtime.liveness`), so that a busy event loop
never makes its confirmations late.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

__all__ = ["Background", "poll_forever"]


class Background:
    """One named background task: :meth:`start` once, :meth:`stop` or :meth:`finish`."""

    def __init__(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self._body = body
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self) -> asyncio.Task[None]:
        """Start the task unless it runs already; the task."""
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run(), name=self.name)
        return self.task

    async def _run(self) -> None:
        await self._body()

    async def stop(self) -> None:
        """Cancel the task and wait until it has ended."""
        task, self.task = self.task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def finish(self, within: float) -> None:
        """Let the task end by itself within ``within`` seconds (its loop was told to
        stop), then cancel it; wait until it has ended either way."""
        task, self.task = self.task, None
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=within)
        if not done:
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def poll_forever(
    what: str,
    tick: Callable[[], Awaitable[float | None]],
    *,
    stopping: asyncio.Event,
    wait: Callable[[float], Awaitable[object]],
    interval: float,
) -> None:
    """Run ``tick`` until ``stopping`` is set, waiting ``wait(seconds)`` between ticks.

    ``tick`` may return how long to wait this time (None: ``interval``).  A tick that
    raises is logged as ``"<what> failed"`` and the loop goes on; a cancellation ends it.
    """
    while not stopping.is_set():
        delay = interval
        try:
            asked = await tick()
            if asked is not None:
                delay = asked
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the next tick tries again
            log.exception("%s failed", what)
        if stopping.is_set():
            break
        await wait(delay)
