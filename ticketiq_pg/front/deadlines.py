"""Read deadlines: a client that trickles its headers or its body is cut (docs/front.md,
*Deployment*).

uvicorn waits for a request's headers and body as long as the client keeps the
connection open, so a few dozen slow connections hold a front's sockets indefinitely, and an
unauthenticated webhook whose body never comes is held open too.  :func:`read_deadlines`
makes uvicorn's HTTP protocol (h11 or httptools, whichever it picked) give each request
``header_timeout`` seconds from its first byte (or from the connection's opening) until its
headers are in, and ``body_timeout`` seconds from then until its body is in.  A request
past either is cut: answered 408 with a ``detail`` when anything of it came and no
answer started, its connection closed, counted as the refusal ``slow_client``
(:mod:`.refusals`, so ``ticketiq_front_refusals_total{reason="slow_client"}``) and
logged as one warning line; the route that was reading the body sees the client gone,
and no traceback is logged.  Between two requests of a kept-alive connection uvicorn's own
keep-alive timeout applies.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ticketiq_pg.front.refusals import note_refusal

REASON = "slow_client"


def _timeout_answer(detail: str) -> bytes:
    body = json.dumps({"detail": detail}).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


def read_deadlines(header_timeout: float, body_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with read deadlines: pass it as ``uvicorn.Config(http=...)``
    (``FrontServer`` does)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class ReadDeadlines(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _timer: asyncio.TimerHandle | None = None
        _phase: str | None = None
        _seen: Any = None  # the request whose headers came in last
        _got = False  # bytes of the request whose headers are awaited

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm("headers", header_timeout)

        def data_received(self, data: bytes) -> None:
            if self._phase is None and (self.cycle is None or self.cycle.response_complete):
                # The first bytes of the next request of a kept-alive connection.
                self._arm("headers", header_timeout)
            if self._phase == "headers":
                self._got = True
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _follow(self) -> None:
            cycle = self.cycle
            if cycle is None:
                return
            if cycle is not self._seen:  # a request's headers are in
                self._seen = cycle
                self._disarm()
                if cycle.more_body:
                    self._arm("body", body_timeout)
            elif self._phase == "body" and not cycle.more_body:
                self._disarm()

        def _arm(self, phase: str, seconds: float) -> None:
            self._disarm()
            self._phase, self._got = phase, False
            self._timer = self.loop.call_later(seconds, self._expired, phase, seconds)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._phase = None

        def _expired(self, phase: str, seconds: float) -> None:
            self._timer = self._phase = None
            if self.transport.is_closing():
                return
            who = ":".join(map(str, self.client)) if self.client else "a client"
            note_refusal(REASON, f"{who}: its {phase} not in within {seconds:g}s")
            cycle = self.cycle if phase == "body" else None
            answer = self._got if phase == "headers" else (
                cycle is not None and not cycle.response_started)
            if answer:
                self.transport.write(_timeout_answer(
                    f"the request's {phase} did not come in within {seconds:g} seconds"))
            if cycle is not None:
                # The route reading the body sees the client gone; what it answers is
                # dropped (nothing is logged).
                cycle.disconnected = True
                cycle.message_event.set()
            self.transport.close()

    return ReadDeadlines
