"""A resumed run passes every gate again, and its seal first (I9), before any call.

The owner's process is SIGKILLed right after step 2's checkpoint; while it is
dead a Stop is asked, the owner revoked, the channel disabled or the
checkpoint tampered with through SQL.  The resumed run must end (stopped or
failed, audited) without making a single call: the vendor service's own
record gains no request after the kill.
"""

from __future__ import annotations

import json

import pytest
from procs import KILLED, Stack

from ticketiq_pg.runtime import step_keys as keys


def kill_after_checkpoint(stack: Stack) -> str:
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "21", "--steps", "4",
                         faults="after_checkpoint@2")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    return run_id


def resume(stack: Stack) -> dict:
    assert len(stack.sweep_as_if_later()) == 1
    proc = stack.run("--exit-after", "1")
    assert proc.popen.returncode == 0, proc.stderr
    (outcome,) = proc.outcomes()
    return outcome


def test_stop_asked_while_dead_stops_before_any_call(stack: Stack) -> None:
    run_id = kill_after_checkpoint(stack)
    stack.query("select * from ticketiq.request_stop(%s, 'bob', 'enough')", run_id)
    before = len(stack.vendor.requests())
    outcome = resume(stack)
    assert outcome["status"] == "stopped"
    assert len(stack.vendor.requests()) == before
    assert stack.query("select status from ticketiq.runs where run_id = %s", run_id) == [
        ("stopped",)
    ]
    assert stack.model_asks(run_id)[3] == 0
    # the refused resume is audited, with nothing settled
    assert [d["settlements"] for (d,) in stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)] == [[]]


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        ({"revoked_owners": ["alice"]}, "owner alice is no longer allowed"),
        ({"disabled_channels": ["playground"]}, "channel playground is not allowed"),
        ({"revoked_run_as": ["alice"]}, "run-as authority alice was revoked"),
    ],
)
def test_gates_are_checked_again_as_they_stand_now(stack: Stack, policy: dict,
                                                   reason: str) -> None:
    run_id = kill_after_checkpoint(stack)
    stack.gates_file.write_text(json.dumps(policy))
    before = len(stack.vendor.requests())
    outcome = resume(stack)
    assert outcome["status"] == "failed"
    assert reason in outcome["reason"]
    assert len(stack.vendor.requests()) == before
    ((status, why),) = stack.query(
        "select status, failure_reason from ticketiq.runs where run_id = %s", run_id
    )
    assert status == "failed" and reason in why
    events = [e for (e,) in stack.query(
        "select event from ticketiq.audit where run_id = %s order by audit_id", run_id)]
    # every resume is audited, a refused one too (I14; issue 20.4), before its refusal
    assert events.index("agent.run.crash_resumed") < events.index("agent.run.gate_refused")


def test_a_tampered_checkpoint_fails_verification_and_is_not_run(stack: Stack) -> None:
    run_id = kill_after_checkpoint(stack)
    # Someone with psql changes a call's arguments in the last checkpoint.
    stack.query(
        "update ticketiq.checkpoints set body = jsonb_set(body, '{calls,1,arguments,name}', "
        "'\"rm -rf\"') where run_id = %s and step = 2",
        run_id,
    )
    before = len(stack.vendor.requests())
    outcome = resume(stack)
    assert outcome["status"] == "failed"
    assert "does not match its seal" in outcome["reason"]
    assert len(stack.vendor.requests()) == before
    events = [e for (e,) in stack.query(
        "select event from ticketiq.audit where run_id = %s order by audit_id", run_id)]
    assert events[-2:] == ["agent.run.crash_resumed", "agent.run.seal_failed"]
    assert stack.model_asks(run_id)[3] == 0


def test_a_checkpoint_sealed_with_an_unknown_key_is_not_run(stack: Stack) -> None:
    run_id = kill_after_checkpoint(stack)
    stack.query(
        "update ticketiq.checkpoints set seal_key_id = 'retired' where run_id = %s and step = 2",
        run_id,
    )
    outcome = resume(stack)
    assert outcome["status"] == "failed"
    assert "not configured" in outcome["reason"]


def test_step_keys_are_restored_from_the_checkpoint(stack: Stack) -> None:
    """The keys sent after a resume are the keys derived before the crash."""
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "5", "--steps", "3",
                         faults="after_mark@2")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED
    rows = stack.query(
        "select k.call_id, k.step_key, r.correlation_id from ticketiq.calls as k "
        "join ticketiq.runs as r using (run_id) where run_id = %s and step = 2 "
        "and classification = 'write'",
        run_id,
    )
    for call_id, step_key, correlation_id in rows:
        assert step_key == keys.agent_call_key(correlation_id, "main", 2, call_id)
    resume(stack)
    incident_key = next(k for c, k, _ in rows if k in
                        {r["key"] for r in stack.vendor.requests("incidentio")})
    sent = [r for r in stack.vendor.requests("incidentio") if r["key"] == incident_key]
    # marked, then killed before sending: the resume sends it once, with the same key
    assert [r["effect"] for r in sent] == ["created"]


def test_a_read_that_is_a_write_by_now_is_held_for_approval_not_failed(stack: Stack) -> None:
    """Issue 20.2: recorded as a read, the tool a write at the resume, the gate holding it.

    The gate is asked with the stricter classification (write), the call gets its row from
    its mark and an approval request is filed before anything is sent; the run waits
    instead of failing with "reads are not held for approval".
    """
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "6", "--steps", "3",
                         "--plan", "reads", faults="after_checkpoint@2")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    stack.gates_file.write_text(json.dumps({"approval_tools": ["jira.get_issue"]}))
    before = len(stack.vendor.requests("jira"))
    assert len(stack.sweep_as_if_later()) == 1
    proc = stack.run("--exit-after", "1", TICKETIQ_SCRIPT_AS_WRITES="jira.get_issue")
    (outcome,) = proc.outcomes()
    assert outcome["status"] == "suspended", (outcome, proc.stderr)
    requests = stack.query(
        "select call_id, state from ticketiq.approval_requests where run_id = %s", run_id)
    # the first of the step's two calls is held; the run gives its lease up to wait
    ((call_id, state),) = requests
    assert state == "waiting"
    assert len(stack.vendor.requests("jira")) == before  # nothing sent while held
    rows = stack.query("select call_id, classification, marked_classification "
                       "from ticketiq.calls where run_id = %s", run_id)
    assert rows == [(call_id, "read", "write")]
