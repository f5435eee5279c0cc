"""ASGI middleware: a request's W3C ``traceparent`` header, for the run it starts.

Set for the request in :data:`ticketiq_pg.observe.incoming.INCOMING`; the entry the
request writes records it first, and the run's spans are its children (docs/
observability.md#traces).  An invalid header is ignored, as W3C Trace Context says.
"""

from __future__ import annotations

from typing import Any

from ticketiq_pg.observe.incoming import INCOMING, parse


class TraceHeader:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        traceparent = None
        if scope["type"] == "http" and scope.get("method") == "POST":
            for name, value in scope.get("headers", ()):
                if name == b"traceparent":
                    traceparent = parse(value.decode("latin-1"))
        if traceparent is None:
            await self.app(scope, receive, send)
            return
        token = INCOMING.set(traceparent)
        try:
            await self.app(scope, receive, send)
        finally:
            INCOMING.reset(token)
