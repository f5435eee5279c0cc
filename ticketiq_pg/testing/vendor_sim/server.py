"""Local vendor service: imitates the outside vendors' write semantics, records every request.

Standard library only.  One ``ThreadingHTTPServer`` on 127.0.0.1; one SQLite file (WAL,
``synchronous=FULL``) behind one lock.  Each vendor request is handled in one transaction
that applies its effect *and* records the request; the transaction commits before the first
byte of the response is written, so a request that got an answer is on disk even if the
server is SIGKILLed right after.

Run::

    python -m ticketiq_pg.testing.vendor_sim.server --db PATH [--port 0] [--ready-file PATH]
        [--discord-window 120] [--sqs-window 300] [--parent-pid PID] [--verbose]

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

Malformed requests get 400 (unknown issue/channel/incident 404, wrong method 405) with a
JSON error in the vendor's own shape and are recorded with effect ``rejected``.  Unknown
paths get 404 and are recorded under vendor ``unknown``.

Control (``/_control``, never recorded, never faulted)
======================================================

``GET health``; ``GET requests?vendor=&path_prefix=&effect=&after_id=``; ``GET effects``;
``POST faults`` {vendor ("*" = any), action, path_regex?, method?, seconds?, count=1};
``GET faults``; ``DELETE faults``; ``POST reset``; ``POST clock`` {advance_seconds}.

Each recorded request has an ``effect``: ``created`` (a new object: incident, incident edit,
comment, Teams reply, Discord message, SQS message), ``deduplicated`` (answered with an
earlier object, nothing new), ``read``, ``dropped`` (fault drop_before_accept: socket closed,
no effect), ``failed`` (fault fail: 503, no effect; or an internal error: 500), ``rejected``
(4xx).  A request hit by ``drop_after_accept`` keeps the effect it had (usually ``created``),
``fault="drop_after_accept"`` and ``status=None``: the client got no answer.

Faults: for each vendor request the first live matching ``delay`` fault and the first live
matching other fault each apply once (both may apply: sleep, then fail or drop), and each
use counts down its ``count``.  A delayed request is handled after the sleep, whether or not
its client is still waiting.  Faults, the clock offset and all dedupe state are in the
SQLite file, so they survive a restart on the same file; object ids and request ids keep
growing across ``reset`` so an id is never reused.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import signal
import socket
import sqlite3
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

VENDORS = ("incidentio", "jira", "teams", "discord", "sqs")
EFFECTS = ("created", "deduplicated", "read", "dropped", "failed", "rejected")
FAULT_ACTIONS = ("fail", "delay", "drop_after_accept", "drop_before_accept")

# Object kinds (the ``effects`` listing names them in the plural, see OBJECT_LISTS).
INCIDENT = "incident"
INCIDENT_EDIT = "incident_edit"
JIRA_COMMENT = "jira_comment"
TEAMS_REPLY = "teams_reply"
DISCORD_MESSAGE = "discord_message"
SQS_MESSAGE = "sqs_message"
OBJECT_LISTS = {
    INCIDENT: ("incidentio", "incidents"),
    INCIDENT_EDIT: ("incidentio", "incident_edits"),
    JIRA_COMMENT: ("jira", "jira_comments"),
    TEAMS_REPLY: ("teams", "teams_replies"),
    DISCORD_MESSAGE: ("discord", "discord_messages"),
    SQS_MESSAGE: ("sqs", "sqs_messages"),
}

STEP_KEY_PROPERTY = "ticketiq.step_key"
DEFAULT_DISCORD_WINDOW = 120.0
DEFAULT_SQS_WINDOW = 300.0
MAX_BODY = 4 * 1024 * 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (          -- never cleared: ids are never reused
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          REAL NOT NULL,                 -- server clock (real time + offset)
    wall_at     REAL NOT NULL,                 -- real time
    vendor      TEXT NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    query       TEXT NOT NULL,
    headers     TEXT NOT NULL,
    body        TEXT NOT NULL,
    key         TEXT,
    key_kind    TEXT,
    status      INTEGER,                       -- NULL: no HTTP response was sent
    effect      TEXT NOT NULL,
    fault       TEXT,
    object_kind TEXT,
    object_id   TEXT,
    response    TEXT,
    error       TEXT
);
CREATE INDEX IF NOT EXISTS requests_vendor ON requests (vendor, id);
CREATE TABLE IF NOT EXISTS objects (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    id         TEXT NOT NULL,
    scope      TEXT NOT NULL,                  -- incident / issue / conversation / channel / queue
    key        TEXT,                           -- idempotency key / step key / nonce / dedup id
    created_at REAL NOT NULL,
    request_id INTEGER,
    data       TEXT NOT NULL,
    UNIQUE (kind, id)
);
CREATE INDEX IF NOT EXISTS objects_lookup ON objects (kind, scope, key, created_at);
CREATE TABLE IF NOT EXISTS idempotency (       -- incident.io keys: kept forever
    vendor     TEXT NOT NULL,
    operation  TEXT NOT NULL,
    key        TEXT NOT NULL,
    object_id  TEXT NOT NULL,
    status     INTEGER NOT NULL,
    response   TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (vendor, operation, key)
);
CREATE TABLE IF NOT EXISTS faults (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    vendor     TEXT NOT NULL,
    action     TEXT NOT NULL,
    path_regex TEXT,
    method     TEXT,
    seconds    REAL,
    count      INTEGER NOT NULL,
    remaining  INTEGER NOT NULL,
    created_at REAL NOT NULL
);
"""


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid(ts: float) -> str:
    value = (int(ts * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


# --------------------------------------------------------------------------- storage


class Store:
    """The SQLite file: one connection, one lock, explicit transactions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.closed = False
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RuntimeError(f"{path}: could not switch SQLite to WAL mode (got {mode!r})")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("PRAGMA busy_timeout=10000")
        self.conn.executescript(SCHEMA)
        row = self.conn.execute("SELECT value FROM meta WHERE name='clock_offset'").fetchone()
        self.clock_offset = float(row[0]) if row else 0.0

    def now(self) -> float:
        return time.time() + self.clock_offset

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            if self.closed:
                raise RuntimeError("the vendor store is closed")
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.conn.close()

    # -- control state ------------------------------------------------------------

    def advance_clock(self, seconds: float) -> None:
        with self.transaction() as conn:
            offset = self.clock_offset + seconds
            conn.execute(
                "INSERT INTO meta (name, value) VALUES ('clock_offset', ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (repr(offset),),
            )
        self.clock_offset = offset

    def reset(self) -> None:
        with self.transaction() as conn:
            for table in ("requests", "objects", "idempotency", "faults"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM meta WHERE name='clock_offset'")
        self.clock_offset = 0.0

    def take_faults(self, vendor: str, method: str, path: str) -> tuple[dict | None, dict | None]:
        """The delay fault and the other fault that apply to this request (each uses one)."""
        delay: dict | None = None
        other: dict | None = None
        with self.transaction() as conn:
            rows = conn.execute("SELECT * FROM faults WHERE remaining > 0 ORDER BY id").fetchall()
            for row in rows:
                if row["vendor"] not in ("*", vendor):
                    continue
                if row["method"] and row["method"].upper() != method:
                    continue
                if row["path_regex"] and not re.search(row["path_regex"], path):
                    continue
                if row["action"] == "delay":
                    if delay is not None:
                        continue
                    delay = dict(row)
                elif other is None:
                    other = dict(row)
                else:
                    continue
                conn.execute(
                    "UPDATE faults SET remaining = remaining - 1 WHERE id = ?", (row["id"],)
                )
        return delay, other


def _next(conn: sqlite3.Connection, name: str, start: int = 1) -> int:
    row = conn.execute(
        "INSERT INTO counters (name, value) VALUES (?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value",
        (name, start),
    ).fetchone()
    return int(row[0])


# --------------------------------------------------------------------------- requests


@dataclass
class Incoming:
    method: str
    path: str  # raw path, without the query string
    query: dict[str, list[str]]
    raw_query: str
    headers: dict[str, str]
    body: bytes
    vendor: str
    segments: list[str]  # unquoted path segments after the vendor prefix
    at: float
    wall_at: float

    def header(self, name: str) -> str | None:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


@dataclass
class Outcome:
    status: int | None
    body: Any
    effect: str
    object_kind: str | None = None
    object_id: str | None = None
    error: str | None = None
    content_type: str = "application/json"


class Reject(Exception):
    """A 4xx answer; the request is recorded as ``rejected`` and has no effect."""

    def __init__(
        self, status: int, message: str, *, field: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.code = code


def error_body(
    vendor: str, status: int, message: str, field: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """An error in the shape the vendor uses (each carries the plain message)."""
    if vendor == "incidentio":
        kind = {404: "not_found", 409: "conflict"}.get(status, "validation_error")
        err: dict[str, Any] = {"code": code or kind, "message": message}
        if field:
            err["source"] = {"field": field}
        return {"type": kind, "status": status, "request_id": str(uuid.uuid4()), "errors": [err]}
    if vendor == "jira":
        return {"errorMessages": [message], "errors": {field: message} if field else {}}
    if vendor == "teams":
        return {
            "error": {
                "code": code or ("NotFound" if status == 404 else "BadArgument"),
                "message": message,
            }
        }
    if vendor == "discord":
        if status == 404:
            return {"message": message, "code": int(code or 0)}
        errors = {field: {"_errors": [{"code": "BASE_TYPE_INVALID", "message": message}]}}
        return {
            "message": f"Invalid Form Body: {message}",
            "code": 50035,
            "errors": errors if field else {},
        }
    if vendor == "sqs":
        return {
            "__type": f"com.amazonaws.sqs#{code or 'InvalidParameterValue'}",
            "message": message,
        }
    return {"error": message}


class Call:
    """One vendor request being handled inside the store's transaction."""

    def __init__(self, app: VendorApp, conn: sqlite3.Connection, req: Incoming) -> None:
        self.app = app
        self.conn = conn
        self.req = req
        self.now = app.store.now()  # when the effect is applied (after any injected delay)
        self.key: str | None = None
        self.key_kind: str | None = None
        self.created: list[int] = []  # object seqs created by this request

    # -- body -----------------------------------------------------------------------

    def json_object(self) -> dict[str, Any]:
        raw = self.req.body
        if not raw.strip():
            raise Reject(400, "the request body is empty: a JSON object is required")
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise Reject(400, f"the request body is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise Reject(400, f"the request body must be a JSON object, not {type(obj).__name__}")
        return obj

    # -- objects --------------------------------------------------------------------

    def insert(
        self, kind: str, obj_id: str, scope: str, key: str | None, data: dict[str, Any]
    ) -> None:
        cur = self.conn.execute(
            "INSERT INTO objects (kind, id, scope, key, created_at, data) VALUES (?,?,?,?,?,?)",
            (kind, obj_id, scope, key, self.now, _dumps(data)),
        )
        self.created.append(int(cur.lastrowid))

    def get(self, kind: str, obj_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT data FROM objects WHERE kind = ? AND id = ?", (kind, obj_id)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def update(self, kind: str, obj_id: str, data: dict[str, Any]) -> None:
        self.conn.execute(
            "UPDATE objects SET data = ? WHERE kind = ? AND id = ?", (_dumps(data), kind, obj_id)
        )

    def latest(self, kind: str, scope: str, key: str, since: float) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT data FROM objects WHERE kind = ? AND scope = ? AND key = ? "
            "AND created_at > ? ORDER BY seq DESC LIMIT 1",
            (kind, scope, key, since),
        ).fetchone()
        return json.loads(row[0]) if row else None

    def counter(self, name: str, start: int = 1) -> int:
        return _next(self.conn, name, start)


# -- validation helpers ----------------------------------------------------------------


def _text(
    obj: dict[str, Any],
    name: str,
    *,
    required: bool,
    max_len: int | None = None,
    nullable: bool = False,
    where: str = "",
) -> str | None:
    label = f"{where}{name}"
    if name not in obj or (obj[name] is None and nullable):
        if required:
            raise Reject(400, f"{label} is required", field=label)
        return None
    value = obj[name]
    if not isinstance(value, str):
        raise Reject(400, f"{label} must be a string, not {type(value).__name__}", field=label)
    if required and not value.strip():
        raise Reject(400, f"{label} must not be empty", field=label)
    if max_len is not None and len(value) > max_len:
        raise Reject(400, f"{label} is longer than {max_len} characters", field=label)
    return value


# --------------------------------------------------------------------------- the vendors

Handler = Callable[["Call", list[str]], Outcome]


@dataclass
class Route:
    vendor: str
    method: str
    pattern: tuple[str, ...]  # "{}" matches one segment
    handler: Handler
    name: str = ""

    def match(self, segments: list[str]) -> list[str] | None:
        if len(segments) != len(self.pattern):
            return None
        params: list[str] = []
        for part, seg in zip(self.pattern, segments, strict=True):
            if part == "{}":
                if not seg:
                    return None
                params.append(seg)
            elif part != seg:
                return None
        return params


_ISSUE_KEY = re.compile(r"^[A-Z][A-Z0-9_]*-[1-9][0-9]*$")
_SNOWFLAKE = re.compile(r"^[0-9]{1,20}$")
_SQS_ID = re.compile(r"^[!-~]{1,128}$")  # alphanumerics and punctuation, as SQS allows
_DISCORD_EPOCH_MS = 1420070400000
_INCIDENT_FIELDS = ("name", "summary", "severity_id", "incident_status_id", "visibility")


@dataclass
class Options:
    discord_window: float = DEFAULT_DISCORD_WINDOW
    sqs_window: float = DEFAULT_SQS_WINDOW


@dataclass
class VendorApp:
    store: Store
    options: Options = field(default_factory=Options)
    routes: list[Route] = field(default_factory=list)

    def __post_init__(self) -> None:
        r = self.routes
        r.append(Route("incidentio", "POST", ("v2", "incidents"), self.incident_create))
        r.append(Route("incidentio", "GET", ("v2", "incidents"), self.incident_list))
        r.append(Route("incidentio", "GET", ("v2", "incidents", "{}"), self.incident_get))
        r.append(
            Route(
                "incidentio",
                "POST",
                ("v2", "incidents", "{}", "actions", "edit"),
                self.incident_edit,
            )
        )
        jira_issue = ("rest", "api", "3", "issue", "{}")
        r.append(Route("jira", "POST", (*jira_issue, "comment"), self.jira_add_comment))
        r.append(Route("jira", "GET", (*jira_issue, "comment"), self.jira_comments))
        r.append(Route("jira", "GET", jira_issue, self.jira_issue))
        r.append(
            Route("teams", "POST", ("v3", "conversations", "{}", "activities"), self.teams_activity)
        )
        r.append(
            Route(
                "teams", "GET", ("v3", "conversations", "{}", "activities"), self.teams_activities
            )
        )
        r.append(
            Route(
                "discord",
                "POST",
                ("api", "v10", "channels", "{}", "messages"),
                self.discord_message,
            )
        )
        r.append(Route("sqs", "POST", (), self.sqs_action))

    # -- dispatch -------------------------------------------------------------------

    def handle(self, req: Incoming, fault: str | None) -> Outcome:
        """Apply one vendor request and record it, in one committed transaction."""
        with self.store.transaction() as conn:
            call = Call(self, conn, req)
            conn.execute("SAVEPOINT handler")
            try:
                outcome = self._dispatch(call)
            except Reject as rej:
                conn.execute("ROLLBACK TO handler")
                call.created.clear()
                outcome = Outcome(
                    rej.status,
                    error_body(req.vendor, rej.status, rej.message, rej.field, rej.code),
                    "rejected",
                    error=rej.message,
                )
            except Exception as exc:  # a bug in the imitation: no effect, 500
                conn.execute("ROLLBACK TO handler")
                call.created.clear()
                message = f"internal error in the vendor service: {exc!r}"
                outcome = Outcome(500, {"error": message}, "failed", error=message)
            conn.execute("RELEASE handler")
            request_id = self._record(conn, req, outcome, call.key, call.key_kind, fault)
            if call.created:
                conn.executemany(
                    "UPDATE objects SET request_id = ? WHERE seq = ?",
                    [(request_id, seq) for seq in call.created],
                )
        return outcome

    def record_only(self, req: Incoming, outcome: Outcome, fault: str) -> None:
        """Record a request a fault stopped before any effect."""
        with self.store.transaction() as conn:
            key, kind = _peek_key(req)
            self._record(conn, req, outcome, key, kind, fault)

    def _dispatch(self, call: Call) -> Outcome:
        req = call.req
        if req.vendor not in VENDORS:
            raise Reject(404, f"no vendor is imitated at {req.path!r}")
        allowed: list[str] = []
        for route in self.routes:
            if route.vendor != req.vendor:
                continue
            params = route.match(req.segments)
            if params is None:
                continue
            if route.method != req.method:
                allowed.append(route.method)
                continue
            return route.handler(call, params)
        if allowed:
            raise Reject(
                405,
                f"method {req.method} is not allowed on {req.path} "
                f"(allowed: {', '.join(sorted(set(allowed)))})",
            )
        raise Reject(404, f"no {req.vendor} endpoint at {req.path}")

    @staticmethod
    def _record(
        conn: sqlite3.Connection,
        req: Incoming,
        outcome: Outcome,
        key: str | None,
        key_kind: str | None,
        fault: str | None,
    ) -> int:
        cur = conn.execute(
            "INSERT INTO requests (at, wall_at, vendor, method, path, query, headers, body, key,"
            " key_kind, status, effect, fault, object_kind, object_id, response, error)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                req.at,
                req.wall_at,
                req.vendor,
                req.method,
                req.path,
                req.raw_query,
                _dumps(req.headers),
                req.body.decode("utf-8", errors="replace"),
                key,
                key_kind,
                None if fault in ("drop_after_accept", "drop_before_accept") else outcome.status,
                outcome.effect,
                fault,
                outcome.object_kind,
                outcome.object_id,
                None if outcome.body is None else _dumps(outcome.body),
                outcome.error,
            ),
        )
        return int(cur.lastrowid)

    # -- incident.io ----------------------------------------------------------------

    def incident_create(self, call: Call, _params: list[str]) -> Outcome:
        body = call.json_object()
        key = _text(body, "idempotency_key", required=True, max_len=512)
        call.key, call.key_kind = key, "idempotency_key"
        name = _text(body, "name", required=True, max_len=1000)
        summary = _text(body, "summary", required=False, nullable=True)
        severity_id = _text(body, "severity_id", required=False, nullable=True)
        visibility = _text(body, "visibility", required=False) or "public"
        if visibility not in ("public", "private"):
            raise Reject(400, "visibility must be 'public' or 'private'", field="visibility")
        seen = call.conn.execute(
            "SELECT object_id FROM idempotency WHERE vendor='incidentio' "
            "AND operation='incidents.create' AND key=?",
            (key,),
        ).fetchone()
        if seen:
            incident = call.get(INCIDENT, seen[0])
            return Outcome(200, {"incident": incident}, "deduplicated", INCIDENT, seen[0])
        number = call.counter("incident.reference")
        incident = {
            "id": _ulid(call.now),
            "reference": f"INC-{number}",
            "name": name,
            "summary": summary,
            "severity_id": severity_id,
            "incident_status_id": "triage",
            "visibility": visibility,
            "created_at": _iso(call.now),
            "updated_at": _iso(call.now),
        }
        call.insert(INCIDENT, incident["id"], incident["id"], key, incident)
        response = {"incident": incident}
        call.conn.execute(
            "INSERT INTO idempotency VALUES ('incidentio', 'incidents.create', ?, ?, 201, ?, ?)",
            (key, incident["id"], _dumps(response), call.now),
        )
        return Outcome(201, response, "created", INCIDENT, incident["id"])

    def incident_edit(self, call: Call, params: list[str]) -> Outcome:
        incident_id = params[0]
        body = call.json_object()
        key = _text(body, "idempotency_key", required=True, max_len=512)
        call.key, call.key_kind = key, "idempotency_key"
        fields = body.get("incident")
        if not isinstance(fields, dict) or not fields:
            raise Reject(
                400, "incident must be a non-empty object of the fields to change", field="incident"
            )
        unknown = sorted(set(fields) - set(_INCIDENT_FIELDS))
        if unknown:
            raise Reject(
                400,
                f"incident has fields that cannot be edited: {', '.join(unknown)} "
                f"(editable: {', '.join(_INCIDENT_FIELDS)})",
                field="incident",
            )
        for name in _INCIDENT_FIELDS:
            if name in fields:
                _text(
                    fields,
                    name,
                    required=name in ("name", "visibility"),
                    nullable=name not in ("name", "visibility"),
                    where="incident.",
                )
        if fields.get("visibility", "public") not in ("public", "private"):
            raise Reject(
                400,
                "incident.visibility must be 'public' or 'private'",
                field="incident.visibility",
            )
        seen = call.conn.execute(
            "SELECT object_id, status, response FROM idempotency WHERE vendor='incidentio' "
            "AND operation='incidents.edit' AND key=?",
            (key,),
        ).fetchone()
        if seen:
            edit = call.get(INCIDENT_EDIT, seen[0]) or {}
            if edit.get("incident_id") != incident_id:
                raise Reject(
                    409,
                    f"idempotency_key {key!r} was already used to edit incident "
                    f"{edit.get('incident_id')}",
                    field="idempotency_key",
                )
            return Outcome(
                int(seen[1]), json.loads(seen[2]), "deduplicated", INCIDENT_EDIT, seen[0]
            )
        incident = call.get(INCIDENT, incident_id)
        if incident is None:
            raise Reject(404, f"no incident with id {incident_id!r}")
        incident.update(fields)
        incident["updated_at"] = _iso(call.now)
        call.update(INCIDENT, incident_id, incident)
        edit_id = _ulid(call.now)
        call.insert(
            INCIDENT_EDIT,
            edit_id,
            incident_id,
            key,
            {
                "id": edit_id,
                "incident_id": incident_id,
                "fields": fields,
                "idempotency_key": key,
                "created_at": _iso(call.now),
            },
        )
        response = {"incident": incident}
        call.conn.execute(
            "INSERT INTO idempotency VALUES ('incidentio', 'incidents.edit', ?, ?, 200, ?, ?)",
            (key, edit_id, _dumps(response), call.now),
        )
        return Outcome(200, response, "created", INCIDENT_EDIT, edit_id)

    def incident_get(self, call: Call, params: list[str]) -> Outcome:
        incident = call.get(INCIDENT, params[0])
        if incident is None:
            raise Reject(404, f"no incident with id {params[0]!r}")
        return Outcome(200, {"incident": incident}, "read", INCIDENT, params[0])

    def incident_list(self, call: Call, _params: list[str]) -> Outcome:
        rows = call.conn.execute(
            "SELECT data FROM objects WHERE kind = ? ORDER BY seq", (INCIDENT,)
        ).fetchall()
        incidents = [json.loads(row[0]) for row in rows]
        return Outcome(
            200, {"incidents": incidents, "pagination_meta": {"page_size": len(incidents)}}, "read"
        )

    # -- Jira -------------------------------------------------------------------------

    @staticmethod
    def _issue_key(key: str) -> str:
        if not _ISSUE_KEY.match(key):
            raise Reject(404, "Issue does not exist or you do not have permission to see it.")
        return key

    def jira_add_comment(self, call: Call, params: list[str]) -> Outcome:
        issue_key = self._issue_key(params[0])
        body = call.json_object()
        properties = body.get("properties", [])
        if not isinstance(properties, list):
            raise Reject(400, "properties must be a list of {key, value}", field="properties")
        for i, prop in enumerate(properties):
            if not isinstance(prop, dict) or "value" not in prop:
                raise Reject(
                    400, f"properties[{i}] must be an object with key and value", field="properties"
                )
            _text(prop, "key", required=True, max_len=255, where=f"properties[{i}].")
            if prop["key"] == STEP_KEY_PROPERTY and isinstance(prop["value"], str):
                call.key, call.key_kind = prop["value"], "step_key_property"
        if "body" not in body:
            raise Reject(400, "body is required: comment text or an ADF document", field="body")
        text = body["body"]
        if isinstance(text, str):
            if not text.strip():
                raise Reject(400, "Comment body can not be empty!", field="comment")
        elif isinstance(text, dict):
            if text.get("type") != "doc" or not isinstance(text.get("content"), list):
                raise Reject(
                    400,
                    "body must be plain text or an ADF document "
                    "({type: 'doc', version: 1, content: [...]})",
                    field="comment",
                )
        else:
            raise Reject(400, "body must be plain text or an ADF document", field="comment")
        comment_id = str(10000 + call.counter("jira.comment"))
        base = "https://jira.local/rest/api/3"
        comment = {
            "id": comment_id,
            "self": f"{base}/issue/{issue_key}/comment/{comment_id}",
            "issueKey": issue_key,
            "author": {"accountId": "ticketiq", "displayName": "TicketIQ"},
            "body": text,
            "created": _iso(call.now),
            "updated": _iso(call.now),
            "properties": [{"key": p["key"], "value": p["value"]} for p in properties],
        }
        call.insert(JIRA_COMMENT, comment_id, issue_key, call.key, comment)
        return Outcome(201, comment, "created", JIRA_COMMENT, comment_id)

    def jira_comments(self, call: Call, params: list[str]) -> Outcome:
        issue_key = self._issue_key(params[0])
        try:
            start = int(call.req.param("startAt") or 0)
            size = int(call.req.param("maxResults") or 5000)
        except ValueError:
            raise Reject(400, "startAt and maxResults must be integers") from None
        if start < 0 or size < 0:
            raise Reject(400, "startAt and maxResults must not be negative")
        expand = {e.strip() for e in (call.req.param("expand") or "").split(",")}
        rows = call.conn.execute(
            "SELECT data FROM objects WHERE kind = ? AND scope = ? ORDER BY seq",
            (JIRA_COMMENT, issue_key),
        ).fetchall()
        comments = []
        for row in rows[start : start + size]:
            comment = json.loads(row[0])
            if "properties" not in expand:
                comment.pop("properties", None)
            comments.append(comment)
        return Outcome(
            200,
            {"startAt": start, "maxResults": size, "total": len(rows), "comments": comments},
            "read",
        )

    def jira_issue(self, call: Call, params: list[str]) -> Outcome:
        return Outcome(200, jira_issue_for(self._issue_key(params[0])), "read")

    # -- Teams ------------------------------------------------------------------------

    def teams_activity(self, call: Call, params: list[str]) -> Outcome:
        conversation_id = params[0]
        body = call.json_object()
        if body.get("type") != "message":
            raise Reject(400, "type must be 'message'", field="type")
        text = _text(body, "text", required=False, nullable=True)
        attachments = body.get("attachments") or []
        if not isinstance(attachments, list):
            raise Reject(400, "attachments must be a list", field="attachments")
        for i, att in enumerate(attachments):
            if not isinstance(att, dict) or not isinstance(att.get("contentType"), str):
                raise Reject(
                    400,
                    f"attachments[{i}] must be an object with a contentType",
                    field="attachments",
                )
        if not (text and text.strip()) and not attachments:
            raise Reject(400, "a message needs text or attachments", field="text")
        reply_to = _text(body, "replyToId", required=False, nullable=True)
        channel_data = body.get("channelData")
        if channel_data is not None and not isinstance(channel_data, dict):
            raise Reject(400, "channelData must be an object", field="channelData")
        activity_id = f"1:{call.counter('teams.activity')}{uuid.uuid4().hex[:12]}"
        activity = {
            "id": activity_id,
            "type": "message",
            "conversation": {"id": conversation_id},
            "text": text,
            "attachments": attachments,
            "replyToId": reply_to,
            "channelData": channel_data or {},
            "timestamp": _iso(call.now),
        }
        call.insert(TEAMS_REPLY, activity_id, conversation_id, None, activity)
        return Outcome(201, {"id": activity_id}, "created", TEAMS_REPLY, activity_id)

    def teams_activities(self, call: Call, params: list[str]) -> Outcome:
        """The messages posted to a conversation (as Microsoft Graph lists a chat's
        messages): what a reader of Teams replies reads back."""
        rows = call.conn.execute(
            "SELECT data FROM objects WHERE kind = ? AND scope = ? ORDER BY seq",
            (TEAMS_REPLY, params[0]),
        ).fetchall()
        return Outcome(200, {"activities": [json.loads(row[0]) for row in rows]}, "read")

    # -- Discord ----------------------------------------------------------------------

    def discord_message(self, call: Call, params: list[str]) -> Outcome:
        channel_id = params[0]
        if not _SNOWFLAKE.match(channel_id):
            raise Reject(404, "Unknown Channel", code="10003")
        body = call.json_object()
        nonce = body.get("nonce")
        if nonce is not None:
            if isinstance(nonce, bool) or not isinstance(nonce, (int, str)):
                raise Reject(400, "nonce must be an integer or a string", field="nonce")
            if isinstance(nonce, str) and len(nonce) > 25:
                raise Reject(400, "nonce must be at most 25 characters", field="nonce")
            call.key, call.key_kind = str(nonce), "nonce"
        enforce = body.get("enforce_nonce", False)
        if not isinstance(enforce, bool):
            raise Reject(400, "enforce_nonce must be a boolean", field="enforce_nonce")
        content = _text(body, "content", required=False, max_len=2000, nullable=True)
        embeds = body.get("embeds") or []
        if not isinstance(embeds, list):
            raise Reject(400, "embeds must be a list", field="embeds")
        if not (content and content.strip()) and not embeds:
            raise Reject(400, "Cannot send an empty message", field="content")
        if enforce and nonce is not None:
            earlier = call.latest(
                DISCORD_MESSAGE, channel_id, str(nonce), call.now - self.options.discord_window
            )
            if earlier is not None:
                return Outcome(200, earlier, "deduplicated", DISCORD_MESSAGE, earlier["id"])
        ms = int(call.now * 1000)
        message_id = str(
            ((ms - _DISCORD_EPOCH_MS) << 22) | (call.counter("discord.message") & 0x3FFFFF)
        )
        message = {
            "id": message_id,
            "type": 0,
            "channel_id": channel_id,
            "content": content or "",
            "embeds": embeds,
            "nonce": nonce,
            "author": {"id": "1", "username": "ticketiq", "bot": True},
            "timestamp": _iso(call.now),
        }
        call.insert(
            DISCORD_MESSAGE, message_id, channel_id, None if nonce is None else str(nonce), message
        )
        return Outcome(200, message, "created", DISCORD_MESSAGE, message_id)

    # -- SQS FIFO ---------------------------------------------------------------------

    def sqs_action(self, call: Call, _params: list[str]) -> Outcome:
        target = call.req.header("X-Amz-Target")
        if not target:
            raise Reject(
                400,
                "the X-Amz-Target header is required (AmazonSQS.SendMessage)",
                code="MissingAction",
            )
        if target != "AmazonSQS.SendMessage":
            raise Reject(
                400,
                f"{target} is not imitated: only AmazonSQS.SendMessage",
                code="UnsupportedOperation",
            )
        body = call.json_object()
        dedup_id = _text(body, "MessageDeduplicationId", required=False)
        if dedup_id is not None:
            call.key, call.key_kind = dedup_id, "dedup_id"
        queue_url = _text(body, "QueueUrl", required=True)
        assert queue_url is not None
        if not queue_url.endswith(".fifo"):
            raise Reject(
                400,
                f"{queue_url} is not a FIFO queue: only FIFO queues are imitated",
                code="InvalidParameterValue",
            )
        message_body = _text(body, "MessageBody", required=True)
        assert message_body is not None
        if len(message_body.encode("utf-8")) > 262144:
            raise Reject(
                400, "MessageBody is longer than 262144 bytes", code="InvalidParameterValue"
            )
        group_id = body.get("MessageGroupId")
        if not isinstance(group_id, str) or not _SQS_ID.match(group_id):
            raise Reject(
                400,
                "The request must contain the parameter MessageGroupId "
                "(1-128 alphanumeric or punctuation characters).",
                code="MissingParameter",
            )
        if dedup_id is None:
            raise Reject(
                400,
                "The queue should either have ContentBasedDeduplication enabled "
                "or MessageDeduplicationId provided explicitly",
                code="InvalidParameterValue",
            )
        if not _SQS_ID.match(dedup_id):
            raise Reject(
                400,
                "MessageDeduplicationId must be 1-128 alphanumeric or punctuation characters",
                code="InvalidParameterValue",
            )
        earlier = call.latest(SQS_MESSAGE, queue_url, dedup_id, call.now - self.options.sqs_window)
        if earlier is not None:
            return Outcome(
                200,
                _sqs_reply(earlier),
                "deduplicated",
                SQS_MESSAGE,
                earlier["MessageId"],
                content_type="application/x-amz-json-1.0",
            )
        message = {
            "MessageId": str(uuid.uuid4()),
            "QueueUrl": queue_url,
            "MessageBody": message_body,
            "MD5OfMessageBody": hashlib.md5(message_body.encode("utf-8")).hexdigest(),
            "MessageGroupId": group_id,
            "MessageDeduplicationId": dedup_id,
            "SequenceNumber": f"{call.counter('sqs.sequence'):020d}",
            "SentTimestamp": str(int(call.now * 1000)),
        }
        call.insert(SQS_MESSAGE, message["MessageId"], queue_url, dedup_id, message)
        return Outcome(
            200,
            _sqs_reply(message),
            "created",
            SQS_MESSAGE,
            message["MessageId"],
            content_type="application/x-amz-json-1.0",
        )


def _sqs_reply(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in ("MessageId", "MD5OfMessageBody", "SequenceNumber")}


def _peek_key(req: Incoming) -> tuple[str | None, str | None]:
    """The dedupe key a request carries, for requests a fault stopped before handling."""
    try:
        body = json.loads(req.body.decode("utf-8")) if req.body.strip() else None
    except (UnicodeDecodeError, ValueError):
        return None, None
    if not isinstance(body, dict):
        return None, None
    if req.vendor == "incidentio" and isinstance(body.get("idempotency_key"), str):
        return body["idempotency_key"], "idempotency_key"
    if req.vendor == "discord" and isinstance(body.get("nonce"), (int, str)):
        return str(body["nonce"]), "nonce"
    if req.vendor == "sqs" and isinstance(body.get("MessageDeduplicationId"), str):
        return body["MessageDeduplicationId"], "dedup_id"
    if req.vendor == "jira":
        for prop in body.get("properties") or []:
            if (
                isinstance(prop, dict)
                and prop.get("key") == STEP_KEY_PROPERTY
                and isinstance(prop.get("value"), str)
            ):
                return prop["value"], "step_key_property"
    return None, None


_SUMMARY_WORDS = (
    ("Login", "Checkout", "Search", "Billing", "Export", "Sync", "Webhook", "Report"),
    ("fails", "is slow", "times out", "shows stale data", "crashes", "returns 500"),
    ("for some users", "after the upgrade", "on mobile", "in the EU region", "intermittently"),
)
_STATUSES = (("1", "To Do"), ("3", "In Progress"), ("10001", "In Review"), ("10002", "Done"))
_PRIORITIES = (("1", "Highest"), ("2", "High"), ("3", "Medium"), ("4", "Low"), ("5", "Lowest"))


def jira_issue_for(issue_key: str) -> dict[str, Any]:
    """The deterministic issue behind a key: every field is derived by hashing the key."""
    digest = hashlib.sha256(issue_key.encode("utf-8")).digest()
    words = [seq[digest[i] % len(seq)] for i, seq in enumerate(_SUMMARY_WORDS)]
    status_id, status = _STATUSES[digest[3] % len(_STATUSES)]
    priority_id, priority = _PRIORITIES[digest[4] % len(_PRIORITIES)]
    issue_id = str(10000 + int.from_bytes(digest[5:8], "big") % 90000)
    return {
        "id": issue_id,
        "key": issue_key,
        "self": f"https://jira.local/rest/api/3/issue/{issue_id}",
        "fields": {
            "summary": " ".join(words),
            "status": {"id": status_id, "name": status},
            "priority": {"id": priority_id, "name": priority},
            "issuetype": {"name": "Bug" if digest[8] % 2 else "Task"},
            "project": {"key": issue_key.rsplit("-", 1)[0]},
        },
    }


# --------------------------------------------------------------------------- control


def _row_to_request(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["headers"] = json.loads(out["headers"])
    for name in ("body", "response"):
        raw = out[name]
        if raw:
            with contextlib.suppress(ValueError):
                out[name] = json.loads(raw)
    return out


class Control:
    def __init__(self, app: VendorApp) -> None:
        self.app = app
        self.store = app.store

    def handle(
        self, method: str, segments: list[str], query: dict[str, list[str]], body: bytes
    ) -> tuple[int, Any]:
        name = "/".join(segments)
        route = (method, name)
        if route == ("GET", "health"):
            return 200, {
                "ok": True,
                "pid": os.getpid(),
                "db": str(self.store.path),
                "clock": self.store.now(),
                "clock_offset": self.store.clock_offset,
                "discord_window": self.app.options.discord_window,
                "sqs_window": self.app.options.sqs_window,
            }
        if route == ("GET", "requests"):
            return 200, {"requests": self.requests(query)}
        if route == ("GET", "effects"):
            return 200, self.effects()
        if route == ("POST", "faults"):
            return 201, {"fault": self.add_fault(_json_object(body))}
        if route == ("GET", "faults"):
            with self.store.lock:
                rows = self.store.conn.execute("SELECT * FROM faults ORDER BY id").fetchall()
            return 200, {"faults": [dict(r) for r in rows]}
        if route == ("DELETE", "faults"):
            with self.store.transaction() as conn:
                conn.execute("DELETE FROM faults")
            return 200, {"ok": True}
        if route == ("POST", "reset"):
            self.store.reset()
            return 200, {"ok": True}
        if route == ("POST", "clock"):
            obj = _json_object(body)
            seconds = obj.get("advance_seconds")
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not math.isfinite(seconds)
                or seconds < 0
            ):
                raise Reject(400, "advance_seconds must be a finite number >= 0")
            self.store.advance_clock(float(seconds))
            return 200, {"clock": self.store.now(), "clock_offset": self.store.clock_offset}
        raise Reject(404, f"no control endpoint {method} /_control/{name}")

    def requests(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        where, args = [], []
        for name in ("vendor", "effect"):
            if query.get(name) and query[name][0]:
                where.append(f"{name} = ?")
                args.append(query[name][0])
        if query.get("path_prefix") and query["path_prefix"][0]:
            where.append("substr(path, 1, ?) = ?")
            prefix = query["path_prefix"][0]
            args += [len(prefix), prefix]
        if query.get("after_id") and query["after_id"][0]:
            try:
                args.append(int(query["after_id"][0]))
            except ValueError:
                raise Reject(400, "after_id must be an integer") from None
            where.append("id > ?")
        sql = "SELECT * FROM requests"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self.store.lock:
            rows = self.store.conn.execute(sql + " ORDER BY id", args).fetchall()
        return [_row_to_request(r) for r in rows]

    def effects(self) -> dict[str, Any]:
        with self.store.lock:
            rows = self.store.conn.execute("SELECT * FROM objects ORDER BY seq").fetchall()
        counts = dict.fromkeys(VENDORS, 0)
        by_kind = {plural: 0 for _, plural in OBJECT_LISTS.values()}
        objects: dict[str, list[dict[str, Any]]] = {plural: [] for plural in by_kind}
        for row in rows:
            vendor, plural = OBJECT_LISTS[row["kind"]]
            counts[vendor] += 1
            by_kind[plural] += 1
            obj = json.loads(row["data"])
            obj["_record"] = {
                "request_id": row["request_id"],
                "scope": row["scope"],
                "key": row["key"],
                "created_at": row["created_at"],
            }
            objects[plural].append(obj)
        return {"counts": counts, "by_kind": by_kind, "objects": objects}

    def add_fault(self, obj: dict[str, Any]) -> dict[str, Any]:
        vendor = obj.get("vendor")
        if vendor not in (*VENDORS, "*"):
            raise Reject(400, f"vendor must be one of {', '.join(VENDORS)} or '*'")
        action = obj.get("action")
        if action not in FAULT_ACTIONS:
            raise Reject(400, f"action must be one of {', '.join(FAULT_ACTIONS)}")
        path_regex = obj.get("path_regex")
        if path_regex is not None:
            if not isinstance(path_regex, str):
                raise Reject(400, "path_regex must be a string")
            try:
                re.compile(path_regex)
            except re.error as exc:
                raise Reject(400, f"path_regex does not compile: {exc}") from None
        method = obj.get("method")
        if method is not None and not isinstance(method, str):
            raise Reject(400, "method must be a string")
        seconds = obj.get("seconds")
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise Reject(400, "seconds must be a finite number >= 0")
        if action == "delay" and seconds is None:
            raise Reject(400, "a delay fault needs seconds")
        count = obj.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise Reject(400, "count must be an integer >= 1")
        with self.store.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO faults (vendor, action, path_regex, method, seconds, count,"
                " remaining, created_at) VALUES (?,?,?,?,?,?,?,?)",
                (
                    vendor,
                    action,
                    path_regex,
                    method.upper() if method else None,
                    seconds,
                    count,
                    count,
                    self.store.now(),
                ),
            )
            row = conn.execute("SELECT * FROM faults WHERE id = ?", (cur.lastrowid,)).fetchone()
        return dict(row)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(body.decode("utf-8")) if body.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise Reject(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise Reject(400, "the request body must be a JSON object")
    return obj


# --------------------------------------------------------------------------- HTTP


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
                chunks.append(self.rfile.read(size))
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
        return self.rfile.read(n)

    def _handle(self) -> None:
        wall = time.time()
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
        self._send(outcome.status or 500, outcome.body, outcome.content_type)

    def _send(self, status: int, obj: Any, content_type: str = "application/json") -> None:
        data = _dumps(obj).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
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


# --------------------------------------------------------------------------- CLI


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
        prog="python -m ticketiq_pg.testing.vendor_sim.server",
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
    parser.add_argument("--parent-pid", type=int, help="exit when this parent process is gone")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)
    for name in ("discord_window", "sqs_window"):
        value = getattr(args, name)
        if not math.isfinite(value) or value < 0:
            parser.error(f"--{name.replace('_', '-')} must be a finite number >= 0")
    return serve(
        args.db,
        args.port,
        args.ready_file,
        Options(discord_window=args.discord_window, sqs_window=args.sqs_window),
        parent_pid=args.parent_pid,
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
