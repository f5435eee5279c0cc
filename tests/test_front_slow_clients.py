"""A client that trickles its headers or its body is cut (issue 46, finding 10).

The front is served as a worker serves it (``FrontServer``, uvicorn in the test's own
event loop in a thread) and driven with real sockets: slow connections that send nothing,
send their headers a byte at a time, or send headers and never the body (an
unauthenticated signed webhook among them) are each closed once
``TICKETIQ_HTTP_HEADER_TIMEOUT`` or ``TICKETIQ_HTTP_BODY_TIMEOUT`` passed, answered 408
when anything of the request came, and counted as the refusal ``slow_client``; a client
that leaves in the middle of its body leaves no traceback in the log; a prompt request is
served as ever, on the same server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from ticketiq_pg import Tools
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key_sync
from ticketiq_pg.front import refusals
from ticketiq_pg.front.server import FrontServer
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.runtime.entries import builtin_kinds

HEADERS_IN = 1.0
BODY_IN = 1.5
#: Slow connections held at once (the issue's 60).
SLOW = 60


class Served:
    """A FrontServer over a real database, in an event loop of its own."""

    def __init__(self, db_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.key = create_api_key_sync(db_url, "svc:slow", run_as=["*"])
        self.db = self.call(TicketIQ.connect(db_url))
        worker = SimpleNamespace(db=self.db, process_id="slow-test", runner=None,
                                 app=SimpleNamespace(kinds=builtin_kinds(), tools=Tools()),
                                 settings=SimpleNamespace(crash_resume_entries=True))
        # From the environment, as a worker reads them.
        settings = FrontSettings.from_env({
            "TICKETIQ_HTTP_HEADER_TIMEOUT": str(HEADERS_IN),
            "TICKETIQ_HTTP_BODY_TIMEOUT": str(BODY_IN),
            "TICKETIQ_WEBHOOK_SECRETS": f"signed:{'s' * 32}"})
        self.server = FrontServer(port=0, settings=settings)
        self.call(self.server.start(worker))  # type: ignore[arg-type]
        self.port = self.server.port

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        self.call(self.server.stop())
        self.call(self.db.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def served(db_url: str) -> Iterator[Served]:
    front = Served(db_url)
    yield front
    front.close()


@pytest.fixture
def server_log() -> Iterator[list[logging.LogRecord]]:
    """What uvicorn logs (it does not propagate to the root logger)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error",
                                                    "uvicorn.asgi")]
    for logger in loggers:
        logger.addHandler(handler)
    yield records
    for logger in loggers:
        logger.removeHandler(handler)


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.settimeout(10)
    return sock


def closed_after(sock: socket.socket, trickle: bytes = b"", every: float = 0.2
                 ) -> tuple[float, bytes]:
    """Seconds until the server closed ``sock``, sending ``trickle`` a byte at a time
    meanwhile, and what it answered."""
    started = time.monotonic()
    got = b""
    sock.setblocking(False)
    sent = 0
    while time.monotonic() - started < 20:
        if sent < len(trickle):
            try:
                sock.send(trickle[sent:sent + 1])
                sent += 1
            except OSError:
                pass
        try:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
        except BlockingIOError:
            time.sleep(every)
        except OSError:
            break
    return time.monotonic() - started, got


def test_slow_headers_and_bodies_are_cut_counted_and_leave_no_traceback(
        served: Served, server_log: list[logging.LogRecord]) -> None:
    counted = refusals.refusal_counts().get("slow_client", 0)
    head = (f"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {served.key}"
            "\r\nIdempotency-Key: k-1\r\nContent-Type: application/json\r\n"
            "Content-Length: 40\r\n\r\n").encode()
    signed = (b"POST /webhooks/signed HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Delivery-Id: d-1\r\n"
              b"X-Signature-Timestamp: 1\r\nX-Signature: sha256=00\r\n"
              b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
    # Many at once: silent, headers a byte every 0.2 s, headers then no body (the signed
    # webhook's, unauthenticated), headers then a body a byte every 0.2 s.
    socks = [connect(served.port) for _ in range(SLOW)]
    kinds = ["silent", "headers", "no body", "trickled body"]
    plans = []
    for n, sock in enumerate(socks):
        kind = kinds[n % len(kinds)]
        if kind == "no body":
            sock.sendall(signed)
        elif kind == "trickled body":
            sock.sendall(head)
        plans.append((kind, sock, {"headers": head, "trickled body": b'{"input": {}}' * 4
                                   }.get(kind, b"")))
    # Meanwhile, a prompt client is served as ever.
    prompt = httpx.post(f"http://127.0.0.1:{served.port}/runs", json={"input": {}},
                        headers={"Authorization": f"Bearer {served.key}",
                                 "Idempotency-Key": "prompt"}, timeout=10)
    assert prompt.status_code == 202, prompt.text

    results: dict[int, tuple[float, bytes]] = {}

    def watch(i: int, sock: socket.socket, trickle: bytes) -> None:
        results[i] = closed_after(sock, trickle)

    threads = [threading.Thread(target=watch, args=(i, sock, trickle))
               for i, (_, sock, trickle) in enumerate(plans)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for sock in socks:
        sock.close()
    for i, (kind, _, _) in enumerate(plans):
        took, answer = results[i]
        limit = HEADERS_IN if kind in ("silent", "headers") else BODY_IN
        assert took < limit + 2.0, (kind, took, answer)  # cut, not held
        if kind == "silent":
            assert answer == b"", answer  # nothing was asked: closed without a word
        else:
            status, _, rest = answer.partition(b"\r\n")
            assert status == b"HTTP/1.1 408 Request Timeout", (kind, answer)
            assert "did not come in" in json.loads(rest.split(b"\r\n\r\n", 1)[1])["detail"]
    assert refusals.refusal_counts()["slow_client"] - counted == SLOW
    # ... and the server still serves.
    again = httpx.get(f"http://127.0.0.1:{served.port}/healthz", timeout=5)
    assert again.status_code == 200
    assert not [r for r in server_log if r.levelno >= logging.ERROR], [
        r.getMessage() for r in server_log]


def test_a_client_that_leaves_mid_body_leaves_no_traceback(
        served: Served, server_log: list[logging.LogRecord]) -> None:
    signed = (b"POST /webhooks/signed HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Delivery-Id: d-1\r\n"
              b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\": ")
    for _ in range(3):
        sock = connect(served.port)
        sock.sendall(signed)
        time.sleep(0.2)
        sock.close()  # the client leaves, its body half sent
    time.sleep(0.5)
    assert httpx.get(f"http://127.0.0.1:{served.port}/healthz", timeout=5).status_code == 200
    assert not [r for r in server_log if r.levelno >= logging.ERROR], [
        (r.getMessage(), r.exc_info) for r in server_log]


def test_the_read_deadlines_come_from_the_environment() -> None:
    from ticketiq_pg.errors import ConfigError

    default = FrontSettings.from_env({})
    assert (default.header_timeout, default.body_timeout) == (10.0, 30.0)
    got = FrontSettings.from_env({"TICKETIQ_HTTP_HEADER_TIMEOUT": "5",
                                  "TICKETIQ_HTTP_BODY_TIMEOUT": "60"})
    assert (got.header_timeout, got.body_timeout) == (5.0, 60.0)
    for bad in ({"TICKETIQ_HTTP_HEADER_TIMEOUT": "0"}, {"TICKETIQ_HTTP_BODY_TIMEOUT": "-1"},
                {"TICKETIQ_HTTP_BODY_TIMEOUT": "3601"}, {"TICKETIQ_HTTP_HEADER_TIMEOUT": "x"}):
        with pytest.raises(ConfigError):
            FrontSettings.from_env(bad)
