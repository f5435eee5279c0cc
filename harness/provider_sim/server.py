"""A local HTTP server that speaks OpenAI's and Anthropic's wire formats (stdlib only).

::

    with ProviderServer.start() as sim:
        sim.script("openai", openai_completion("hi"), openai_error(429, retry_after=1))
        model = OpenAIChatModel("gpt-4o-mini", base_url=sim.openai_url, api_key="test")
        ...
        assert [r.status for r in sim.requests("openai")] == [200, 429]

``POST .../chat/completions`` is OpenAI's, ``POST .../v1/messages`` Anthropic's.  Every
request is recorded (:class:`Recorded`: path, headers, JSON body, the problems
:mod:`~harness.provider_sim.checks` found, the status answered) and answered
from the provider's script: queued :class:`~harness.provider_sim.wire.Reply`
objects first (answers, errors with status and headers, delays, dropped connections),
then its responder (a function of the recorded request), else a 500.  A request that
breaks the provider's documented rules is answered 400, as the provider would.

A request with ``"stream": true`` gets its 200 answer as the provider streams it
(Server-Sent Events, chunked, each event written and flushed as it is made,
``piece_delay`` seconds apart: :func:`~harness.provider_sim.wire.openai_chunks`,
:func:`~harness.provider_sim.wire.anthropic_events`); an error is answered as a plain
one, before any event, as the providers do; a reply's ``cut_after`` cuts the stream
after that many events, its ``error_event`` ends it with the provider's error event, its
``hold_after`` holds it until the test releases it.

It runs in a thread of the test's process and serves child processes as well.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from harness.provider_sim.checks import check_chat_request, check_messages_request
from harness.provider_sim.wire import (
    HOLD_LIMIT,
    Event,
    Reply,
    anthropic_error,
    anthropic_events,
    openai_chunks,
    openai_error,
    sse,
)

__all__ = ["ProviderServer", "Recorded", "PROVIDERS"]

PROVIDERS = ("openai", "anthropic")


@dataclass
class Recorded:
    """One request the server received, and what it answered."""

    provider: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    problems: list[str] = field(default_factory=list)
    status: int | None = None
    at: float = 0.0
    #: Answered as a stream, and how many of its events were sent.
    streamed: bool = False
    events: int = 0


Responder = Callable[[Recorded], Reply]


def _provider_of(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    return None


class ProviderServer:
    """The server, its scripts and its record."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 piece_delay: float = 0.0) -> None:
        #: Seconds between two events of a streamed answer (a test or a bench reads
        #: them as they come).
        self.piece_delay = piece_delay
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Reply]] = {p: deque() for p in PROVIDERS}
        self._responders: dict[str, Responder | None] = dict.fromkeys(PROVIDERS)
        self._record: list[Recorded] = []
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @classmethod
    def start(cls, host: str = "127.0.0.1", port: int = 0,
              piece_delay: float = 0.0) -> ProviderServer:
        """A server listening on ``host:port`` (0: a free port), serving in a thread."""
        server = cls(host, port, piece_delay)
        server._thread = threading.Thread(target=server._httpd.serve_forever, args=(0.05,),
                                          name="provider-sim", daemon=True)
        server._thread.start()
        return server

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ProviderServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- where the SDKs are pointed -------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """The ``base_url`` of an OpenAI client (its paths start after ``/v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:
        """The ``base_url`` of an Anthropic client (its paths start with ``/v1``)."""
        return self.url

    # -- the script ---------------------------------------------------------------------

    def script(self, provider: str, *replies: Reply) -> None:
        """Queue ``replies`` for the provider's next requests, in order."""
        with self._lock:
            self._queues[provider].extend(replies)

    def respond(self, provider: str, responder: Responder | None) -> None:
        """Answer the provider's requests past its queue with ``responder(request)``."""
        with self._lock:
            self._responders[provider] = responder

    def pending(self, provider: str) -> int:
        """How many queued replies are still to be sent."""
        with self._lock:
            return len(self._queues[provider])

    def requests(self, provider: str | None = None) -> list[Recorded]:
        """Every request received (of one provider), oldest first."""
        with self._lock:
            return [r for r in self._record if provider is None or r.provider == provider]

    def clear(self) -> None:
        """Forget the record and the scripts."""
        with self._lock:
            self._record.clear()
            for queue in self._queues.values():
                queue.clear()
            self._responders = dict.fromkeys(PROVIDERS)

    def _reply_for(self, recorded: Recorded) -> Reply:
        error = openai_error if recorded.provider == "openai" else anthropic_error
        if recorded.problems:
            return error(400, "; ".join(recorded.problems))
        with self._lock:
            queue = self._queues[recorded.provider]
            if queue:
                return queue.popleft()
            responder = self._responders[recorded.provider]
        if responder is not None:
            return responder(recorded)
        return error(500, "the local provider's script is empty")

    # -- HTTP -----------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                server._serve(self)

            def do_GET(self) -> None:  # noqa: N802
                self._plain(404, b'{"error": "not found"}')

            def _plain(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        provider = _provider_of(handler.path)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        if provider is None:
            data = b'{"error": "no such route"}'
            handler.send_response(404)
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if provider == "openai":
            problems = check_chat_request(body)
            if not headers.get("authorization", "").startswith("Bearer "):
                problems.append("header authorization: Bearer API key required")
        else:
            problems = check_messages_request(body, headers)
        recorded = Recorded(provider, "POST", handler.path, headers, body, problems,
                            at=time.time())
        with self._lock:
            self._record.append(recorded)
        reply = self._reply_for(recorded)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            handler.close_connection = True
            recorded.status = None
            return
        recorded.status = reply.status
        events = _stream_of(recorded, reply)
        if events is not None:
            self._stream(handler, recorded, reply, events)
            return
        data = reply.encoded()
        try:
            handler.send_response(reply.status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): what it saw is its business

    def _stream(self, handler: BaseHTTPRequestHandler, recorded: Recorded, reply: Reply,
                events: list[Event]) -> None:
        recorded.streamed = True
        cut = reply.cut_after
        try:
            handler.send_response(reply.status)
            handler.send_header("content-type", "text/event-stream; charset=utf-8")
            handler.send_header("cache-control", "no-cache")
            handler.send_header("transfer-encoding", "chunked")
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.flush()
            for n, event in enumerate(events):
                if cut is not None and n >= cut:
                    if reply.error_event is not None:
                        name = "error" if recorded.provider == "anthropic" else None
                        _chunk(handler, sse((name, reply.error_event)))
                        recorded.events += 1
                    if reply.cut_cleanly:
                        break
                    # No end chunk: the client sees the body cut short (after the error
                    # event, if any: a provider closes a stream that failed).
                    handler.close_connection = True
                    return
                if n == reply.hold_after:
                    reply.release.wait(HOLD_LIMIT)
                elif n and self.piece_delay:
                    time.sleep(self.piece_delay)
                _chunk(handler, sse(event))
                recorded.events += 1
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True  # the client gave up mid-stream


def _chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    """One chunk of a chunked body, flushed: the client reads each event as it is made."""
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    handler.wfile.flush()


def _stream_of(recorded: Recorded, reply: Reply) -> list[Event] | None:
    """The events that stream ``reply``, when the request asked for a stream and the reply
    is an answer (errors, and bodies that are not an answer, go as they are)."""
    body = recorded.body
    if not (isinstance(body, dict) and body.get("stream") is True and reply.status == 200
            and isinstance(reply.body, dict)):
        return None
    if recorded.provider == "openai" and reply.body.get("object") == "chat.completion":
        options = body.get("stream_options") or {}
        return openai_chunks(reply.body, bool(options.get("include_usage")))
    if recorded.provider == "anthropic" and reply.body.get("type") == "message":
        return anthropic_events(reply.body)
    return None
