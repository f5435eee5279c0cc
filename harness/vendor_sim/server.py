"""Local vendor service: imitates the outside vendors' write semantics, records every request.

Standard library only.  One ``ThreadingHTTPServer`` on 127.0.0.1; one SQLite file (WAL,
``synchronous=FULL``) behind one lock.  Each vendor request is handled in one transaction
that applies its effect *and* records the request; the transaction commits before the first
byte of the response is written, so a request that got an answer is on disk even if the
server is SIGKILLed right after.  This module is the HTTP server and its command line;
the SQLite file is :mod:`~.store`, the dispatch :mod:`~.app` (routes in :mod:`~.incidentio`,
:mod:`~.jira`, :mod:`~.chat` and :mod:`~.sqs`), the ``/_control`` endpoints :mod:`~.control`.

Run::

    python -m harness.vendor_sim.server --db PATH [--port 0] [--ready-file PATH]
        [--discord-window 120] [--sqs-window 300] [--sns-window 300] [--parent-pid PID] [--verbose]

``--ready-file`` receives the bound port (written to a temp file, then renamed) once the
server listens.  SIGTERM/SIGINT stop it cleanly (exit status 0).

Vendors (path prefix, what is imitated)
=======================================

``/incidentio``
    ``POST /v2/incidents`` {idempotency_key*, name*, summary, severity_id, visibility}:
    201 {"incident": {...}}; a key already seen returns 200 with the same incident and
    creates nothing.  Keys are kept forever (longer than any resume).
    ``POST /v2/incidents/{id}/actions/edit`` {idempotency_key*, incident: {fields}}:
    200 {"incident": {...}}, applied once per key; a repeat returns the first result and has
    no second effect (a key reused for another incident is 409).
    ``GET /v2/incidents/{id}``, ``GET /v2/incidents``.
``/jira``
    ``POST /rest/api/3/issue/{issueKey}/comment`` {body: text or ADF, properties: [{key,
    value}]}: 201 comment.  No idempotency: a repeat is a second comment.
    ``GET /rest/api/3/issue/{issueKey}/comment[?expand=properties&startAt&maxResults]``.
    ``GET /rest/api/3/issue/{issueKey}``: a deterministic issue derived from the key.
``/teams``
    ``POST /v3/conversations/{conversationId}/activities`` {type: "message", text,
    attachments, replyToId}: 201 {"id"}.  No idempotency.
    ``POST /v3/conversations/{conversationId}/activities/{activityId}``: a reply to that
    activity; {type: "typing"}: 200, shown, kept nowhere (a message: as above).
``/discord``
    ``POST /api/v10/channels/{channelId}/messages`` {content, nonce, enforce_nonce}: 200
    message.  With enforce_nonce true, a nonce already used in the channel within the window
    (``--discord-window``, default 120 s of the server clock) returns that earlier message
    and creates nothing; after the window a repeat is a new message.
``/sqs``
    ``POST /`` with ``X-Amz-Target: AmazonSQS.SendMessage`` {QueueUrl (``.fifo``),
    MessageBody, MessageGroupId, MessageDeduplicationId}: 200 {MessageId, MD5OfMessageBody,
    SequenceNumber}.  A dedup id already accepted on the queue within the window
    (``--sqs-window``, default 300 s) returns the original MessageId and enqueues nothing.

``/sns``
    ``POST /`` form-encoded ``Action=Publish`` {TopicArn (``.fifo``), Message,
    MessageGroupId, MessageDeduplicationId}: 200 {PublishResponse: {PublishResult:
    {MessageId, SequenceNumber}}} (JSON, as SNS answers ``Accept: application/json``).  A
    dedup id already accepted on the topic within the window
    (``--sns-window``, default 300 s) returns the original MessageId and
    publishes nothing.

Malformed requests get 400 (unknown issue/channel/incident 404, wrong method 405) with a
JSON error in the vendor's own shape and are recorded with effect ``rejected``.  Unknown
paths get 404 and are recorded under vendor ``unknown``.

Control (``/_control``, never recorded, never faulted)
======================================================

``GET health``; ``GET requests?vendor=&path_prefix=&effect=&after_id=``; ``GET effects``;
``POST faults`` {vendor ("*" = any), action, path_regex?, method?, seconds?, count=1,
probability=1, seed?};
``GET faults``; ``DELETE faults``; ``POST reset``; ``POST clock`` {advance_seconds};
``POST rate_limits`` {vendor, per_second (null: none)}: past that many requests in the last
second, a vendor's requests get 429 with ``Retry-After`` (effect ``rejected``, fault
``rate_limit``).

Each recorded request has an ``effect``: ``created`` (a new object: incident, incident edit,
comment, Teams reply, Discord message, SQS message), ``deduplicated`` (answered with an
earlier object, nothing new), ``read``, ``shown`` (a Teams typing activity: nothing
kept), ``dropped`` (fault drop_before_accept: socket closed,
no effect), ``failed`` (fault fail: 503, no effect; or an internal error: 500), ``rejected``
(4xx; fault throttle: 429 with ``Retry-After: <seconds>``, default 1, no effect), ``fenced``
(409 with ``TicketIQ-Fence-Refused: 1``, no effect: a changing request whose fencing token,
``TicketIQ-Fence: <run>:<epoch>``, is older than the newest the service has seen for that
run, from any request of any vendor; see :mod:`ticketiq_pg.vendors.fencing`).  A request
hit by ``drop_after_accept`` keeps the effect it had (usually ``created``),
``fault="drop_after_accept"`` and ``status=None``: the client got no answer.

Faults: for each vendor request the first live matching ``delay`` fault and the first live
matching other fault each apply once (both may apply: sleep, then fail or drop), and each
use counts down its ``count``.  A fault with a ``probability`` below 1 applies to each
matching request with that chance (draws seeded by its ``seed``, else at random); a request
it spares does not count it down, and the next matching fault is tried.  A delayed request
is handled after the sleep, whether or not its client is still waiting.  Faults, the clock
offset and all dedupe state are in the SQLite file, so they survive a restart on the same
file; object ids and request ids keep growing across ``reset`` so an id is never reused.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from harness.vendor_sim.app import VendorApp
from harness.vendor_sim.control import Control
from harness.vendor_sim.store import (
    DEFAULT_DISCORD_WINDOW,
    DEFAULT_SNS_WINDOW,
    DEFAULT_SQS_WINDOW,
    VENDORS,
    Options,
    Store,
    dumps,
)
from harness.vendor_sim.wire import Incoming, Outcome, Reject

MAX_BODY = 4 * 1024 * 1024


class _BadRequest(Exception):
    pass


class VendorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog (5) resets connections under a burst of concurrent
    # calls, which a client would have to treat as "outcome unknown".
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], app: VendorApp, verbose: bool = False) -> None:
        self.app = app
        self.control = Control(app)
        self.verbose = verbose
        super().__init__(address, VendorRequestHandler)


class VendorRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "TicketIQVendorService/1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stall
    server: VendorHTTPServer

    def do_GET(self) -> None:
        try:
            self._handle()
        except Exception:  # never half an answer: whether the effect landed is unknown
            if not self.server.app.store.closed:
                traceback.print_exc(file=sys.stderr)
            self._drop()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks, total = [], 0
            while True:
                line = self.rfile.readline(65537)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise _BadRequest("malformed chunked body") from None
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY:
                    raise _BadRequest("request body too large")
                chunks.append(self._read_exactly(size))
                self.rfile.readline(3)
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        try:
            n = int(length)
        except ValueError:
            raise _BadRequest(f"invalid Content-Length {length!r}") from None
        if n < 0 or n > MAX_BODY:
            raise _BadRequest("request body too large")
        return self._read_exactly(n)

    def _read_exactly(self, n: int) -> bytes:
        # A client killed mid-request leaves a torn body: no request arrived, so none
        # is recorded (a torn comment is not a second comment with another body).
        data = self.rfile.read(n)
        if len(data) < n:
            raise _BadRequest("the body ended before its length: the client hung up")
        return data

    def _handle(self) -> None:
        app = self.server.app
        split = urlsplit(self.path)
        raw_path = split.path or "/"
        segments = [unquote(s) for s in raw_path.split("/")[1:]]
        if segments and segments[-1] == "":
            segments.pop()
        try:
            body = self._read_body()
        except _BadRequest as exc:
            self.close_connection = True
            self._send(400, {"error": str(exc)})
            return
        # When the whole request had arrived: a client stopped between its headers and
        # its body (SIGSTOP) is recorded when it sent the rest, as it was applied then.
        wall = time.time()
        query = parse_qs(split.query, keep_blank_values=True)
        if segments[:1] == ["_control"]:
            try:
                status, out = self.server.control.handle(self.command, segments[1:], query, body)
            except Reject as rej:
                status, out = rej.status, {"error": rej.message}
            self._send(status, out)
            return
        vendor = segments[0] if segments and segments[0] in VENDORS else "unknown"
        req = Incoming(
            method=self.command,
            path=raw_path,
            query=query,
            raw_query=split.query,
            headers=dict(self.headers.items()),
            body=body,
            vendor=vendor,
            segments=segments[1:],
            at=app.store.now(),
            wall_at=wall,
        )
        wait = app.over_rate(vendor, time.monotonic()) if vendor in VENDORS else None
        if wait is not None:
            message = "Too Many Requests (rate limit)"
            outcome = Outcome(429, {"error": message}, "rejected", error=message)
            app.record_only(req, outcome, "rate_limit")
            self._send(429, outcome.body, headers={"Retry-After": f"{wait:.3f}"})
            return
        delay, fault = (None, None)
        if vendor in VENDORS:
            delay, fault = app.store.take_faults(vendor, self.command, raw_path)
        if delay is not None:
            time.sleep(float(delay["seconds"] or 0))
        action = fault["action"] if fault else None
        if action == "fail":
            message = "Service Unavailable (injected fault)"
            outcome = Outcome(503, {"error": message}, "failed", error=message)
            app.record_only(req, outcome, "fail")
            self._send(503, outcome.body)
            return
        if action == "throttle":
            message = "Too Many Requests (injected fault)"
            outcome = Outcome(429, {"error": message}, "rejected", error=message)
            app.record_only(req, outcome, "throttle")
            wait = float(fault["seconds"] if fault["seconds"] is not None else 1.0)
            self._send(429, outcome.body, headers={"Retry-After": f"{wait:g}"})
            return
        if action == "drop_before_accept":
            app.record_only(
                req,
                Outcome(None, None, "dropped", error="connection closed before accepting (fault)"),
                "drop_before_accept",
            )
            self._drop()
            return
        outcome = app.handle(req, action)
        if action == "drop_after_accept":
            self._drop()
            return
        self._send(outcome.status or 500, outcome.body, outcome.content_type, outcome.headers)

    def _send(
        self,
        status: int,
        obj: Any,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = dumps(obj).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client hung up (e.g. it timed out): nothing to answer
            self.close_connection = True

    def _drop(self) -> None:
        """Close the socket without a byte of HTTP response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def write_ready_file(path: Path, port: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(f"{port}\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def serve(
    db: Path,
    port: int = 0,
    ready_file: Path | None = None,
    options: Options | None = None,
    parent_pid: int | None = None,
    verbose: bool = False,
) -> int:
    store = Store(db)
    app = VendorApp(store, options or Options())
    server = VendorHTTPServer(("127.0.0.1", port), app, verbose=verbose)
    bound = server.server_address[1]
    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="vendor-http", daemon=True
    )
    thread.start()
    if ready_file is not None:
        write_ready_file(ready_file, bound)
    print(
        f"vendor service listening on http://127.0.0.1:{bound} (db {db})",
        file=sys.stderr,
        flush=True,
    )
    reason = "signal"
    while not stop.wait(0.25):
        if parent_pid is not None and os.getppid() != parent_pid:
            reason = f"parent {parent_pid} is gone"
            break
    server.shutdown()
    server.server_close()
    store.close()
    print(f"vendor service stopped ({reason})", file=sys.stderr, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.vendor_sim.server",
        description="Local vendor service: imitates incident.io, Jira, Teams, Discord and "
        "SQS FIFO on 127.0.0.1 and records every request in a SQLite file.",
    )
    parser.add_argument("--db", required=True, type=Path, help="SQLite file (created if absent)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: any free port)")
    parser.add_argument("--ready-file", type=Path, help="receives the port once listening")
    parser.add_argument(
        "--discord-window",
        type=float,
        default=DEFAULT_DISCORD_WINDOW,
        help="seconds a Discord nonce dedupes (default 120)",
    )
    parser.add_argument(
        "--sqs-window",
        type=float,
        default=DEFAULT_SQS_WINDOW,
        help="seconds an SQS FIFO dedup id dedupes (default 300)",
    )
    parser.add_argument(
        "--sns-window",
        type=float,
        default=DEFAULT_SNS_WINDOW,
        help="seconds an SNS FIFO dedup id dedupes (default 300)",
    )
    parser.add_argument("--parent-pid", type=int, help="exit when this parent process is gone")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)
    for name in ("discord_window", "sqs_window", "sns_window"):
        value = getattr(args, name)
        if not math.isfinite(value) or value < 0:
            parser.error(f"--{name.replace('_', '-')} must be a finite number >= 0")
    return serve(
        args.db,
        args.port,
        args.ready_file,
        Options(discord_window=args.discord_window, sqs_window=args.sqs_window,
                sns_window=args.sns_window),
        parent_pid=args.parent_pid,
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
