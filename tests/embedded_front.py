"""An app's own FastAPI process that mounts the front; its lifespan runs the worker.

Served by ``uvicorn embedded_front:outer`` in tests/test_runs_api.py, exactly as
docs/front.md shows an app author.
"""

from __future__ import annotations

from fastapi import FastAPI

from harness.scripted import app as scripted_app
from ticketiq_pg import FrontSettings, Settings, Worker, create_front, worker_lifespan

worker = Worker(Settings.from_env(), scripted_app(), process_id="embedded")
outer = FastAPI(lifespan=worker_lifespan(worker, drain_timeout=5))
outer.mount("/agent", create_front(worker=worker, settings=FrontSettings.from_env()))


@outer.get("/")
async def home() -> dict[str, str]:
    return {"app": "mine", "worker": worker.process_id}
