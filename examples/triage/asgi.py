"""The triage app inside an ASGI process of its own (FastAPI), instead of ``ticketiq-pg worker``.

::

    uvicorn asgi:api --port 8080

The lifespan (``worker_lifespan``) starts the worker (leases, liveness, the sweep, the
resume loop, the entry pump, the job worker) before the first request and shuts it
down gracefully after the last: on SIGTERM uvicorn ends the lifespan and the worker
hands its runs over at their next step boundary.  ticketiq-pg's HTTP front is mounted
under ``/ticketiq`` (every route but its ``/healthz`` needs an API key or a JWT:
``TICKETIQ_JWT_*``, docs/front.md); ``POST /tickets/{id}/triage-requests`` is a route of
the app's own that writes a ticket event to the durable inbox with the driver.
"""

from __future__ import annotations

from typing import Any

from app import app
from fastapi import FastAPI, Request, Response

from ticketiq_pg import FrontSettings, Settings, Worker, create_front, worker_lifespan

worker = Worker(Settings.from_env(), app)
api = FastAPI(title="ticket triage", lifespan=worker_lifespan(worker))
api.mount("/ticketiq", create_front(worker=worker, settings=FrontSettings.from_env()))


@api.post("/tickets/{ticket_id}/triage-requests", status_code=202)
async def request_triage(ticket_id: str, request: Request,
                         response: Response) -> dict[str, Any]:
    """Ask for a ticket to be triaged: one inbox entry (one run) per ticket, however often."""
    assert worker.db is not None  # connected by the lifespan
    entry = await worker.db.entries.accept_entry(
        "ticket_event", f"triage-requested:{ticket_id}",
        {"event_id": f"triage-requested:{ticket_id}", "ticket_id": ticket_id,
         "type": "triage.requested"},
        owner="triage-api", run_as="triage-api", channel="ticket_event",
    )
    response.status_code = 202 if entry.created else 200
    return {"entry_id": entry.entry_id, "created": entry.created}
