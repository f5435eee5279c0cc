"""What one vendor request is made of: the request, its outcome, a 4xx, the handler's call.

:class:`Call` is one request inside the store's transaction (the routes read and write
objects through it); :class:`Route` maps a method and path pattern to a handler;
:func:`error_body` shapes a 4xx the way each vendor does.  Standard library only.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.vendor_sim.store import STEP_KEY_PROPERTY, Options, dumps, next_counter


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
    headers: dict[str, str] | None = None


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
    if vendor == "sns":
        return {"Error": {"Type": "Sender", "Code": code or "InvalidParameter",
                          "Message": message}, "RequestId": str(uuid.uuid4())}
    if vendor == "sqs":
        return {
            "__type": f"com.amazonaws.sqs#{code or 'InvalidParameterValue'}",
            "message": message,
        }
    return {"error": message}


class Call:
    """One vendor request being handled inside the store's transaction."""

    def __init__(self, options: Options, conn: sqlite3.Connection, req: Incoming,
                 now: float) -> None:
        self.options = options  # the deduplication windows
        self.conn = conn
        self.req = req
        self.now = now  # when the effect is applied (after any injected delay)
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
            (kind, obj_id, scope, key, self.now, dumps(data)),
        )
        self.created.append(int(cur.lastrowid))

    def get(self, kind: str, obj_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT data FROM objects WHERE kind = ? AND id = ?", (kind, obj_id)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def update(self, kind: str, obj_id: str, data: dict[str, Any]) -> None:
        self.conn.execute(
            "UPDATE objects SET data = ? WHERE kind = ? AND id = ?", (dumps(data), kind, obj_id)
        )

    def latest(self, kind: str, scope: str, key: str, since: float) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT data FROM objects WHERE kind = ? AND scope = ? AND key = ? "
            "AND created_at > ? ORDER BY seq DESC LIMIT 1",
            (kind, scope, key, since),
        ).fetchone()
        return json.loads(row[0]) if row else None

    def counter(self, name: str, start: int = 1) -> int:
        return next_counter(self.conn, name, start)


def text_field(
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


def peek_key(req: Incoming) -> tuple[str | None, str | None]:
    """The dedupe key a request carries, for requests a fault stopped before handling."""
    if req.vendor == "sns":  # form-encoded (the query protocol)
        from urllib.parse import parse_qs

        found = parse_qs(req.body.decode("utf-8", "replace")).get("MessageDeduplicationId")
        return (found[0], "dedup_id") if found else (None, None)
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


def json_body(body: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(body.decode("utf-8")) if body.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise Reject(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise Reject(400, "the request body must be a JSON object")
    return obj
