"""A workflow SIGKILLed at each step boundary resumes with nothing sent twice.

Real processes (``python -m harness.scripted --workflow``) run the scripted
workflow (:mod:`harness.scripted_workflow`: read an issue, open an incident
with a key its vendor dedupes, loop over a Jira comment with a reader and a durable
sleep, optionally wait for a signal and hand a question to a child agent run).  A fault
point SIGKILLs the victim before an in-doubt mark, after it, after the call returned; or
the test SIGKILLs it while it sleeps, waits for a signal or waits for its child.
Another process finishes the run.  Judged from the database and from the vendor
service's own record of every request: each write landed once (counted by what landed,
whatever key it carried); the keys sent are those the specification derives from the
run id, the step id and the steps executed, restored from the record on resume (the
same key when a write in doubt is resent, a new one on each loop back); a timer fires
once and a signal is consumed once.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from typing import Any

import psycopg
import pytest
from procs import KILLED, Proc, Stack

from ticketiq_pg.db.inspect import snapshot
from ticketiq_pg.db.inspect_run import show
from ticketiq_pg.ops.render import render_show
from ticketiq_pg.runtime.step_keys import workflow_step_key
from ticketiq_pg.testing import wait_for

pytestmark = pytest.mark.slow

#: Steps of the scripted workflow with loops=2 and the steps executed when each acts.
READ, INCIDENT, COMMENT_1, SLEEP_1, COMMENT_2 = 0, 1, 2, 3, 5


def victim(stack: Stack, spec: dict[str, Any], faults: str | None = None) -> tuple[Proc, str]:
    proc = stack.spawn("--start", "1", "--workflow", json.dumps(spec), faults=faults)
    return proc, proc.read_event("started")["run_id"]


def status(stack: Stack, run_id: str) -> tuple[str, str | None]:
    ((state, wait_key),) = stack.query(
        "select status, wait_key from ticketiq.runs where run_id = %s", run_id)
    return state, wait_key


def finish(stack: Stack, run_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """A second process takes the run over and drives it to its end; its sealed answer."""
    survivor = stack.spawn()
    survivor.read_event("ready")
    try:
        wait_for(f"run {run_id} to end", lambda: status(stack, run_id)[0] in (
            "completed", "failed", "stopped"), timeout)
    finally:
        survivor.signal(signal.SIGTERM)
        survivor.wait(30)
    ((state, reason, body),) = stack.query(
        "select r.status, r.failure_reason, a.body from ticketiq.runs as r left join "
        "ticketiq.answers as a using (run_id) where r.run_id = %s", run_id)
    assert state == "completed", reason
    return body["output"]


def keys_sent(stack: Stack, vendor: str) -> list[str]:
    return [r["key"] for r in stack.vendor.requests(vendor)
            if r["method"] == "POST" and r["key"]]


def key(run_id: str, step: str, executed: int) -> str:
    return workflow_step_key(run_id, step, executed)


def resume_settlements(stack: Stack, run_id: str) -> list[tuple[str, str]]:
    rows = stack.query("select detail from ticketiq.audit where run_id = %s and "
                       "event = 'agent.run.crash_resumed' order by at", run_id)
    return [(s["call_id"], s["settlement"]) for (d,) in rows for s in d["settlements"]]


SPEC = {"loops": 2, "sleep": 0.3}

# (fault point, the settlement of the call in flight, incident requests with its key)
BOUNDARIES = [
    # the incident create's checkpoint is written; the kill comes before its mark
    ("after_checkpoint@2", ("open_incident#1", "made"), 1),
    # marked in doubt, never sent: resent with the same key
    ("after_mark@2", ("open_incident#1", "resent_same_key"), 1),
    # sent and landed, its outcome not recorded: resent with the same key, deduped
    ("after_call@2", ("open_incident#1", "resent_same_key"), 2),
    # the first comment sent and landed, in doubt: read back, never resent
    ("after_call@3", ("comment#2", "read_back"), 1),
]


@pytest.mark.parametrize(("fault", "settled", "incident_requests"), BOUNDARIES,
                         ids=[b[0] for b in BOUNDARIES])
def test_killed_at_a_step_boundary_it_resumes_and_sends_nothing_twice(
        stack: Stack, fault: str, settled: tuple[str, str], incident_requests: int) -> None:
    proc, run_id = victim(stack, SPEC, faults=fault)
    assert proc.wait(60) == KILLED, proc.stderr
    assert [r[3] for r in stack.sweep_as_if_later()] == ["claimed"]

    output = finish(stack, run_id)
    assert output["loops"] == 2 and output["incident"] in ("created", "exists")
    assert settled in resume_settlements(stack, run_id)
    assert stack.query("select loss_count from ticketiq.runs where run_id = %s",
                       run_id) == [(1,)]

    # nothing landed twice, by the vendor's own record
    assert stack.duplicates() == {}
    # the keys are the specification's, with the count restored from the record: the
    # same key for the incident however often it was sent, a new one per loop back
    incident = key(run_id, "open_incident", INCIDENT)
    assert keys_sent(stack, "incidentio") == [incident] * incident_requests
    comments = [k for k in keys_sent(stack, "jira")]
    assert comments == [key(run_id, "comment", COMMENT_1), key(run_id, "comment", COMMENT_2)]


def test_a_sleeping_workflow_is_woken_on_the_other_process_by_its_timer_once(
        stack: Stack) -> None:
    proc, run_id = victim(stack, {"loops": 1, "sleep": 2.0})
    wait_for("the run to sleep", lambda: (status(stack, run_id)[1] or "").startswith("timer:"),
             30)
    proc.kill()  # SIGKILL: it held no lease, and nobody holds the run while it sleeps
    assert stack.query("select lease_holder from ticketiq.runs where run_id = %s",
                       run_id) == [(None,)]
    output = finish(stack, run_id)
    assert output["loops"] == 1
    ((due_at, fired_at, state),) = stack.query(
        "select due_at, fired_at, state from ticketiq.workflow_timers where run_id = %s", run_id)
    assert state == "fired" and fired_at >= due_at
    # woken once, at or after its time, and not counted as a loss
    woken = stack.query("select at from ticketiq.audit where run_id = %s and "
                        "event = 'agent.run.woken'", run_id)
    assert len(woken) == 1 and woken[0][0] >= due_at
    assert stack.query("select loss_count from ticketiq.runs where run_id = %s",
                       run_id) == [(0,)]
    assert stack.duplicates() == {}


def test_a_workflow_waiting_for_a_signal_consumes_it_once_after_a_kill(stack: Stack) -> None:
    proc, run_id = victim(stack, {"loops": 1, "sleep": 0.1, "signal": True})
    wait_for("the run to wait for its signal",
             lambda: (status(stack, run_id)[1] or "").startswith("signal:"), 30)
    proc.kill()
    # the sender repeats its request (same key): delivered once; a second sender's
    # signal waits for a later step (none comes): consumed by nobody
    for sender, payload in (("ops-1", {"go": True}), ("ops-1", {"go": True}),
                            ("ops-2", {"go": "second"})):
        stack.query("select * from ticketiq.send_signal(%s, 'go', %s::jsonb, %s, 'ops')",
                    run_id, json.dumps(payload), sender)
    # the same key with another payload is refused, never dropped unseen (issue 46, 11)
    with pytest.raises(psycopg.DatabaseError) as reused:
        stack.query("select * from ticketiq.send_signal(%s, 'go', %s::jsonb, 'ops-1', 'ops')",
                    run_id, json.dumps({"go": "again"}))
    assert reused.value.sqlstate == "TQ013"
    output = finish(stack, run_id)
    assert output["signal"] == {"payload": {"go": True}, "timed_out": False}
    rows = stack.query("select sender_key, consumed_by from ticketiq.workflow_signals "
                       "where run_id = %s order by signal_id", run_id)
    wait_step = next(r[1] for r in rows if r[1])
    assert rows == [("ops-1", wait_step), ("ops-2", None)]
    assert wait_step == key(run_id, "await_go", 5)  # after read, incident, comment, rest, check
    assert stack.duplicates() == {}

    # what an operator sees (ticketiq-pg show): each action's key, state and how resumes
    # settled it, the timer and the signals
    with snapshot(stack.db_url) as conn:
        report = show(conn, uuid.UUID(run_id))
    flow = report["workflow"]
    assert (flow["name"], flow["version"]) == ("scripted_flow", "1")
    steps = {s["call_id"]: s for s in flow["steps"]}
    assert list(steps) == ["read#0", "open_incident#1", "comment#2", "rest#3", "await_go#5"]
    assert steps["await_go#5"]["step_key"] == wait_step
    assert steps["await_go#5"]["resumes"] == ["redone"]  # woken by the signal, made again
    assert steps["open_incident#1"]["state"] == "done"
    assert [t["state"] for t in flow["timers"]] == ["fired"]
    assert [g["consumed_by"] for g in flow["signals"]] == [wait_step, None]
    text = render_show(report)
    assert "workflow scripted_flow (version 1): 5 actions" in text and wait_step in text


def test_a_signal_wait_times_out_without_a_signal(stack: Stack) -> None:
    proc, run_id = victim(stack, {"loops": 1, "sleep": 0.1, "signal": True,
                                  "signal_timeout": 1.0})
    wait_for("the run to wait for its signal",
             lambda: (status(stack, run_id)[1] or "").startswith("signal:"), 30)
    proc.kill()
    assert finish(stack, run_id)["signal"] == {"payload": None, "timed_out": True}


def test_a_workflow_killed_while_its_child_agent_runs_finds_that_child(stack: Stack) -> None:
    proc, run_id = victim(stack, {"loops": 1, "sleep": 0.1, "child": True,
                                  "child_delay": 1.0})

    def child_running() -> bool:
        return bool(stack.query("select 1 from ticketiq.runs where parent_run_id = %s "
                                "and status = 'running' and last_step >= 1", run_id))

    wait_for("the child agent run to be in flight", child_running, 30)
    proc.kill()
    time.sleep(0.2)
    assert sorted(r[3] for r in stack.sweep_as_if_later()) == ["claimed", "claimed"]
    output = finish(stack, run_id)
    assert output["child"] == "completed"
    children = stack.query("select run_id, status, idempotency_key from ticketiq.runs "
                           "where parent_run_id = %s", run_id)
    # one child, found again by its delegation key (the step's key), never a second
    assert [(c[1], c[2]) for c in children] == [("completed", key(run_id, "delegate", 5))]
    assert ("delegate#5", "asked_again") in resume_settlements(stack, run_id)
    assert stack.duplicates() == {}


def test_a_fan_out_killed_while_its_children_run_finds_each_child_once(
    stack: Stack,
) -> None:
    """``ctx.all``: a read, a keyed write and three child runs made at once; the process
    SIGKILLed while the children run.  The adopter asks each child again by its own
    delegation key (one child each, never a second), the write lands once."""
    proc, run_id = victim(stack, {"loops": 1, "sleep": 0.1, "fan": 3, "child_delay": 1.0})

    def children_running() -> bool:
        return len(stack.query("select 1 from ticketiq.runs where parent_run_id = %s "
                               "and status = 'running' and last_step >= 1", run_id)) == 3

    wait_for("the three child runs to be in flight together", children_running, 30)
    proc.kill()
    time.sleep(0.2)
    assert sorted(r[3] for r in stack.sweep_as_if_later()) == ["claimed"] * 4
    output = finish(stack, run_id)
    assert output["fan"][2:] == ["completed"] * 3, output
    children = stack.query("select idempotency_key, status from ticketiq.runs "
                           "where parent_run_id = %s order by idempotency_key", run_id)
    assert sorted(children) == sorted((key(run_id, f"delegate.{i}", 5), "completed")
                                      for i in (2, 3, 4))
    settled = dict(resume_settlements(stack, run_id))
    assert [settled.get(f"delegate#5.{i}") for i in (2, 3, 4)] == ["asked_again"] * 3
    # the write of the fan-out, keyed by its own place, landed once
    assert keys_sent(stack, "incidentio").count(key(run_id, "delegate.1", 5)) >= 1
    assert stack.duplicates() == {}


def test_a_cron_schedule_starts_a_workflow_that_sleeps_durably(stack: Stack) -> None:
    """A cron fire whose payload names a workflow is that workflow's run: it sleeps
    durably (a cron run may not wait for a person, but a workflow's own waits hold no
    lease) and ends with the workflow's answer."""
    stack.query("select * from ticketiq.upsert_cron_schedule('flow-nightly', 86400, %s::jsonb, "
                "'ops', 'ops', 'cron', clock_timestamp())",
                json.dumps({"workflow": "scripted_flow", "loops": 1, "sleep": 0.3}))
    worker = stack.spawn()
    worker.read_event("ready")
    try:
        ((run_id,),) = wait_for("the cron fire's run", lambda: stack.query(
            "select run_id from ticketiq.entries where kind = 'cron' and run_id is not null"), 30)
        wait_for("it to end", lambda: status(stack, str(run_id))[0] == "completed", 30)
    finally:
        worker.signal(signal.SIGTERM)
        worker.wait(30)
    ((output, may_wait),) = stack.query(
        "select a.body -> 'output', r.may_wait from ticketiq.answers as a join ticketiq.runs "
        "as r using (run_id) where run_id = %s", run_id)
    assert output["loops"] == 1 and may_wait is False
    assert [t for (t,) in stack.query("select state from ticketiq.workflow_timers "
                                      "where run_id = %s", run_id)] == ["fired"]
