"""The HTTP front served beside a worker, in the worker's own event loop (uvicorn).

``Worker(settings, app, services=[FrontServer(port=8080)])`` starts it once the worker
is up and stops it first on shutdown, so no request is accepted by a process that is
draining.  To mount the front in an ASGI app of your own instead, use
:func:`ticketiq_pg.front.app.create_app` with a worker started by your lifespan
(docs/guide.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ticketiq_pg.runtime.worker import Worker

log = logging.getLogger(__name__)


class FrontServer:
    """Serves :func:`~ticketiq_pg.front.app.create_app` on ``host:port`` (0: a free port)."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, worker: Worker) -> None:
        import uvicorn

        from ticketiq_pg.front.app import create_app

        class _Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[no-untyped-def]
                # The process handles SIGTERM itself (graceful shutdown).
                yield

        assert worker.db is not None
        app = create_app(worker.db, crash_resume_entries=worker.settings.crash_resume_entries)
        config = uvicorn.Config(app, host=self.host, port=self.port, log_level="warning",
                                lifespan="off", access_log=False)
        server = _Server(config)
        task = asyncio.create_task(server.serve(), name="http")
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the HTTP server stopped at once")
            await asyncio.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        self._server, self._task = server, task
        log.info("worker %s serves HTTP on %s:%s", worker.process_id, self.host, self.port)

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._task, 10)
        self._server = self._task = None
