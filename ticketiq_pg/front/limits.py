"""Request size limits: a body over the limit gets 413 before it is read whole.

A declared ``Content-Length`` over the limit is refused before a byte of the body
is read; a chunked body is counted as it arrives and refused as soon as it passes.
"""

from __future__ import annotations

import json
from typing import Any

Scope = dict[str, Any]


class _TooLarge(Exception):
    pass


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
        started = False

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge
            return message

        async def tracked(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps({"detail": f"the body is over {self.max_body} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
