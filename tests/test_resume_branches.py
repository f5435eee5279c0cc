"""The resume's less travelled branches, each against real processes killed with SIGKILL.

Containment and a call-level gate as they stand at the resume, a remote agent and a
sub-agent with tools in doubt at a kill, an incident.io update and an SNS FIFO publish in
doubt, a sealed answer delivered at most once after its hand-on, and the A2A task told of
a third loss.  Judged from the database and from the vendor service's own record (where a
duplicate would land), per call of a run, whatever key a write carried.
"""

from __future__ import annotations

import json

import fronts
import pytest
from procs import KILLED, Stack

from harness.landed import ANSWER_CALL, origin
from harness.scripted_tools import ANSWERS_CHANNEL


def kill(stack: Stack, plan: str, faults: str, steps: int = 2, seed: int = 41,
         **env: str) -> str:
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", str(seed),
                         "--steps", str(steps), "--plan", plan, faults=faults, **env)
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    return run_id


def resume(stack: Stack, lapsed: int = 1, **env: str) -> dict:
    assert len(stack.sweep_as_if_later()) == lapsed
    proc = stack.run("--exit-after", "1", **env)
    assert proc.popen.returncode == 0, proc.stderr
    (outcome,) = proc.outcomes()
    return outcome


def posts(stack: Stack, vendor: str) -> list[dict]:
    return [r for r in stack.vendor.requests(vendor) if r["method"] == "POST"]


def settled(stack: Stack, run_id: str) -> dict[str, str]:
    """How the resume settled each call of its step, by tool, from its audit row."""
    ((detail,),) = stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)
    ((calls,),) = stack.query(
        "select body -> 'calls' from ticketiq.checkpoints where run_id = %s and step = %s",
        run_id, detail["step"])
    tools = {c["call_id"]: c["tool"] for c in calls}
    return {tools[s["call_id"]]: s["settlement"] for s in detail["settlements"]}


def told(stack: Stack, run_id: str, step: int) -> list:
    """What the model was told of the calls before step ``step`` (its checkpoint)."""
    ((conversation,),) = stack.query(
        "select body -> 'conversation' from ticketiq.checkpoints where run_id = %s "
        "and step = %s", run_id, step)
    return [m["content"] for m in conversation if m["role"] == "tool"]


def test_a_run_contained_while_dead_is_refused_at_resume_before_any_call(stack: Stack) -> None:
    run_id = kill(stack, "mixed", "after_checkpoint@2", steps=4)
    stack.gates_file.write_text(json.dumps({"contained_runs": [run_id]}))
    before = len(stack.vendor.requests())
    outcome = resume(stack)
    assert outcome["status"] == "failed" and "the run is contained" in outcome["reason"]
    assert len(stack.vendor.requests()) == before  # not one call, not even a read
    assert stack.model_asks(run_id)[3] == 0
    events = [e for (e,) in stack.query(
        "select event from ticketiq.audit where run_id = %s order by audit_id", run_id)]
    assert events.index("agent.run.crash_resumed") < events.index("agent.run.gate_refused")
    ((detail,),) = stack.query("select detail from ticketiq.audit where run_id = %s "
                               "and event = 'agent.run.crash_resumed'", run_id)
    assert (detail["settlements"], detail["complete"]) == ([], False)


def test_a_left_over_call_blocked_by_its_gate_at_resume_is_refused_told_and_never_sent(
    stack: Stack,
) -> None:
    """Killed with the incident create marked in doubt (not sent) and the comment not yet
    made; by the resume both tools are blocked (Gates.check_call).  The read is made
    again, the incident is settled unknown with the refusal, the comment refused: nothing
    reaches incident.io or Jira, and the model is told both."""
    run_id = kill(stack, "mixed", "after_mark@1", steps=3)
    stack.gates_file.write_text(json.dumps({"blocked_tools": ["incident.create",
                                                              "jira.comment"]}))
    outcome = resume(stack)
    assert outcome["status"] == "completed", outcome
    assert settled(stack, run_id) == {"jira.get_issue": "redone", "incident.create": "unknown",
                                      "jira.comment": "skipped"}
    assert posts(stack, "incidentio") == [] and posts(stack, "jira") == []
    results = told(stack, run_id, 2)
    assert results[1]["refused_on_resume"] == "tool incident.create is blocked"
    assert results[1]["sent_again"] is False
    assert results[2] == {"error": "refused", "reason": "tool jira.comment is blocked"}


def test_a_remote_agent_call_in_doubt_is_read_back_not_sent_again(stack: Stack) -> None:
    run_id = kill(stack, "remote", "after_call@1.2")  # asked, its outcome not recorded
    assert len(posts(stack, "teams")) == 1
    outcome = resume(stack)
    assert outcome["status"] == "completed"
    ((classification, marked, settlement, result),) = stack.query(
        "select classification, marked_classification, settlement, outcome "
        "from ticketiq.calls where run_id = %s", run_id)
    assert (classification, marked, settlement) == ("remote_agent", "remote_agent", "read_back")
    assert result == {"asked": "triage-41"}
    assert len(posts(stack, "teams")) == 1  # found where it landed, never asked twice
    assert stack.duplicates() == {}


@pytest.mark.parametrize(("fault", "child_losses"), [
    # the child answered, the parent's call returned, its outcome unrecorded
    ("after_call@1.4", 0),
    # inside the child: its incident landed, its outcome unrecorded
    ("after_call@1.2", 1),
], ids=["child-answered", "inside-the-child"])
def test_a_subagent_with_tools_in_doubt_is_asked_again_and_its_writes_land_once(
    stack: Stack, fault: str, child_losses: int,
) -> None:
    run_id = kill(stack, "subagent_tools", fault)
    outcome = resume(stack, lapsed=1 + child_losses)  # a child killed inside lapses too
    assert outcome["status"] == "completed"
    ((child_id, status, losses),) = stack.query(
        "select run_id::text, status, loss_count from ticketiq.runs where parent_run_id = %s",
        run_id)
    assert (status, losses) == ("completed", child_losses)
    ((marked, settlement, result),) = stack.query(
        "select marked_classification, settlement, outcome from ticketiq.calls "
        "where run_id = %s and tool = 'agent.subagent_with_tools'", run_id)
    assert (marked, settlement) == ("subagent_with_tools", "asked_again")
    assert result["child_run_id"] == child_id and "answer" in result
    # the child's writes, where they land: once each
    created = [w for w in stack.writes() if w["effect"] == "created"]
    assert sorted(w["vendor"] for w in created) == ["incidentio", "jira"]
    assert {w["run_id"] for w in created} == {child_id}
    assert stack.duplicates() == {}
    assert stack.model_asks(child_id)[1] == 1


@pytest.mark.parametrize("fault", ["after_mark@2", "after_call@2"], ids=["unsent", "landed"])
def test_an_incident_update_in_doubt_is_resent_with_its_key_and_lands_once(
    stack: Stack, fault: str,
) -> None:
    run_id = kill(stack, "incident_update", fault, steps=3)
    outcome = resume(stack)
    assert outcome["status"] == "completed"
    ((call_id, step_key, settlement),) = stack.query(
        "select call_id, step_key, settlement from ticketiq.calls where run_id = %s "
        "and tool = 'incident.update'", run_id)
    assert settlement == "resent_same_key"
    edits = [r for r in posts(stack, "incidentio") if r["path"].endswith("/actions/edit")]
    assert {r["key"] for r in edits} == {step_key}
    expected = ["created"] if fault == "after_mark@2" else ["created", "deduplicated"]
    assert [r["effect"] for r in edits] == expected
    # the edit applied is this call's (its mark in the incident's summary)
    assert origin(edits[-1]["response"]["incident"]["summary"]) == (run_id, 2, call_id)
    assert stack.duplicates() == {}


def test_an_sns_fifo_publish_in_doubt_is_settled_not_resent_and_lands_once(
    stack: Stack,
) -> None:
    """SNS FIFO dedupes for 5 minutes only: inside that window a resend would be harmless,
    but a resume may take longer, so the publish is settled unknown, never sent again."""
    run_id = kill(stack, "sns", "after_call@1.2")
    (published,) = posts(stack, "sns")
    outcome = resume(stack)
    assert outcome["status"] == "completed"
    ((step_key, settlement, result),) = stack.query(
        "select step_key, settlement, outcome from ticketiq.calls where run_id = %s", run_id)
    assert (published["key"], published["effect"]) == (step_key, "created")
    assert settlement == "unknown" and result["sent_again"] is False
    assert posts(stack, "sns") == [published]
    assert stack.duplicates() == {}


@pytest.mark.parametrize(("fault", "delivered"), [("after_seal@2", 1), ("after_hand_on@2", 0)])
def test_a_sealed_answer_is_delivered_at_most_once_after_its_hand_on(
    stack: Stack, fault: str, delivered: int,
) -> None:
    """A delivery with no reader is made after the hand-on.  Killed after the seal, the
    replacement hands the answer on and delivers it once, running nothing again; killed
    after the hand-on, the run is done and nobody delivers it again (at most once)."""
    env = {"TICKETIQ_SCRIPT_DELIVER": "1"}
    run_id = kill(stack, "reads", fault, **env)
    swept = stack.sweep_as_if_later()
    if delivered:
        assert len(swept) == 1
        proc = stack.run("--exit-after", "1", **env)
        assert [o["status"] for o in proc.outcomes()] == ["completed"], proc.stderr
    else:
        assert swept == []  # nothing is up for a replacement: handed on, never again
    answers = [r for r in posts(stack, "discord")
               if r["path"].endswith(f"/{ANSWERS_CHANNEL}/messages")]
    assert [origin(r["body"]) for r in answers] == [(run_id, 2, ANSWER_CALL)] * delivered
    assert stack.model_asks(run_id) == {1: 1, 2: 1}
    assert stack.query("select status from ticketiq.runs where run_id = %s", run_id) == [
        ("completed",)]


def test_the_a2a_task_of_a_run_lost_a_third_time_shows_failed_with_the_reason(
    stack: Stack,
) -> None:
    """Lost three times (the owner, then two resumers, each SIGKILLed mid-settlement):
    the third sweep fails the run with its reason (I4), and the caller's A2A task says
    failed, with that reason.  Both resumes that began are audited."""
    victim, url = fronts.worker(stack, "victim", faults="after_checkpoint@2")
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"messageId": "task-3", "role": "user",
                    "parts": [{"kind": "text", "text": "go"}]},
        "metadata": {"seed": 31, "steps": 3, "plan": "mixed"}}}
    assert fronts.post(url + "/a2a", json=send, timeout=10).json()["result"]["status"][
        "state"] == "submitted"
    assert victim.wait(30) == KILLED
    ((run_id,),) = stack.query("select run_id::text from ticketiq.runs")
    for lost in (1, 2):
        assert [r[2] for r in stack.sweep_as_if_later(3600 * lost)] == [lost]
        resumer = stack.run("--exit-after", "1", faults="mid_settlement@2")
        assert resumer.popen.returncode == KILLED, resumer.stderr
    assert [(r[2], r[3]) for r in stack.sweep_as_if_later(3 * 3600)] == [(3, "failed")]
    ((status, reason),) = stack.query(
        "select status, failure_reason from ticketiq.runs where run_id = %s", run_id)
    assert status == "failed" and reason
    survivor, url = fronts.worker(stack, "survivor")
    got = fronts.post(url + "/a2a", timeout=10, json={
        "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "task-3"}}).json()
    assert got["result"]["status"] == {"state": "failed", "message": reason}
    resumes = stack.query("select detail from ticketiq.audit where run_id = %s "
                          "and event = 'agent.run.crash_resumed' order by audit_id", run_id)
    assert [(d["loss_count"], d["complete"]) for (d,) in resumes] == [(1, False), (2, False)]
    survivor.terminate()
