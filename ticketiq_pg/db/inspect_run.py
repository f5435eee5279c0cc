"""What ``ticketiq-pg show RUN`` reads: one run and everything it left.

The run's row, its checkpoints, every call its steps asked for (with its row in
``ticketiq.calls``, if it has one), approvals, answer, entries, child runs, transcript
(``ticketiq.run_transcript``) and audit rows, read on a :func:`~ticketiq_pg.db.inspect.snapshot`
connection like the other operator reports.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from ticketiq_pg.db.inspect import db_now, fetch_all, seconds_until
from ticketiq_pg.db.inspect_workflow import workflow
from ticketiq_pg.errors import UnknownRun

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
    c.body -> 'conversation' -> -1 ->> 'content' as model_text,
    c.body -> 'usage' as usage
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


def usage(checkpoints: list[dict[str, Any]], answer: dict[str, Any] | None) -> dict[str, Any]:
    """The tokens each model step cost (its checkpoint's, or the answer's, ``"usage"``) and
    their sums over the run: ``{"steps": [{"step", "request_id", counts...}], "total":
    {counts..., "steps": N}}``."""
    found: dict[int, dict[str, Any]] = {}
    bodies = [(c["step"], c.get("usage")) for c in checkpoints]
    if answer is not None and isinstance(answer.get("body"), dict):
        bodies.append((answer["step"], answer["body"].get("usage")))
    for step, given in bodies:
        if not isinstance(given, dict):
            continue
        row: dict[str, Any] = {"step": step, "request_id": given.get("request_id")}
        row.update((k, v) for k, v in given.items()
                   if isinstance(v, int) and not isinstance(v, bool))
        found.setdefault(step, row)
    steps = [found[n] for n in sorted(found)]
    total: dict[str, int] = {}
    for row in steps:
        for key, value in row.items():
            if key not in ("step", "request_id"):
                total[key] = total.get(key, 0) + value
    if steps:
        total["steps"] = len(steps)
    return {"steps": steps, "total": total}


def show(conn: psycopg.Connection[Any], run_id: uuid.UUID) -> dict[str, Any]:
    """One run: its row, checkpoints, calls, approvals, answer, entries, children,
    transcript and audit rows, and a workflow run's steps, keys, waits and settlements
    (:func:`~ticketiq_pg.db.inspect_workflow.workflow`; None for an agent run).
    :class:`UnknownRun` when no run has that id.

    Each checkpoint carries its step's ``usage``; the run's row carries ``usage``, the
    usage of every step (the final one's from the answer) and the sums (:func:`usage`)."""
    now = db_now(conn)
    params = {"run_id": run_id}
    found = fetch_all(conn, _RUN, params)
    if not found:
        raise UnknownRun(f"unknown run {run_id}")
    run = found[0]
    run["lease_expires_in_s"] = seconds_until(run["lease_expires_at"], now)
    answer = fetch_all(conn, _ANSWER, params)
    checkpoints = fetch_all(conn, _CHECKPOINTS, params)
    run["usage"] = usage(checkpoints, answer[0] if answer else None)
    calls = fetch_all(conn, _CALLS, params)
    audit = fetch_all(conn, _RUN_AUDIT, params)
    return {
        "now": now,
        "run": run,
        "checkpoints": checkpoints,
        "calls": calls,
        "approvals": fetch_all(conn, _APPROVALS, params),
        "answer": answer[0] if answer else None,
        "entries": fetch_all(conn, _ENTRIES, params),
        "children": fetch_all(conn, _CHILDREN, params),
        "transcript": fetch_all(conn, _TRANSCRIPT, params),
        "audit": audit,
        "workflow": workflow(conn, run_id, calls, audit),
    }
