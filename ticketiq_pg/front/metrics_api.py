"""``GET /metrics`` on the front: Prometheus's text format, for a bearer credential with the
``metrics`` or ``admin`` scope (docs/observability.md#metrics)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import Response
from fastapi.routing import APIRoute

from ticketiq_pg.front.auth import Identity
from ticketiq_pg.front.refusals import refusal_counts

SCOPES = frozenset({"metrics", "admin"})


def metrics_router(worker: Any, conninfo: Callable[[], str | None], caller: Any,
                   route_class: type = APIRoute) -> APIRouter:
    """The route, over the front's worker (its figures) or, without one, its database."""
    router = APIRouter(tags=["metrics"], route_class=route_class)
    try:
        from ticketiq_pg.observe import metrics as figures

        figures.refusal_counts = refusal_counts  # the front's refusals, by reason
    except ImportError:  # no prometheus-client: /metrics answers 501
        pass
    registries: list[Any] = []

    @router.get("/metrics", response_class=Response)
    async def metrics(who: Identity = Depends(caller)) -> Response:
        """The process's and the database's figures, in Prometheus's text format."""
        if not SCOPES & who.scopes:
            raise HTTPException(status_code=403, detail="a scrape needs the metrics scope")
        try:
            from prometheus_client import CONTENT_TYPE_LATEST

            from ticketiq_pg.observe import metrics as figures
        except ImportError as exc:
            raise HTTPException(status_code=501, detail="pip install prometheus-client"
                                ) from exc
        if not registries:
            registries.append(figures.registry_for(worker) if worker is not None else
                              figures.database_registry(conninfo()))
        return Response(await figures.exposition(registries[0]),
                        media_type=CONTENT_TYPE_LATEST)

    return router
