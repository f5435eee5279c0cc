"""The stream example's process: the worker, ticketiq-pg's front, and the page at ``/stream``.

::

    uvicorn asgi:api --port 8080      # then open http://127.0.0.1:8080/stream

The front is mounted at the root, so ``/healthz`` is its own (an edge such as HAProxy
checks it) and the page's requests (``runs``, ``runs/{id}/events``) need no prefix.  The
page is a static file: it holds no key, the person types theirs into it.
"""

from __future__ import annotations

from pathlib import Path

from app import app
from fastapi import FastAPI
from fastapi.responses import FileResponse

from ticketiq_pg import FrontSettings, Settings, Worker, create_front, worker_lifespan

PAGE = Path(__file__).with_name("page.html")

worker = Worker(Settings.from_env(), app)
api = FastAPI(title="streamed weather briefings", lifespan=worker_lifespan(worker))


@api.get("/stream", response_class=FileResponse, include_in_schema=False)
async def page() -> FileResponse:
    """The page that starts a run and shows its stream (no credential: it holds none)."""
    return FileResponse(PAGE, headers={"Cache-Control": "no-store"})


# Mounted last: the routes above come first, everything else is the front's.
api.mount("/", create_front(worker=worker, settings=FrontSettings.from_env()))
