"""The vendor service's SQLite file and the vocabulary it records.

One connection behind one lock, WAL and ``synchronous=FULL``; the tables keep the recorded
requests, the objects the vendors created, incident.io's idempotency keys, the injected
faults and the clock offset.  Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

VENDORS = ("incidentio", "jira", "teams", "discord", "sqs", "sns")
EFFECTS = ("created", "deduplicated", "read", "shown", "dropped", "failed", "rejected",
           "fenced")
FAULT_ACTIONS = ("fail", "throttle", "delay", "drop_after_accept", "drop_before_accept")

# Object kinds (the ``effects`` listing names them in the plural, see OBJECT_LISTS).
INCIDENT = "incident"
INCIDENT_EDIT = "incident_edit"
JIRA_COMMENT = "jira_comment"
TEAMS_REPLY = "teams_reply"
DISCORD_MESSAGE = "discord_message"
SQS_MESSAGE = "sqs_message"
SNS_MESSAGE = "sns_message"
OBJECT_LISTS = {
    INCIDENT: ("incidentio", "incidents"),
    INCIDENT_EDIT: ("incidentio", "incident_edits"),
    JIRA_COMMENT: ("jira", "jira_comments"),
    TEAMS_REPLY: ("teams", "teams_replies"),
    DISCORD_MESSAGE: ("discord", "discord_messages"),
    SQS_MESSAGE: ("sqs", "sqs_messages"),
    SNS_MESSAGE: ("sns", "sns_messages"),
}

STEP_KEY_PROPERTY = "ticketiq.step_key"
DEFAULT_DISCORD_WINDOW = 120.0
DEFAULT_SQS_WINDOW = 300.0
DEFAULT_SNS_WINDOW = 300.0


@dataclass
class Options:
    """The deduplication windows, in seconds, of Discord's nonce, SQS's and SNS's ids."""

    discord_window: float = DEFAULT_DISCORD_WINDOW
    sqs_window: float = DEFAULT_SQS_WINDOW
    sns_window: float = DEFAULT_SNS_WINDOW

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
CREATE TABLE IF NOT EXISTS fences (            -- the newest fencing token seen per run
    run_id TEXT PRIMARY KEY,
    epoch  INTEGER NOT NULL
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
    created_at REAL NOT NULL,
    probability REAL NOT NULL DEFAULT 1,         -- chance it applies to a matching request
    seed       INTEGER                         -- seeds those draws (NULL: at random)
);
"""
#: Columns added to ``faults`` since the first version (a file kept from then gains them).
FAULT_COLUMNS = {"probability": "REAL NOT NULL DEFAULT 1", "seed": "INTEGER"}


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(ts: float) -> str:
    value = (int(ts * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


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
        have = {r["name"] for r in self.conn.execute("PRAGMA table_info(faults)").fetchall()}
        for column, decl in FAULT_COLUMNS.items():
            if column not in have:
                self.conn.execute(f"ALTER TABLE faults ADD COLUMN {column} {decl}")
        # The draws of each fault with a probability below 1, by fault id.
        self._draws: dict[int, random.Random] = {}
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
        """The delay fault and the other fault that apply to this request (each uses one).

        A fault with a ``probability`` below 1 applies to a matching request only when
        its draw says so (seeded by its ``seed``); a request it spares does not use it.
        """
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
                if (row["action"] == "delay" and delay is not None) or (
                    row["action"] != "delay" and other is not None
                ):
                    continue
                if row["probability"] < 1 and not self._drawn(row):
                    continue
                if row["action"] == "delay":
                    delay = dict(row)
                else:
                    other = dict(row)
                conn.execute(
                    "UPDATE faults SET remaining = remaining - 1 WHERE id = ?", (row["id"],)
                )
        return delay, other

    def _drawn(self, row: sqlite3.Row) -> bool:
        rng = self._draws.get(row["id"])
        if rng is None:
            seed = row["seed"] if row["seed"] is not None else os.urandom(8)
            rng = self._draws[row["id"]] = random.Random(seed)
        return rng.random() < row["probability"]


def next_counter(conn: sqlite3.Connection, name: str, start: int = 1) -> int:
    row = conn.execute(
        "INSERT INTO counters (name, value) VALUES (?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value",
        (name, start),
    ).fetchone()
    return int(row[0])
