"""A small ticket service for the triage example: tickets, comments, triage notes.

Standard library only.  It stands in for a helpdesk API and keeps its own record of
every request it receives, so what landed can be counted from outside the app:

=====================================  ==========================================
``POST /tickets``                      create a ticket ``{id, title, body}``
``GET  /tickets/{id}``                 a ticket, with its triage note if it has one
``POST /tickets/{id}/comments``        add a comment ``{text, run_id?}``; header
                                       ``Idempotency-Key`` dedupes it for ever
``GET  /tickets/{id}/comments``        its comments (``?idempotency_key=K``: the
                                       one that key created, if any)
``POST /tickets/{id}/triage``          set the triage note ``{note, run_id?}``;
                                       ``Idempotency-Key`` as for comments
``GET  /requests``                     every request received, oldest first
``GET  /healthz``                      liveness
=====================================  ==========================================

A key seen before returns the object it created (status 200, ``"deduped": true``) and
creates nothing; a key sent again with a different body is refused (422).  A request may
carry a fencing token, ``TicketIQ-Fence: <run id>:<epoch>`` (the app's client sends its
run's epoch, which grows by one at every takeover): the service keeps the newest epoch it
has seen per run and refuses a POST with an older one (409 with
``TicketIQ-Fence-Refused: 1``, effect ``fenced``, nothing applied), so a stalled process
whose run was taken over cannot write once the run's new attempt has called here.  The record
is a JSON-lines file (``--record``), each line written and fsynced before the answer is
sent; on start the service replays it, so tickets, comments and keys outlive a restart.
A request whose body ends before its ``Content-Length`` (its client was killed while
sending it) never arrived: it is neither served nor recorded.

    python ticket_service.py --port 8700 --record ticket-service.jsonl

It prints one JSON line when it listens: ``{"event": "listening", "url": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

TICKET = re.compile(r"^/tickets/([A-Za-z0-9_.-]{1,64})$")
COMMENTS = re.compile(r"^/tickets/([A-Za-z0-9_.-]{1,64})/comments$")
TRIAGE = re.compile(r"^/tickets/([A-Za-z0-9_.-]{1,64})/triage$")


def route(path: str) -> tuple[str, str] | None:
    """What a path under /tickets/ names: (ticket | comment | triage, the ticket id)."""
    for pattern, kind in ((TICKET, "ticket"), (COMMENTS, "comment"), (TRIAGE, "triage")):
        match = pattern.match(path)
        if match:
            return kind, match.group(1)
    return None


class Store:
    """Tickets, comments and idempotency keys, rebuilt from the record on start."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.lock = threading.Lock()
        self.tickets: dict[str, dict[str, Any]] = {}
        self.comments: dict[str, list[dict[str, Any]]] = {}
        self.keys: dict[str, dict[str, Any]] = {}  # key -> {"request": ..., "object": ...}
        self.seq = 0
        self.comment_seq = 0
        self.fences: dict[str, int] = {}  # run id -> the newest epoch seen
        if record.exists():
            for line in record.read_text().splitlines():
                if line.strip():
                    self._apply(json.loads(line))

    def requests(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]

    def handle(self, method: str, path: str, query: dict[str, list[str]], key: str | None,
               body: Any, fence: str | None = None) -> tuple[int, Any]:
        """Serve one request and record it (under the lock: one request at a time)."""
        with self.lock:
            token = parse_fence(fence)
            newest = self.fences.get(token[0]) if token else None
            if token and newest is not None and token[1] < newest and method == "POST":
                status, effect = 409, "fenced"
                answer: Any = {"error": f"fencing token {token[1]} of run {token[0]} is "
                               f"older than {newest}: refused, nothing applied"}
            else:
                status, answer, effect = self._serve(method, path, query, key, body)
            self.seq += 1
            entry = {"seq": self.seq, "at": time.time(), "method": method, "path": path,
                     "idempotency_key": key, "body": body, "status": status,
                     "effect": effect, "answer": answer, "fence": fence}
            with open(self.record, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")
                out.flush()
                os.fsync(out.fileno())
            self._apply(entry, replay=False)
            return status, answer

    # -- what a request does --------------------------------------------------------

    def _serve(self, method: str, path: str, query: dict[str, list[str]], key: str | None,
               body: Any) -> tuple[int, Any, str]:
        if method == "GET" and path == "/healthz":
            return 200, {"status": "ok"}, "read"
        if method == "POST" and path == "/tickets":
            if not isinstance(body, dict) or not all(
                isinstance(body.get(f), str) and body[f] for f in ("id", "title", "body")
            ):
                return 400, {"error": "a ticket needs id, title and body"}, "rejected"
            if not TICKET.match(f"/tickets/{body['id']}"):
                return 400, {"error": "a ticket id is letters, digits, _ . -"}, "rejected"
            if body["id"] in self.tickets:
                return 200, {"ticket": self.tickets[body["id"]], "created": False}, "read"
            ticket = {"id": body["id"], "title": body["title"], "body": body["body"],
                      "triage": None}
            return 201, {"ticket": ticket, "created": True}, "created"
        routed = route(path)
        if routed is None:
            return 404, {"error": f"no route {method} {path}"}, "rejected"
        kind, ticket_id = routed
        if ticket_id not in self.tickets:
            return 404, {"error": f"no ticket {ticket_id}"}, "not_found"
        if method == "GET" and kind == "ticket":
            return 200, {"ticket": self.tickets[ticket_id]}, "read"
        if method == "GET" and kind == "comment":
            comments = self.comments.get(ticket_id, [])
            wanted = query.get("idempotency_key")
            if wanted:
                comments = [c for c in comments if c["idempotency_key"] == wanted[0]]
            return 200, {"comments": comments}, "read"
        if method != "POST" or kind == "ticket":
            return 405, {"error": f"{method} {path} is not allowed"}, "rejected"
        field = "text" if kind == "comment" else "note"
        if not isinstance(body, dict) or not isinstance(body.get(field), str) or not body[field]:
            return 400, {"error": f"the body needs {field}"}, "rejected"
        if key is not None:
            seen = self.keys.get(key)
            if seen is not None:
                if seen["request"] != [path, body]:
                    return 422, {"error": f"idempotency key {key} was used for another "
                                 "request"}, "rejected"
                return 200, {kind: seen["object"], "deduped": True}, "deduped"
        if kind == "comment":
            made = {"id": f"C-{self.comment_seq + 1}", "ticket_id": ticket_id,
                    "text": body["text"], "run_id": body.get("run_id"),
                    "idempotency_key": key}
        else:
            made = {"ticket_id": ticket_id, "note": body["note"], "run_id": body.get("run_id"),
                    "idempotency_key": key}
        return 201, {kind: made, "deduped": False}, "created"

    def _apply(self, entry: dict[str, Any], replay: bool = True) -> None:
        """Change the state as a recorded request did (on start, for the whole record)."""
        if replay:
            self.seq = max(self.seq, entry["seq"])
        token = parse_fence(entry.get("fence"))
        if token and token[1] > self.fences.get(token[0], 0):
            self.fences[token[0]] = token[1]
        if entry["effect"] != "created":
            return
        answer, path = entry["answer"], entry["path"]
        if path == "/tickets":
            ticket = answer["ticket"]
            self.tickets[ticket["id"]] = ticket
            return
        made = answer.get("comment") or answer.get("triage")
        if COMMENTS.match(path):
            self.comments.setdefault(made["ticket_id"], []).append(made)
            self.comment_seq += 1
        else:
            self.tickets[made["ticket_id"]]["triage"] = made
        if entry["idempotency_key"] is not None:
            self.keys[entry["idempotency_key"]] = {"request": [path, entry["body"]],
                                                   "object": made}


def parse_fence(value: str | None) -> tuple[str, int] | None:
    """(run id, epoch) of a ``TicketIQ-Fence`` header, or None."""
    run_id, _, epoch = (value or "").rpartition(":")
    return (run_id, int(epoch)) if run_id and epoch.isdigit() else None


class Handler(BaseHTTPRequestHandler):
    server_version = "ticket-service/1"
    store: Store

    def _reply(self, status: int, answer: Any) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        if status == 409:
            self.send_header("TicketIQ-Fence-Refused", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            # The client died mid-request (a SIGKILLed worker): no request arrived, so
            # none is recorded, and nobody is left to answer.
            self.close_connection = True
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._reply(400, {"error": "the body is not JSON"})
            return
        if method == "GET" and url.path == "/requests":
            self._reply(200, {"requests": self.store.requests()})
            return
        key = self.headers.get("Idempotency-Key") or None
        status, answer = self.store.handle(method, url.path, parse_qs(url.query), key, body,
                                           self.headers.get("TicketIQ-Fence"))
        self._reply(status, answer)

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return  # the record is the log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8700, help="0: any free port")
    parser.add_argument("--record", type=Path, default=Path("ticket-service.jsonl"),
                        help="the JSON-lines record of every request (replayed on start)")
    opts = parser.parse_args(argv)
    Handler.store = Store(opts.record)
    server = ThreadingHTTPServer((opts.host, opts.port), Handler)
    host, port = server.server_address[:2]
    print(json.dumps({"event": "listening", "url": f"http://{host}:{port}",
                      "record": str(opts.record.resolve())}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
