"""The HTTP front served beside a worker, in the worker's own event loop (uvicorn).

``Worker(settings, app, services=[FrontServer(port=8080)])`` starts it once the worker
is up and stops it first on shutdown, so no request is accepted by a process that is
draining; with ``TICKETIQ_HTTP_DRAIN_GRACE`` it first answers ``/healthz`` with 503 for
that long, so an edge in front takes it out before its listener closes.  Its bind
address, port, body limit, read deadlines (a client trickling its headers or body is cut,
:mod:`~ticketiq_pg.front.deadlines`) and credentials come from
:class:`~ticketiq_pg.front.settings.FrontSettings`.  To mount the front in an ASGI app
of your own instead, see :mod:`ticketiq_pg.front.embed` (docs/front.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ticketiq_pg.front.settings import FrontSettings

if TYPE_CHECKING:
    from ticketiq_pg.runtime.worker import Worker

log = logging.getLogger(__name__)


class FrontServer:
    """Serves :func:`~ticketiq_pg.front.app.create_app` on ``host:port`` (0: a free port)."""

    def __init__(self, port: int | None = None, host: str | None = None,
                 settings: FrontSettings | None = None) -> None:
        self.settings = settings or FrontSettings()
        self.host = host or self.settings.host
        self.port = self.settings.port if port is None else port
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self._app: Any = None

    async def start(self, worker: Worker) -> None:
        import uvicorn

        from ticketiq_pg.front.app import create_app
        from ticketiq_pg.front.deadlines import read_deadlines

        class _Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[no-untyped-def]
                # The process handles SIGTERM itself (graceful shutdown).
                yield

        assert worker.db is not None
        app = create_app(worker.db, worker=worker, settings=self.settings, kinds=worker.app.kinds,
                         crash_resume_entries=worker.settings.crash_resume_entries)
        config = uvicorn.Config(app, host=self.host, port=self.port, log_level="warning",
                                lifespan="off", access_log=False,
                                http=read_deadlines(self.settings.header_timeout,
                                                    self.settings.body_timeout))
        server = _Server(config)
        task = asyncio.create_task(server.serve(), name="http")
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the HTTP server stopped at once")
            await asyncio.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        self._server, self._task, self._app = server, task, app
        log.info("worker %s serves HTTP on %s:%s", worker.process_id, self.host, self.port)

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        if self.settings.drain_grace > 0:
            # /healthz answers 503 first: the edge's checks take this process out
            # while it still answers what was already on its way here.
            self._app.state.draining = True
            log.info("draining: /healthz unready for %gs", self.settings.drain_grace)
            await asyncio.sleep(self.settings.drain_grace)
        self._server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._task, 10)
        await self._app.state.waiter.stop()
        self._server = self._task = None
