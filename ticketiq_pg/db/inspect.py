"""What the operator commands read: ``ticketiq-pg status``, ``runs`` and ``audit``.

Each query function takes a connection from :func:`snapshot` (one ``READ ONLY``,
``REPEATABLE READ`` transaction in UTC, so every section of a report sees the same
moment) and returns a plain dict with fixed keys; lease expiries are measured against
``ticketiq.now()``, the clock that decides them.  Sections read the operator views
(``docs/schema.sql`` shows them) where one has what they need, so the CLI and a psql
user granted ``ticketiq_operator`` see the same rows, and the tables for the rest
(docs/operators.md).
``show RUN`` reads through :mod:`ticketiq_pg.db.inspect_run`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ticketiq_pg.db.driver import KNOWN_SCHEMA_VERSIONS
from ticketiq_pg.errors import SchemaVersionMismatch, TicketIQError

RUN_STATUSES = ("running", "claimed", "suspended", "completed", "failed", "stopped")

#: Defaults of ``ticketiq-pg status``, ``runs`` and ``audit``.
LAPSE_WITHIN = 3.0
SEEN_WITHIN = 300.0
STATUS_LIMIT = 20
LIST_LIMIT = 50

#: How a process ended, by its ``ended_reason`` (ticketiq.watch_processes sets the first,
#: ticketiq.release_liveness the second).
ENDED_HOW = {"liveness session ended": "session_ended", "stopped": "stopped"}


class OperatorError(TicketIQError):
    """The operator commands cannot read what they need (privileges, missing schema)."""


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


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select ticketiq.now() as now").fetchone()
    assert row is not None
    return row["now"]


def seconds_until(when: datetime | None, now: datetime) -> float | None:
    """Seconds from ``now`` until ``when`` (negative: already past)."""
    return None if when is None else round((when - now).total_seconds(), 3)


def _since(value: datetime | timedelta | None, now: datetime) -> datetime | None:
    return now - value if isinstance(value, timedelta) else value


def fetch_all(conn: psycopg.Connection[Any], query: str | sql.Composed,
          params: Any = None) -> list[dict[str, Any]]:
    return conn.execute(query, params).fetchall()  # type: ignore[arg-type]


def _counts(conn: psycopg.Connection[Any], query: str, keys: Sequence[str]) -> dict[str, int]:
    found = {row["k"]: int(row["n"]) for row in fetch_all(conn, query)}
    return {key: found.get(key, 0) for key in keys}


def _strip_total(rows: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    total = int(rows[0]["total"]) if rows else 0
    for row in rows:
        del row["total"]
    return total, rows


def _where(conditions: list[sql.Composable]) -> sql.Composable:
    return sql.SQL("where ") + sql.SQL(" and ").join(conditions) if conditions else sql.SQL("")


# -- status -----------------------------------------------------------------------------------

_HELD = """
    (select count(*) from ticketiq.runs_in_flight as f
     where f.status = 'running' and f.lease_holder = p.process_id) as runs_held,
    (select count(*) from ticketiq.jobs_open as j
     where j.state = 'running' and j.holder = p.process_id) as jobs_held
"""

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
    """ + _HELD + """,
    exists (
        select 1 from ticketiq.leader_leases as l
        where l.holder = p.process_id and l.expires_at > %(now)s
    ) as is_leader
from ticketiq.processes as p
where p.stopped_at is null
order by p.last_seen_at desc, p.process_id
"""

# Processes marked ended (stopped_at) since %(after)s (null: ever), newest first, with the
# watcher that found a dead one (its process.session_ended audit row).
_ENDED = """
select
    p.process_id, p.host, p.os_pid, p.started_at, p.last_seen_at, p.stopped_at as ended_at,
    p.ended_reason, n.actor as noticed_by,
    """ + _HELD + """,
    count(*) over () as total
from ticketiq.processes as p
left join lateral (
    select a.actor from ticketiq.audit as a
    where a.event = 'process.session_ended' and a.detail ->> 'process_id' = p.process_id
    order by a.audit_id desc
    limit 1
) as n on p.ended_reason = 'liveness session ended'
where p.stopped_at is not null
    and (%(after)s::timestamptz is null or p.stopped_at >= %(after)s)
order by p.stopped_at desc, p.process_id
limit %(limit)s
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


# Runs waiting out failures of their next model step (a provider outage): running, their
# lease kept, and a failed try of the step after their last checkpoint counted.  The
# runner records each try with the provider's status first ("HTTP 529: ...").
_RETRYING = """
select r.run_id, r.lease_holder, r.epoch, a.step, a.attempts as tries, a.first_at, a.last_at,
    substring(a.last_error from '^HTTP ([0-9]{3}):')::integer as last_status,
    a.last_error, count(*) over () as total
from ticketiq.runs as r
join ticketiq.attempts as a
    on a.run_id = r.run_id and a.target = 'model' and a.step = r.last_step + 1
where r.status = 'running'
order by a.first_at, r.run_id
limit %(limit)s
"""


def retrying(conn: psycopg.Connection[Any], *, limit: int = STATUS_LIMIT,
             now: datetime | None = None) -> dict[str, Any]:
    """Runs retrying their next model step: the provider's last status, tries, for how long.

    Part of :func:`status` (``runs_retrying``); the console can show the same rows.
    """
    now = now or db_now(conn)
    total, rows = _strip_total(fetch_all(conn, _RETRYING, {"limit": limit}))
    for row in rows:
        row["retrying_for_s"] = round((now - row["first_at"]).total_seconds(), 3)
        row["last_try_ago_s"] = round((now - row["last_at"]).total_seconds(), 3)
    return {"count": total, "rows": rows}


def _processes(conn: psycopg.Connection[Any], now: datetime, seen_within: float,
               limit: int) -> dict[str, Any]:
    processes = fetch_all(conn, _PROCESSES, {"now": now})
    seen_after = now - timedelta(seconds=seen_within)
    for p in processes:
        p["last_seen_ago_s"] = round((now - p["last_seen_at"]).total_seconds(), 3)
        p["runs_held"] = int(p["runs_held"])
        p["jobs_held"] = int(p["jobs_held"])
    # A process is listed while it looks alive: seen lately, its session still connected,
    # or holding a lease.  (last_seen_at moves when it renews leases; without liveness
    # also when it holds none, every renew interval, so unrunnable_runs sees it live.)
    shown = [
        p for p in processes
        if seen_within == 0 or p["last_seen_at"] >= seen_after or p["session_connected"]
        or p["runs_held"] or p["jobs_held"] or p["is_leader"]
    ]
    # Ended ones are listed as long after they ended: a watcher marks a dead peer ended at
    # once, which drops it from the list above.
    total_ended, ended = _strip_total(fetch_all(conn, _ENDED, {
        "after": None if seen_within == 0 else seen_after, "limit": limit}))
    for p in ended:
        p["last_seen_ago_s"] = round((now - p["last_seen_at"]).total_seconds(), 3)
        p["ended_ago_s"] = round((now - p["ended_at"]).total_seconds(), 3)
        p["ended_how"] = ENDED_HOW.get(p["ended_reason"], p["ended_reason"] or "unknown")
        p["runs_held"] = int(p["runs_held"])
        p["jobs_held"] = int(p["jobs_held"])
    return {
        "count": len(shown),
        "hidden": len(processes) - len(shown),
        "seen_within_s": seen_within,
        "rows": shown[:limit],
        "ended": {"count": total_ended, "rows": ended},
    }


def status(
    conn: psycopg.Connection[Any],
    *,
    lapse_within: float = LAPSE_WITHIN,
    seen_within: float = SEEN_WITHIN,
    limit: int = STATUS_LIMIT,
) -> dict[str, Any]:
    """Processes (and those that ended lately), the leader lease, leases about to lapse,
    runs in flight and what waits."""
    now = db_now(conn)
    version = conn.execute("select ticketiq.schema_version() as v").fetchone()
    processes = _processes(conn, now, seen_within, limit)

    leaders = fetch_all(conn, _LEADERS)
    for lease in leaders:
        lease["expires_in_s"] = seconds_until(lease["expires_at"], now)
        lease["lapsed"] = lease["expires_at"] <= now

    total_lapsing, lapsing = _strip_total(fetch_all(
        conn, _LAPSING, {"until": now + timedelta(seconds=lapse_within), "limit": limit}
    ))
    for lease in lapsing:
        lease["expires_in_s"] = seconds_until(lease["expires_at"], now)
        lease["lapsed"] = lease["expires_at"] <= now

    in_flight = _counts(
        conn,
        "select f.status as k, count(*) as n from ticketiq.runs_in_flight as f group by 1",
        ("running", "claimed"),
    )
    suspended = conn.execute(
        "select count(*) as n from ticketiq.runs as r where r.status = 'suspended'"
    ).fetchone()

    # A deploy that dropped a workflow version: its waiting runs, counted up to 1,000.
    unrunnable = fetch_all(conn, "select * from ticketiq.unrunnable_runs(1000)")
    total_doubt, doubt = _strip_total(fetch_all(conn, _CALLS_IN_DOUBT, {"limit": limit}))
    total_approvals, approvals = _strip_total(
        fetch_all(conn, _APPROVALS_WAITING, {"limit": limit}))

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
        "processes": processes,
        "leaders": leaders,
        "leases_lapsing": {"within_s": lapse_within, "count": total_lapsing, "rows": lapsing},
        "runs_in_flight": {"count": sum(in_flight.values()), "by_status": in_flight},
        "runs_suspended": int(suspended["n"]) if suspended else 0,
        "workflow_runs_unrunnable": {"count": len(unrunnable), "rows": unrunnable[:limit]},
        # fair shares and vendor limits (issue 43): who waits to start, each vendor's figures
        "waiting_to_start": fetch_all(conn, _WAITING_TO_START)[:limit],
        "vendors": fetch_all(conn, "select * from ticketiq.vendor_limit_figures()")[:limit],
        "runs_retrying": retrying(conn, limit=limit, now=now),
        "calls_in_doubt": {"count": total_doubt, "rows": doubt},
        "approvals_waiting": {"count": total_approvals, "rows": approvals},
        "entries_open": {
            "count": sum(entries_by_state.values()),
            "by_state": entries_by_state,
            "rows": fetch_all(conn, _ENTRIES_OPEN, {"limit": limit}),
        },
        "jobs_open": {
            "count": sum(jobs_by_state.values()),
            "by_state": jobs_by_state,
            "rows": fetch_all(conn, _JOBS_OPEN, {"limit": limit}),
        },
    }


_WAITING = """
select w.approval_id, w.run_id, w.step, w.call_id, w.tool, w.requested_at
from ticketiq.approvals_waiting as w
order by w.requested_at
"""


def approvals_waiting(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every write held for approval that nobody decided yet, oldest first (``approvals``)."""
    return fetch_all(conn, _WAITING)


def vendor_limits(conn: psycopg.Connection[Any]) -> dict[str, list[dict[str, Any]]]:
    """Each vendor bucket's limits and figures (``ticketiq.vendor_limit_figures``: tokens
    taken, waits refused, 429s and 503s met, runs suspended for a token) and the runs
    waiting to start, by owner and priority (fair shares), highest priority first."""
    vendors = fetch_all(conn, "select * from ticketiq.vendor_limit_figures()")
    for row in vendors:
        row["tokens"] = round(row["tokens"], 2)
    return {"vendors": vendors, "waiting_to_start": fetch_all(conn, _WAITING_TO_START)}


_WAITING_TO_START = """
select e.owner, e.priority, count(*)::int as runs, min(e.received_at) as oldest
from ticketiq.entries as e where e.state = 'pending'
group by e.owner, e.priority order by e.priority desc, e.owner limit 500
"""


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
    now = db_now(conn)
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
    ).format(columns=sql.SQL(_RUN_COLUMNS), where=_where(where))
    rows = fetch_all(conn, query, params)
    for row in rows:
        row["lease_expires_in_s"] = seconds_until(row["lease_expires_at"], now)
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
    now = db_now(conn)
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
    ).format(where=_where(where))
    return {
        "now": now,
        "filters": {
            "event": list(events) if events else None,
            "run_id": run_id,
            "since": since_at,
            "limit": limit,
        },
        "audit": fetch_all(conn, query, params),
    }
