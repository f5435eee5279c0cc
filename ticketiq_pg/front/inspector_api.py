"""The inspector's API: ``GET /inspector/tools``, ``POST /inspector/calls`` (admins only).

``ticketiq-pg inspect`` calls it, so an operator's ad hoc call is made by a running
process with that process's tools and gates (:mod:`ticketiq_pg.runtime.inspector`).
A call refused by the gates answers 403 with the audit id that records it; an unknown
tool 404; arguments that are not a JSON object or break the tool's schema 422.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from ticketiq_pg.errors import UnknownRun
from ticketiq_pg.front.auth import Identity
from ticketiq_pg.runtime.inspector import Inspector, InspectorRefused


class InspectorRequest(BaseModel):
    tool: str = Field(min_length=1, max_length=200, description="a tool of the app")
    arguments: dict[str, Any] = Field(default_factory=dict, description="its arguments")
    run_id: uuid.UUID | None = Field(
        default=None, description="the run it is made beside (audited with it), if any")


def inspector_router(inspector: Callable[[], Inspector | None], caller: Any,
                     route_class: type = APIRoute) -> APIRouter:
    """The routes, over the worker's inspector (None: a front without a worker)."""
    router = APIRouter(tags=["inspector"], route_class=route_class)

    def admin(who: Identity) -> Inspector:
        if not who.admin:
            raise HTTPException(status_code=403, detail="the inspector needs the admin scope")
        found = inspector()
        if found is None:
            raise HTTPException(status_code=503, detail="no worker's tools here")
        return found

    @router.get("/inspector/tools")
    async def tools(who: Identity = Depends(caller)) -> list[dict[str, Any]]:
        """The app's tools an admin may call: name, classification, description."""
        return [{"name": t.name, "classification": t.classification,
                 "description": t.description, "parameters": t.parameters}
                for t in admin(who).tools()]

    @router.post("/inspector/calls", responses={
        403: {"description": "not an admin, or refused by the app's gates (audited)"},
        404: {"description": "no such tool, or no such run"}})
    async def call(request: InspectorRequest,
                   who: Identity = Depends(caller)) -> JSONResponse:
        """Call one tool as the caller: a fresh key, the gates, the audit; its result."""
        found = admin(who)
        try:
            made = await found.call(who.subject, request.tool, request.arguments,
                                    run_id=request.run_id)
        except InspectorRefused as exc:
            return JSONResponse({"detail": str(exc), "audit_id": exc.audit_id},
                                status_code=exc.status)
        except UnknownRun as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        return JSONResponse(jsonable_encoder(made.as_dict()))

    return router
