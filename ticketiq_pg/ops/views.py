"""The operator's view: ``ticketiq-pg status``, ``runs``, ``show RUN`` and ``audit``.

Each command reads in one ``READ ONLY``, ``REPEATABLE READ`` transaction (so
every section of one report sees the same snapshot and nothing can be
written), with the session's time zone set to UTC, and measures lease
expiries against ``ticketiq.now()``, the clock that decides them.

The query functions (:func:`status`, :func:`runs`, :func:`show`,
:func:`audit`) take an open connection and return plain dicts with fixed
keys; :func:`to_json` turns one into the ``--json`` output (ISO 8601
timestamps, UUIDs as strings) and the ``render_*`` functions into aligned
tables for people.  :func:`status_text` and its siblings open the
connection, read and render: they are what ``ticketiq_pg.ops.cli`` calls.

Where an operator view of ``sql/schema.sql`` has what a section needs, the
section reads the view (``runs_in_flight``, ``calls_in_doubt``,
``approvals_waiting``, ``entries_open``, ``jobs_open``), so the CLI and a psql
user granted ``ticketiq_operator`` see the same rows; the rest (processes,
the leader lease, a run's checkpoints, calls, answer and audit rows, the run
list) comes from the tables, which the CLI reads as the schema's owner
(docs/operators.md).
"""

from __future__ import annotations

import argparse
import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ticketiq_pg.db.driver import KNOWN_SCHEMA_VERSIONS
from ticketiq_pg.errors import SchemaVersionMismatch, TicketIQError, UnknownRun

RUN_STATUSES = ("running", "claimed", "suspended", "completed", "failed", "stopped")

#: Defaults of ``ticketiq-pg status``.
LAPSE_WITHIN = 3.0
SEEN_WITHIN = 300.0
STATUS_LIMIT = 20
LIST_LIMIT = 50

#: Widest cell of a human table (JSON and long text are cut to it).
CELL_WIDTH = 60


class OperatorError(TicketIQError):
    """The operator commands cannot read what they need (privileges, missing schema)."""


# -- argument types (argparse) ----------------------------------------------------------------


def run_id_arg(text: str) -> uuid.UUID:
    """A run id on the command line: a UUID, else argparse exits 2 with the message."""
    try:
        return uuid.UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a run id (a UUID): {text!r}") from None


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def since_arg(text: str) -> datetime | timedelta:
    """``--since``: an age (``90s``, ``15m``, ``2h``, ``3d``, ``1w``: that long before the
    database clock) or an ISO 8601 timestamp (UTC when it names no offset)."""
    match = _DURATION.match(text)
    if match:
        return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (an age such as 15m, 2h, 3d, or an ISO 8601 timestamp)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a whole number >= 1: {text!r}")
    return value


def seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds >= 0: {text!r}")
    return value


# -- the read-only snapshot -------------------------------------------------------------------


@contextmanager
def snapshot(url: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """A connection inside one read-only, repeatable-read transaction (UTC), rolled back after.

    Raises :class:`SchemaVersionMismatch` when the database has no ``ticketiq`` schema or one
    of a version this package does not know, and :class:`OperatorError` when the login role
    may not read what a command needs.
    """
    with psycopg.connect(url, row_factory=dict_row) as conn:
        try:
            conn.execute("set transaction isolation level repeatable read, read only")
            conn.execute("set local time zone 'UTC'")
            row = conn.execute(
                "select to_regprocedure('ticketiq.schema_version()') is not null as installed"
            ).fetchone()
            if not row or not row["installed"]:
                raise SchemaVersionMismatch(
                    "schema ticketiq is not installed in this database: run `ticketiq-pg migrate`"
                )
            version = conn.execute("select ticketiq.schema_version() as v").fetchone()
            if version is None or version["v"] not in KNOWN_SCHEMA_VERSIONS:
                raise SchemaVersionMismatch(
                    f"database schema version {version and version['v']} is not one this "
                    f"package knows ({sorted(KNOWN_SCHEMA_VERSIONS)})"
                )
            yield conn
        except psycopg.errors.InsufficientPrivilege as exc:
            raise OperatorError(
                f"{exc.diag.message_primary or exc}: the operator commands read the ticketiq "
                "tables; run them as the schema's owner (a role granted ticketiq_operator "
                "reads the views from psql instead: docs/operators.md)"
            ) from exc
        finally:
            if not conn.closed:
                conn.rollback()


def _now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select ticketiq.now() as now").fetchone()
    assert row is not None
    return row["now"]


def _in(when: datetime | None, now: datetime) -> float | None:
    """Seconds from ``now`` until ``when`` (negative: already past)."""
    return None if when is None else round((when - now).total_seconds(), 3)


def _since(value: datetime | timedelta | None, now: datetime) -> datetime | None:
    if isinstance(value, timedelta):
        return now - value
    return value


def _rows(conn: psycopg.Connection[Any], query: str | sql.Composed,
          params: Any = None) -> list[dict[str, Any]]:
    return conn.execute(query, params).fetchall()  # type: ignore[arg-type]


# -- status -----------------------------------------------------------------------------------

_PROCESSES = """
select
    p.process_id, p.host, p.os_pid, p.backend_pid, p.started_at, p.last_seen_at,
    exists (
        select 1 from pg_catalog.pg_stat_activity as a
        where a.pid = p.backend_pid and a.datname = pg_catalog.current_database()
    ) as session_connected,
    case when p.liveness_key is not null then exists (
        select 1 from pg_catalog.pg_locks as l
        where l.locktype = 'advisory' and l.classid = 29809 and l.objsubid = 2
            and l.objid = p.liveness_key::text::oid and l.granted
    ) end as liveness_held,
    (select count(*) from ticketiq.runs_in_flight as f
     where f.status = 'running' and f.lease_holder = p.process_id) as runs_held,
    (select count(*) from ticketiq.jobs_open as j
     where j.state = 'running' and j.holder = p.process_id) as jobs_held,
    exists (
        select 1 from ticketiq.leader_leases as l
        where l.holder = p.process_id and l.expires_at > %(now)s
    ) as is_leader
from ticketiq.processes as p
where p.stopped_at is null
order by p.last_seen_at desc, p.process_id
"""

_LEADERS = """
select l.name, l.holder, l.epoch, l.acquired_at, l.expires_at
from ticketiq.leader_leases as l
order by l.name
"""

_LAPSING = """
select t.kind, t.id, t.holder, t.epoch, t.expires_at, count(*) over () as total
from (
    select 'run' as kind, f.run_id::text as id, f.lease_holder as holder, f.epoch,
        f.lease_expires_at as expires_at
    from ticketiq.runs_in_flight as f
    where f.status = 'running' and f.lease_expires_at < %(until)s
    union all
    select 'job', j.job_id::text, j.holder, j.epoch, j.lease_expires_at
    from ticketiq.jobs_open as j
    where j.state = 'running' and j.lease_expires_at < %(until)s
) as t
order by t.expires_at, t.kind, t.id
limit %(limit)s
"""

_CALLS_IN_DOUBT = """
select d.run_id, d.step, d.call_id, d.tool, d.marked_classification, d.step_key, d.marked_at,
    d.marked_epoch, d.run_status, d.lease_holder, count(*) over () as total
from ticketiq.calls_in_doubt as d
order by d.marked_at, d.run_id, d.step, d.call_id
limit %(limit)s
"""

_APPROVALS_WAITING = """
select w.approval_id, w.run_id, w.step, w.call_id, w.tool, w.arguments, w.summary,
    w.requested_at, count(*) over () as total
from ticketiq.approvals_waiting as w
order by w.requested_at, w.approval_id
limit %(limit)s
"""

_ENTRIES_OPEN = """
select e.entry_id, e.kind, e.sender_id, e.state, e.run_id, e.run_status, e.lease_holder,
    e.lease_expires_at, e.received_at, e.started_at
from ticketiq.entries_open as e
order by e.received_at, e.entry_id
limit %(limit)s
"""

_JOBS_OPEN = """
select j.job_id, j.kind, j.resumable, j.state, j.epoch, j.holder, j.lease_expires_at,
    j.attempts, j.progress, j.created_at, j.updated_at
from ticketiq.jobs_open as j
order by j.created_at, j.job_id
limit %(limit)s
"""


def _counts(conn: psycopg.Connection[Any], query: str, keys: Sequence[str]) -> dict[str, int]:
    found = {row["k"]: int(row["n"]) for row in _rows(conn, query)}
    return {key: found.get(key, 0) for key in keys}


def _strip_total(rows: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    total = int(rows[0]["total"]) if rows else 0
    for row in rows:
        del row["total"]
    return total, rows


def status(
    conn: psycopg.Connection[Any],
    *,
    lapse_within: float = LAPSE_WITHIN,
    seen_within: float = SEEN_WITHIN,
    limit: int = STATUS_LIMIT,
) -> dict[str, Any]:
    """Processes, the leader lease, leases about to lapse, runs in flight and what waits."""
    now = _now(conn)
    version = conn.execute("select ticketiq.schema_version() as v").fetchone()

    processes = _rows(conn, _PROCESSES, {"now": now})
    seen_after = now - timedelta(seconds=seen_within)
    for p in processes:
        p["last_seen_ago_s"] = round((now - p["last_seen_at"]).total_seconds(), 3)
        p["runs_held"] = int(p["runs_held"])
        p["jobs_held"] = int(p["jobs_held"])
    # A process is listed while it looks alive: seen lately, its session still connected,
    # or holding a lease.  (last_seen_at moves only when it renews leases.)
    shown = [
        p for p in processes
        if seen_within == 0 or p["last_seen_at"] >= seen_after or p["session_connected"]
        or p["runs_held"] or p["jobs_held"] or p["is_leader"]
    ]

    leaders = _rows(conn, _LEADERS)
    for lease in leaders:
        lease["expires_in_s"] = _in(lease["expires_at"], now)
        lease["lapsed"] = lease["expires_at"] <= now

    total_lapsing, lapsing = _strip_total(_rows(
        conn, _LAPSING, {"until": now + timedelta(seconds=lapse_within), "limit": limit}
    ))
    for lease in lapsing:
        lease["expires_in_s"] = _in(lease["expires_at"], now)
        lease["lapsed"] = lease["expires_at"] <= now

    in_flight = _counts(
        conn,
        "select f.status as k, count(*) as n from ticketiq.runs_in_flight as f group by 1",
        ("running", "claimed"),
    )
    suspended = conn.execute(
        "select count(*) as n from ticketiq.runs as r where r.status = 'suspended'"
    ).fetchone()

    total_doubt, doubt = _strip_total(_rows(conn, _CALLS_IN_DOUBT, {"limit": limit}))
    total_approvals, approvals = _strip_total(_rows(conn, _APPROVALS_WAITING, {"limit": limit}))

    entries_by_state = _counts(
        conn, "select e.state as k, count(*) as n from ticketiq.entries_open as e group by 1",
        ("pending", "running"),
    )
    jobs_by_state = _counts(
        conn, "select j.state as k, count(*) as n from ticketiq.jobs_open as j group by 1",
        ("queued", "running"),
    )
    return {
        "now": now,
        "schema_version": version["v"] if version else None,
        "processes": {
            "count": len(shown),
            "hidden": len(processes) - len(shown),
            "seen_within_s": seen_within,
            "rows": shown[:limit],
        },
        "leaders": leaders,
        "leases_lapsing": {"within_s": lapse_within, "count": total_lapsing, "rows": lapsing},
        "runs_in_flight": {"count": sum(in_flight.values()), "by_status": in_flight},
        "runs_suspended": int(suspended["n"]) if suspended else 0,
        "calls_in_doubt": {"count": total_doubt, "rows": doubt},
        "approvals_waiting": {"count": total_approvals, "rows": approvals},
        "entries_open": {
            "count": sum(entries_by_state.values()),
            "by_state": entries_by_state,
            "rows": _rows(conn, _ENTRIES_OPEN, {"limit": limit}),
        },
        "jobs_open": {
            "count": sum(jobs_by_state.values()),
            "by_state": jobs_by_state,
            "rows": _rows(conn, _JOBS_OPEN, {"limit": limit}),
        },
    }


# -- runs -------------------------------------------------------------------------------------

_RUN_COLUMNS = """
    r.run_id, r.status, r.entry_point, r.owner, r.run_as, r.channel, r.epoch, r.lease_holder,
    r.lease_expires_at, r.loss_count, r.last_step, r.parent_run_id, r.wait_key,
    r.failure_reason, r.created_at, r.updated_at, r.finished_at
"""


def runs(
    conn: psycopg.Connection[Any],
    *,
    statuses: Sequence[str] | None = None,
    entry_point: str | None = None,
    holder: str | None = None,
    since: datetime | timedelta | None = None,
    limit: int = LIST_LIMIT,
) -> dict[str, Any]:
    """Runs, newest first: by status, entry point, lease holder, started at or after ``since``."""
    now = _now(conn)
    since_at = _since(since, now)
    where: list[sql.Composable] = []
    params: dict[str, Any] = {"limit": limit}
    if statuses:
        where.append(sql.SQL("r.status = any(%(statuses)s)"))
        params["statuses"] = list(statuses)
    if entry_point is not None:
        where.append(sql.SQL("r.entry_point = %(entry_point)s"))
        params["entry_point"] = entry_point
    if holder is not None:
        where.append(sql.SQL("r.lease_holder = %(holder)s"))
        params["holder"] = holder
    if since_at is not None:
        where.append(sql.SQL("r.created_at >= %(since)s"))
        params["since"] = since_at
    query = sql.SQL(
        "select {columns} from ticketiq.runs as r {where}"
        " order by r.created_at desc, r.run_id limit %(limit)s"
    ).format(
        columns=sql.SQL(_RUN_COLUMNS),
        where=sql.SQL("where ") + sql.SQL(" and ").join(where) if where else sql.SQL(""),
    )
    rows = _rows(conn, query, params)
    for row in rows:
        row["lease_expires_in_s"] = _in(row["lease_expires_at"], now)
    return {
        "now": now,
        "filters": {
            "status": list(statuses) if statuses else None,
            "entry_point": entry_point,
            "holder": holder,
            "since": since_at,
            "limit": limit,
        },
        "runs": rows,
    }


# -- show RUN ---------------------------------------------------------------------------------

_RUN = """
select
    r.run_id, r.status, r.owner, r.run_as, r.channel, r.entry_point, r.may_wait, r.durable,
    r.correlation_id, r.idempotency_key, r.parent_run_id, r.epoch, r.lease_holder,
    r.lease_expires_at, r.loss_count, r.last_step, r.wait_key, r.claim_reason,
    r.stop_requested_at, r.stop_requested_by, r.failure_reason, r.created_at, r.updated_at,
    r.finished_at, r.input, r.meta
from ticketiq.runs as r
where r.run_id = %(run_id)s
"""

_CHECKPOINTS = """
select
    c.step, c.epoch, c.written_at, pg_catalog.octet_length(c.body::text) as size_bytes,
    c.seal_key_id,
    coalesce(pg_catalog.jsonb_array_length(c.body -> 'calls'), 0) as calls,
    c.body -> 'conversation' -> -1 ->> 'content' as model_text
from ticketiq.checkpoints as c
where c.run_id = %(run_id)s
order by c.step
"""

# Every call a step asked for (from its checkpoint) with its row in ticketiq.calls, if it has
# one: a read is written no row (its settlement is in the resume's audit row only).
_CALLS = """
select
    c.step, e.ordinality::integer as ordinal, e.value ->> 'call_id' as call_id,
    e.value ->> 'tool' as tool, e.value ->> 'classification' as classification,
    coalesce(k.step_key, e.value ->> 'step_key') as step_key, k.call_id is not null as recorded,
    k.state, k.marked_classification, k.marked_at, k.marked_epoch, k.settlement,
    k.finished_at, k.finished_epoch, k.approval_id, e.value -> 'arguments' as arguments,
    k.outcome
from ticketiq.checkpoints as c
cross join lateral pg_catalog.jsonb_array_elements(c.body -> 'calls') with ordinality as e
left join ticketiq.calls as k
    on k.run_id = c.run_id and k.step = c.step and k.call_id = e.value ->> 'call_id'
where c.run_id = %(run_id)s
union all
select
    k.step, k.ordinal, k.call_id, k.tool, k.classification, k.step_key, true, k.state,
    k.marked_classification, k.marked_at, k.marked_epoch, k.settlement, k.finished_at,
    k.finished_epoch, k.approval_id, k.arguments, k.outcome
from ticketiq.calls as k
inner join ticketiq.checkpoints as c on c.run_id = k.run_id and c.step = k.step
where k.run_id = %(run_id)s
    and not exists (
        select 1 from pg_catalog.jsonb_array_elements(c.body -> 'calls') as b
        where b ->> 'call_id' = k.call_id
    )
order by 1, 2, 3
"""

_APPROVALS = """
select
    a.approval_id, a.step, a.call_id, a.tool, a.state, a.requested_at, a.requested_epoch,
    a.decided_at, a.decided_by, a.reason, a.summary
from ticketiq.approval_requests as a
where a.run_id = %(run_id)s
order by a.requested_at, a.approval_id
"""

_ANSWER = """
select
    a.step, a.epoch, a.sealed_at, a.retain_until, a.handed_on_at, a.handed_on_epoch,
    a.delivery_started_at, a.seal_key_id, a.body
from ticketiq.answers as a
where a.run_id = %(run_id)s
"""

_ENTRIES = """
select e.entry_id, e.kind, e.sender_id, e.state, e.received_at, e.started_at, e.finished_at
from ticketiq.entries as e
where e.run_id = %(run_id)s
order by e.entry_id
"""

_CHILDREN = """
select r.run_id, r.status, r.entry_point, r.epoch, r.lease_holder, r.created_at, r.finished_at
from ticketiq.runs as r
where r.parent_run_id = %(run_id)s
order by r.created_at, r.run_id
"""

_TRANSCRIPT = "select t.at, t.kind, t.step, t.body from ticketiq.run_transcript(%(run_id)s) as t"

_RUN_AUDIT = """
select a.audit_id, a.at, a.event, a.epoch, a.actor, a.detail
from ticketiq.audit as a
where a.run_id = %(run_id)s
order by a.audit_id
"""


def show(conn: psycopg.Connection[Any], run_id: uuid.UUID) -> dict[str, Any]:
    """One run: its row, checkpoints, calls, approvals, answer, entries, children,
    transcript and audit rows.  :class:`UnknownRun` when no run has that id."""
    now = _now(conn)
    params = {"run_id": run_id}
    found = _rows(conn, _RUN, params)
    if not found:
        raise UnknownRun(f"unknown run {run_id}")
    run = found[0]
    run["lease_expires_in_s"] = _in(run["lease_expires_at"], now)
    answer = _rows(conn, _ANSWER, params)
    return {
        "now": now,
        "run": run,
        "checkpoints": _rows(conn, _CHECKPOINTS, params),
        "calls": _rows(conn, _CALLS, params),
        "approvals": _rows(conn, _APPROVALS, params),
        "answer": answer[0] if answer else None,
        "entries": _rows(conn, _ENTRIES, params),
        "children": _rows(conn, _CHILDREN, params),
        "transcript": _rows(conn, _TRANSCRIPT, params),
        "audit": _rows(conn, _RUN_AUDIT, params),
    }


# -- audit ------------------------------------------------------------------------------------


def _like(pattern: str) -> str:
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


def audit(
    conn: psycopg.Connection[Any],
    *,
    events: Sequence[str] | None = None,
    run_id: uuid.UUID | None = None,
    since: datetime | timedelta | None = None,
    limit: int = LIST_LIMIT,
) -> dict[str, Any]:
    """Audit rows, newest first.  An event with ``*`` is a pattern (``agent.run.*``)."""
    now = _now(conn)
    since_at = _since(since, now)
    where: list[sql.Composable] = []
    params: dict[str, Any] = {"limit": limit}
    if events:
        exact = [e for e in events if "*" not in e]
        patterns = [_like(e) for e in events if "*" in e]
        either: list[sql.Composable] = []
        if exact:
            either.append(sql.SQL("a.event = any(%(events)s)"))
            params["events"] = exact
        if patterns:
            either.append(sql.SQL("a.event like any(%(patterns)s)"))
            params["patterns"] = patterns
        where.append(sql.SQL("(") + sql.SQL(" or ").join(either) + sql.SQL(")"))
    if run_id is not None:
        where.append(sql.SQL("a.run_id = %(run_id)s"))
        params["run_id"] = run_id
    if since_at is not None:
        where.append(sql.SQL("a.at >= %(since)s"))
        params["since"] = since_at
    query = sql.SQL(
        "select a.audit_id, a.at, a.event, a.run_id, a.epoch, a.actor, a.detail"
        " from ticketiq.audit as a {where} order by a.audit_id desc limit %(limit)s"
    ).format(where=sql.SQL("where ") + sql.SQL(" and ").join(where) if where else sql.SQL(""))
    return {
        "now": now,
        "filters": {
            "event": list(events) if events else None,
            "run_id": run_id,
            "since": since_at,
            "limit": limit,
        },
        "audit": _rows(conn, query, params),
    }


# -- JSON -------------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, default=_json_default, ensure_ascii=False)


# -- human tables -----------------------------------------------------------------------------


def fmt_time(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def fmt_seconds(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
    return f"{int(seconds // 86400)}d{int(seconds % 86400 // 3600):02d}h"


def fmt_expiry(seconds: float | None) -> str:
    """``in 4.2s`` for a lease still held, ``LAPSED 3.0s ago`` for one past its expiry."""
    if seconds is None:
        return "-"
    if seconds > 0:
        return f"in {fmt_seconds(seconds)}"
    return f"LAPSED {fmt_seconds(seconds)} ago"


def fmt_ago(seconds: float | None) -> str:
    return "-" if seconds is None else f"{fmt_seconds(seconds)} ago"


def cell(value: Any, width: int = CELL_WIDTH) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, datetime):
        text = fmt_time(value)
    elif isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"), default=_json_default,
                          ensure_ascii=False)
    else:
        text = str(value)
    text = " ".join(text.split())  # one line
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ",
          wide: Sequence[int] = ()) -> str:
    """An aligned text table; numbers are right-aligned; the ``wide`` columns are cut at 200."""
    if not rows:
        return f"{indent}(none)"
    cells = [[cell(v, 200 if i in wide else CELL_WIDTH) for i, v in enumerate(row)]
             for row in rows]
    numeric = []
    for i in range(len(headers)):
        values = [row[i] for row in rows if row[i] is not None]
        numeric.append(bool(values) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values))
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if numeric[i] else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return (indent + "  ".join(parts)).rstrip()

    out = [line([h.rjust(w) if numeric[i] else h for i, (h, w) in
                 enumerate(zip(headers, widths, strict=True))])]
    out.append(indent + "  ".join("-" * w for w in widths))
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def pairs(items: Sequence[tuple[str, Any]], indent: str = "  ") -> str:
    width = max(len(k) for k, _ in items)
    return "\n".join(f"{indent}{k.ljust(width)}  {cell(v, 200)}" for k, v in items)


def _more(shown: int, total: int) -> str:
    return f"  ({total - shown} more: raise --limit)" if total > shown else ""


def render_status(report: dict[str, Any]) -> str:
    out: list[str] = [
        f"database clock {fmt_time(report['now'])} UTC, schema version "
        f"{report['schema_version']}",
        "",
    ]
    procs = report["processes"]
    hidden = (f", {procs['hidden']} more not seen for {fmt_seconds(procs['seen_within_s'])}"
              if procs["hidden"] else "")
    out.append(f"processes: {procs['count']}{hidden}")
    out.append(table(
        ["process", "host", "pid", "started", "last seen", "session", "liveness", "runs", "jobs",
         "leader"],
        [[p["process_id"], p["host"], p["os_pid"], p["started_at"],
          fmt_ago(p["last_seen_ago_s"]), "connected" if p["session_connected"] else "gone",
          {True: "held", False: "gone", None: "-"}[p["liveness_held"]],
          p["runs_held"], p["jobs_held"], p["is_leader"]] for p in procs["rows"]],
    ) + _more(len(procs["rows"]), procs["count"]))
    out.append("")
    out.append("sweep leader:")
    out.append(table(
        ["lease", "holder", "epoch", "acquired", "expires", ""],
        [[lease["name"], lease["holder"], lease["epoch"], lease["acquired_at"],
          lease["expires_at"],
          f"no leader: free for {fmt_seconds(lease['expires_in_s'])}" if lease["lapsed"]
          else fmt_expiry(lease["expires_in_s"])] for lease in report["leaders"]],
    ))
    out.append("")
    lapsing = report["leases_lapsing"]
    out.append(f"leases about to lapse (within {lapsing['within_s']:g}s): {lapsing['count']}")
    out.append(table(
        ["kind", "id", "holder", "epoch", "expires", ""],
        [[lease["kind"], lease["id"], lease["holder"], lease["epoch"], lease["expires_at"],
          fmt_expiry(lease["expires_in_s"])] for lease in lapsing["rows"]],
    ) + _more(len(lapsing["rows"]), lapsing["count"]))
    out.append("")
    flight = report["runs_in_flight"]
    by_status = ", ".join(f"{k} {v}" for k, v in flight["by_status"].items())
    out.append(f"runs in flight: {flight['count']} ({by_status}); "
               f"suspended {report['runs_suspended']}")
    out.append("")
    doubt = report["calls_in_doubt"]
    out.append(f"calls in doubt: {doubt['count']}")
    out.append(table(
        ["run", "step", "call", "tool", "as", "marked", "epoch", "run status", "holder"],
        [[d["run_id"], d["step"], d["call_id"], d["tool"], d["marked_classification"],
          d["marked_at"], d["marked_epoch"], d["run_status"], d["lease_holder"]]
         for d in doubt["rows"]],
    ) + _more(len(doubt["rows"]), doubt["count"]))
    out.append("")
    waiting = report["approvals_waiting"]
    out.append(f"approvals waiting: {waiting['count']}")
    out.append(table(
        ["approval", "run", "step", "call", "tool", "requested", "summary"],
        [[a["approval_id"], a["run_id"], a["step"], a["call_id"], a["tool"], a["requested_at"],
          a["summary"]] for a in waiting["rows"]],
    ) + _more(len(waiting["rows"]), waiting["count"]))
    out.append("")
    entries = report["entries_open"]
    by_state = ", ".join(f"{k} {v}" for k, v in entries["by_state"].items())
    out.append(f"entries open: {entries['count']} ({by_state})")
    out.append(table(
        ["entry", "kind", "sender", "state", "run", "run status", "holder", "received"],
        [[e["entry_id"], e["kind"], e["sender_id"], e["state"], e["run_id"], e["run_status"],
          e["lease_holder"], e["received_at"]] for e in entries["rows"]],
    ) + _more(len(entries["rows"]), entries["count"]))
    out.append("")
    jobs = report["jobs_open"]
    by_state = ", ".join(f"{k} {v}" for k, v in jobs["by_state"].items())
    out.append(f"jobs open: {jobs['count']} ({by_state})")
    out.append(table(
        ["job", "kind", "state", "epoch", "holder", "expires", "attempts", "progress"],
        [[j["job_id"], j["kind"], j["state"], j["epoch"], j["holder"],
          fmt_expiry(_in(j["lease_expires_at"], report["now"])), j["attempts"], j["progress"]]
         for j in jobs["rows"]],
    ) + _more(len(jobs["rows"]), jobs["count"]))
    return "\n".join(out)


def render_runs(report: dict[str, Any]) -> str:
    rows = report["runs"]
    head = f"{len(rows)} runs, newest first (limit {report['filters']['limit']})"
    return head + "\n" + table(
        ["run", "status", "entry point", "owner", "holder", "lease", "epoch", "losses", "step",
         "created", "finished", "note"],
        [[r["run_id"], r["status"], r["entry_point"], r["owner"], r["lease_holder"],
          fmt_expiry(r["lease_expires_in_s"]), r["epoch"], r["loss_count"], r["last_step"],
          r["created_at"], r["finished_at"],
          r["failure_reason"] or (f"waits on {r['wait_key']}" if r["wait_key"] else None)]
         for r in rows],
        indent="",
    )


def transcript_line(kind: str, body: Any) -> str:
    """What a person reads of one transcript line (``--json`` keeps the whole body)."""
    if not isinstance(body, dict):
        return cell(body, 200)
    if kind == "step":
        calls = ", ".join(
            f"{c.get('tool')} ({c.get('settlement') or c.get('state') or c.get('classification')})"
            for c in body.get("calls") or [] if isinstance(c, dict)
        )
        text = cell(body.get("text"), 80)
        return f"{text} -> {calls}" if calls else text
    if kind == "answer":
        answer = body.get("answer")
        if isinstance(answer, dict) and "text" in answer:
            answer = answer["text"]
        return cell(answer, 120)
    if kind == "resumed":
        settled = ", ".join(
            f"{s.get('call_id')} {s.get('settlement')}"
            for s in body.get("settlements") or [] if isinstance(s, dict)
        )
        lost = body.get("loss_count") or 0
        return (f"resumed from step {body.get('step')}"
                + (f" (run lost {lost} times)" if lost else "")
                + (f": {settled}" if settled else ""))
    if kind in ("failed", "stopped") and "reason" in body:
        return cell(body["reason"], 200)
    return cell(body, 200)


def render_show(report: dict[str, Any]) -> str:
    r = report["run"]
    lease = (f"{r['lease_holder']}, expires {fmt_time(r['lease_expires_at'])} "
             f"({fmt_expiry(r['lease_expires_in_s'])})" if r["lease_holder"] else None)
    stop = (f"{fmt_time(r['stop_requested_at'])} by {r['stop_requested_by']}"
            if r["stop_requested_at"] else None)
    out = [
        f"run {r['run_id']}: {r['status']}",
        pairs([
            ("entry point", r["entry_point"]),
            ("owner / run as", f"{r['owner']} / {r['run_as']} (channel {r['channel']})"),
            ("epoch", r["epoch"]),
            ("lease", lease),
            ("losses", r["loss_count"]),
            ("last step", r["last_step"]),
            ("durable / may wait", f"{cell(r['durable'])} / {cell(r['may_wait'])}"),
            ("correlation id", r["correlation_id"]),
            ("idempotency key", r["idempotency_key"]),
            ("parent run", r["parent_run_id"]),
            ("waits on", r["wait_key"]),
            ("claimed because", r["claim_reason"]),
            ("stop requested", stop),
            ("failure", r["failure_reason"]),
            ("created", r["created_at"]),
            ("updated", r["updated_at"]),
            ("finished", r["finished_at"]),
            ("input", r["input"]),
        ]),
        "",
        f"checkpoints: {len(report['checkpoints'])}",
        table(
            ["step", "epoch", "written", "bytes", "seal key", "calls", "model text"],
            [[c["step"], c["epoch"], c["written_at"], c["size_bytes"], c["seal_key_id"],
              c["calls"], c["model_text"]] for c in report["checkpoints"]],
        ),
        "",
        f"calls: {len(report['calls'])}",
        table(
            ["step", "#", "call", "tool", "class", "state", "marked", "as", "mark epoch",
             "settlement", "finished", "step key"],
            [[c["step"], c["ordinal"], c["call_id"], c["tool"], c["classification"],
              c["state"] if c["recorded"] else "no row", c["marked_at"],
              c["marked_classification"], c["marked_epoch"], c["settlement"], c["finished_at"],
              c["step_key"]] for c in report["calls"]],
        ),
    ]
    if report["approvals"]:
        out += ["", f"approvals: {len(report['approvals'])}", table(
            ["approval", "step", "call", "tool", "state", "requested", "decided", "by", "reason"],
            [[a["approval_id"], a["step"], a["call_id"], a["tool"], a["state"], a["requested_at"],
              a["decided_at"], a["decided_by"], a["reason"]] for a in report["approvals"]],
        )]
    answer = report["answer"]
    out += ["", "answer:" if answer else "answer: (none sealed)"]
    if answer:
        handed = (f"{fmt_time(answer['handed_on_at'])} (epoch {answer['handed_on_epoch']})"
                  if answer["handed_on_at"] else "not yet")
        out.append(pairs([
            ("step / epoch", f"{answer['step']} / {answer['epoch']}"),
            ("sealed", answer["sealed_at"]),
            ("seal key", answer["seal_key_id"]),
            ("handed on", handed),
            ("delivery started", answer["delivery_started_at"]),
            ("kept until", answer["retain_until"]),
            ("body", answer["body"]),
        ]))
    if report["entries"]:
        out += ["", f"entries: {len(report['entries'])}", table(
            ["entry", "kind", "sender", "state", "received", "finished"],
            [[e["entry_id"], e["kind"], e["sender_id"], e["state"], e["received_at"],
              e["finished_at"]] for e in report["entries"]],
        )]
    if report["children"]:
        out += ["", f"child runs: {len(report['children'])}", table(
            ["run", "status", "entry point", "epoch", "holder", "created", "finished"],
            [[c["run_id"], c["status"], c["entry_point"], c["epoch"], c["lease_holder"],
              c["created_at"], c["finished_at"]] for c in report["children"]],
        )]
    out += ["", f"transcript: {len(report['transcript'])}", table(
        ["at", "kind", "step", "what"],
        [[t["at"], t["kind"], t["step"], transcript_line(t["kind"], t["body"])]
         for t in report["transcript"]],
        wide=(3,),
    )]
    out += ["", f"audit: {len(report['audit'])}", table(
        ["id", "at", "event", "epoch", "actor", "detail"],
        [[a["audit_id"], a["at"], a["event"], a["epoch"], a["actor"], a["detail"]]
         for a in report["audit"]],
    )]
    return "\n".join(out)


def render_audit(report: dict[str, Any]) -> str:
    rows = report["audit"]
    head = f"{len(rows)} audit rows, newest first (limit {report['filters']['limit']})"
    return head + "\n" + table(
        ["id", "at", "event", "run", "epoch", "actor", "detail"],
        [[a["audit_id"], a["at"], a["event"], a["run_id"], a["epoch"], a["actor"], a["detail"]]
         for a in rows],
        indent="",
    )


# -- what the CLI calls -----------------------------------------------------------------------


def _text(url: str, as_json: bool, query: Callable[[psycopg.Connection[Any]], dict[str, Any]],
          render: Callable[[dict[str, Any]], str]) -> str:
    with snapshot(url) as conn:
        report = query(conn)
    return to_json(report) if as_json else render(report)


def status_text(url: str, as_json: bool = False, **options: Any) -> str:
    return _text(url, as_json, lambda c: status(c, **options), render_status)


def runs_text(url: str, as_json: bool = False, **filters: Any) -> str:
    return _text(url, as_json, lambda c: runs(c, **filters), render_runs)


def show_text(url: str, run_id: uuid.UUID, as_json: bool = False) -> str:
    return _text(url, as_json, lambda c: show(c, run_id), render_show)


def audit_text(url: str, as_json: bool = False, **filters: Any) -> str:
    return _text(url, as_json, lambda c: audit(c, **filters), render_audit)
