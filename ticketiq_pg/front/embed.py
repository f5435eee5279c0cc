"""The front inside an app's own FastAPI/ASGI process, its worker run by that app's lifespan.

    worker = Worker(Settings.from_env(), my_app)
    outer = FastAPI(lifespan=worker_lifespan(worker))
    outer.mount("/agent", create_front(worker=worker))

The worker starts (registers, takes work) before the outer app serves its first
request and shuts down gracefully (hands its runs over) after the last one.  A
mounted app's own lifespan is not run by Starlette, hence the outer app's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ticketiq_pg.runtime.worker import Worker


def worker_lifespan(worker: Worker, *, drain_timeout: float = 30.0
                    ) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """A lifespan for ``FastAPI(lifespan=...)`` (or Starlette) that runs ``worker``."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await worker.start()
        try:
            yield
        finally:
            await worker.shutdown(drain_timeout=drain_timeout)

    return lifespan
