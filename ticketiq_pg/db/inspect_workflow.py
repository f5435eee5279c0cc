"""What ``ticketiq-pg show RUN`` reads of a workflow run: its steps, keys, waits, settlements.

A workflow run's checkpoints carry its state (``counters.workflow``: the definition's
name and version, the step id and the steps executed when it acted); each action is the
one call of its checkpoint, with its step key, its row in ``ticketiq.calls`` (a write's
in-doubt mark and settlement) and, for a read or a wait, the settlement its resume's
audit row names.  Its durable waits are the rows of ``ticketiq.workflow_timers`` and
``ticketiq.workflow_signals``.  None for an agent run.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from ticketiq_pg.db.inspect import fetch_all

_STEPS = """
select
    c.step, c.epoch, c.written_at,
    c.body -> 'counters' -> 'workflow' ->> 'name' as name,
    c.body -> 'counters' -> 'workflow' ->> 'version' as version,
    c.body -> 'counters' -> 'workflow' ->> 'at' as step_id,
    (c.body -> 'counters' -> 'workflow' ->> 'executed')::integer as steps_executed,
    c.body -> 'counters' -> 'workflow' ->> 'call_id' as call_id,
    c.body -> 'counters' -> 'workflow' ->> 'then' as then
from ticketiq.checkpoints as c
where c.run_id = %(run_id)s and c.body -> 'counters' ? 'workflow'
order by c.step
"""

_TIMERS = """
select t.timer_key, t.wait_key, t.set_at, t.due_at, t.state, t.fired_at
from ticketiq.workflow_timers as t
where t.run_id = %(run_id)s
order by t.set_at, t.timer_key
"""

_SIGNALS = """
select s.signal_id, s.name, s.sender_key, s.sent_at, s.sent_by, s.consumed_at, s.consumed_by,
    s.payload
from ticketiq.workflow_signals as s
where s.run_id = %(run_id)s
order by s.signal_id
"""

#: The resume audit events whose rows name how each call a resume found was settled.
RESUMES = ("agent.run.crash_resumed", "agent.run.resumed")


def workflow(conn: psycopg.Connection[Any], run_id: uuid.UUID, calls: list[dict[str, Any]],
             audit: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's workflow: name, version, steps (with their calls' keys, states and
    settlements), timers and signals; None when the run is not a workflow run."""
    params = {"run_id": run_id}
    steps = fetch_all(conn, _STEPS, params)
    if not steps:
        return None
    by_call = {(c["step"], c["call_id"]): c for c in calls}
    settled: dict[str, list[str]] = {}
    for row in audit:
        if row["event"] in RESUMES and isinstance(row["detail"], dict):
            for item in row["detail"].get("settlements") or ():
                settled.setdefault(item.get("call_id"), []).append(item.get("settlement"))
    for step in steps:
        call = by_call.get((step["step"], step["call_id"]), {})
        step.update(tool=call.get("tool"), classification=call.get("classification"),
                    step_key=call.get("step_key"), state=call.get("state"),
                    settlement=call.get("settlement"),
                    resumes=settled.get(step["call_id"], []))
    last = steps[-1]
    return {"name": last["name"], "version": steps[0]["version"], "steps": steps,
            "timers": fetch_all(conn, _TIMERS, params),
            "signals": fetch_all(conn, _SIGNALS, params)}
