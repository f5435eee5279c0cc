"""Request size limits: a body over the limit gets 413 before it is read whole.

A declared ``Content-Length`` over the limit is refused before a byte of the body
is read; a chunked body is counted as it arrives and refused as soon as it passes.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect

from ticketiq_pg.front.refusals import note_refusal

Scope = dict[str, Any]


class BodyLimit:
    """ASGI middleware: 413 for request bodies over ``max_body`` bytes."""

    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.max_body + 1
                if declared > self.max_body:
                    await self._refuse(send)
                    return
        seen = 0
        started = refused = False

        async def counted() -> Any:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body and not started:
                    # Answer now; the app reads on as if the client went away.
                    refused = True
                    await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def tracked(message: Any) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except ClientDisconnect:
            # The client left (or was cut, .deadlines) while its body was read: no one
            # to answer, nothing to log.
            return
        except Exception:
            if not refused:
                raise

    async def _refuse(self, send: Any) -> None:
        note_refusal("body_too_large", f"over {self.max_body} bytes")
        body = json.dumps({"detail": f"the body is over {self.max_body} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
