"""The ``/_control`` endpoints: what tests read and steer (never recorded, never faulted).

``GET health``; ``GET requests?vendor=&path_prefix=&effect=&after_id=``; ``GET effects``;
``POST faults``, ``GET faults``, ``DELETE faults``; ``POST reset``; ``POST clock``.
Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sqlite3
from typing import Any

from harness.vendor_sim.app import VendorApp
from harness.vendor_sim.store import FAULT_ACTIONS, OBJECT_LISTS, VENDORS
from harness.vendor_sim.wire import Reject, json_body


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
                "sns_window": self.app.options.sns_window,
            }
        if route == ("GET", "requests"):
            return 200, {"requests": self.requests(query)}
        if route == ("GET", "effects"):
            return 200, self.effects()
        if route == ("POST", "rate_limits"):
            limit = json_body(body)
            vendor, per_second = limit.get("vendor"), limit.get("per_second")
            if vendor not in VENDORS:
                raise Reject(400, f"vendor must be one of {', '.join(VENDORS)}")
            if per_second is None:
                self.app.rate_limits.pop(vendor, None)
            elif isinstance(per_second, bool) or not isinstance(per_second, int | float) \
                    or not per_second > 0:
                raise Reject(400, "per_second must be a number above 0, or null")
            else:
                self.app.rate_limits[vendor] = float(per_second)
            return 200, {"rate_limits": self.app.rate_limits}
        if route == ("POST", "faults"):
            return 201, {"fault": self.add_fault(json_body(body))}
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
            obj = json_body(body)
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
        probability = obj.get("probability", 1)
        if (
            isinstance(probability, bool)
            or not isinstance(probability, (int, float))
            or not 0 < probability <= 1
        ):
            raise Reject(400, "probability must be a number in (0, 1]")
        seed = obj.get("seed")
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63
        ):
            raise Reject(400, "seed must be a 64-bit integer")
        with self.store.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO faults (vendor, action, path_regex, method, seconds, count,"
                " remaining, created_at, probability, seed) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    vendor,
                    action,
                    path_regex,
                    method.upper() if method else None,
                    seconds,
                    count,
                    count,
                    self.store.now(),
                    float(probability),
                    seed,
                ),
            )
            row = conn.execute("SELECT * FROM faults WHERE id = ?", (cur.lastrowid,)).fetchone()
        return dict(row)
