"""The httpx transport that fences a run's outside calls as their bytes go out
(:mod:`ticketiq_pg.vendors.fencing`); apart from it so that the runtime imports no httpx."""

from __future__ import annotations

import httpx

from ticketiq_pg.vendors.fencing import SEND_MARGIN, stamp

__all__ = ["FencedTransport"]


class FencedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that checks the call's lease as the request goes out
    (:func:`stamp`), then hands it to ``inner`` (default ``httpx.AsyncHTTPTransport()``)."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None, *,
                 margin: float = SEND_MARGIN) -> None:
        self.inner = inner or httpx.AsyncHTTPTransport()
        self.margin = margin

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Stamp the request (the lease checked, its token and sending time put on it),
        then send it through ``inner``."""
        stamp(request, self.margin)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()
