"""Writes in flight are settled, not resent: one test per row of the specification's table.

Each case kills the owner right after a changing call (``after_call``),
either after its vendor received it ("received") or after the vendor dropped
it unseen ("lost", a vendor fault), resumes on another process and judges
from the vendor service's own record — where a duplicate would land — and
from the database: the settlement recorded on the call and in the one
``agent.run.crash_resumed`` audit row.
"""

from __future__ import annotations

import json
import time

import pytest
from procs import KILLED, Stack

from ticketiq_pg.ops import cli
from ticketiq_pg.runtime import step_keys as keys

# plan -> (vendor, tool, settlement when received, when lost)
ROUTES = {
    "writes": ("incidentio", "incident.create", "resent_same_key", "resent_same_key"),
    "mixed": ("jira", "jira.comment", "read_back", "read_back"),
    "teams": ("teams", "teams.reply", "unknown", "unknown"),
    "discord": ("discord", "discord.post", "unknown", "unknown"),
    "sqs": ("sqs", "sqs.send", "unknown", "unknown"),
}
# the position of the judged write among step 1's calls
POSITION = {"writes": 1, "mixed": 3, "teams": 2, "discord": 2, "sqs": 2}


def kill_after_write(stack: Stack, plan: str, lost: bool) -> tuple[str, int]:
    vendor = ROUTES[plan][0]
    if lost:
        stack.vendor.fault(vendor, "drop_before_accept", method="POST", count=1)
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "8", "--steps", "2",
                         "--plan", plan, faults=f"after_call@1.{POSITION[plan]}")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    return run_id, len(stack.vendor.requests())


def resume(stack: Stack, sweep: bool = True) -> dict:
    if sweep:
        assert len(stack.sweep_as_if_later()) == 1
    proc = stack.run("--exit-after", "1")
    assert proc.popen.returncode == 0, proc.stderr
    (outcome,) = proc.outcomes()
    assert outcome["status"] == "completed", outcome
    return outcome


def the_write(stack: Stack, run_id: str, tool: str) -> tuple[str, str, str, dict]:
    ((call_id, step_key, settlement, outcome),) = stack.query(
        "select call_id, step_key, settlement, outcome from ticketiq.calls "
        "where run_id = %s and tool = %s",
        run_id, tool,
    )
    return call_id, step_key, settlement, outcome


@pytest.mark.parametrize("lost", [False, True], ids=["received", "lost"])
@pytest.mark.parametrize("plan", list(ROUTES))
def test_a_write_in_doubt_is_settled_by_its_route(stack: Stack, plan: str, lost: bool) -> None:
    vendor, tool, if_received, if_lost = ROUTES[plan]
    run_id, seen_at_kill = kill_after_write(stack, plan, lost)
    resume(stack)

    call_id, step_key, settlement, outcome = the_write(stack, run_id, tool)
    expected = if_lost if lost else if_received
    assert settlement == expected

    # The audit row of the resume says how the call was settled.
    (detail,) = [d for (d,) in stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)]
    audited = {s["call_id"]: s for s in detail["settlements"]}
    assert audited[call_id]["settlement"] == expected

    requests = [r for r in stack.vendor.requests(vendor) if r["method"] == "POST"]
    after_kill = [r for r in stack.vendor.requests(vendor)[:] if r["method"] == "POST"
                  and r["id"] > seen_at_kill]
    created = [r for r in requests if r["effect"] == "created"]
    retried = lost and plan == "mixed"
    if expected == "resent_same_key":
        # incident.io dedupes on the step key: sent again, applied once
        assert [r["key"] for r in after_kill] == [step_key]
        assert len(created) == 1
        assert created[0]["key"] == step_key
    else:
        # never sent again on resume, even inside a vendor's dedupe window
        assert after_kill == []
        # a dropped write whose route has a reader was read back absent and tried again
        # by the attempt itself, before the kill (a retry, not a resume): it landed once
        assert len(created) == (0 if lost and not retried else 1)
    if expected == "unknown":
        assert outcome["outcome"] == "unknown" and outcome["sent_again"] is False
        assert "not sent again" in outcome["message"]
        assert audited[call_id]["outcome"]["outcome"] == "unknown"
        # the model was told: the next step's checkpoint is the answer, whose
        # request the scripted model logged; the message is in the conversation
    if expected == "read_back":
        assert outcome.get("outcome") == ("not_found" if lost and not retried else None)


def test_the_model_is_told_the_outcome_is_unknown(stack: Stack) -> None:
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "9", "--steps", "3",
                         "--plan", "teams", faults="after_call@1.2")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED
    resume(stack)
    ((conversation,),) = stack.query(
        "select body -> 'conversation' from ticketiq.checkpoints where run_id = %s and step = 2",
        run_id,
    )
    told = [m["content"] for m in conversation if m["role"] == "tool"]
    unknown = [c for c in told if isinstance(c, dict) and c.get("outcome") == "unknown"]
    assert len(unknown) == 1
    assert unknown[0]["sent_again"] is False
    assert "unknown" in unknown[0]["message"] and "not sent again" in unknown[0]["message"]


def test_a_write_stays_a_write_whatever_the_tool_is_called_at_resume(stack: Stack) -> None:
    """I7: killed after the Jira comment landed, its outcome unrecorded; the resumer's tool
    table calls jira.comment a read.  Its mark recorded a write, so it is settled as one:
    the gate is asked with "write" and the comment is found by its step key where it
    landed (read back), not made again as a read would be."""
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "10", "--steps", "2",
                         "--plan", "mixed", faults="after_call@1.3")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED
    before = len(stack.vendor.requests("jira"))
    assert len([r for r in stack.vendor.requests("jira") if r["method"] == "POST"]) == 1
    assert len(stack.sweep_as_if_later()) == 1
    gates_log = stack.workdir / "gates.log"
    proc = stack.run("--exit-after", "1", TICKETIQ_RECLASSIFY="jira.comment=read",
                     TICKETIQ_GATES_LOG=str(gates_log))
    assert proc.outcomes()[0]["status"] == "completed", proc.stderr
    call_id, _, settlement, outcome = the_write(stack, run_id, "jira.comment")
    assert settlement == "read_back" and outcome["comment"] == "posted"
    # after the kill, Jira got the reader's GET of the comments only: nothing was posted
    after = stack.vendor.requests("jira")[before:]
    assert [r["method"] for r in after if r["path"].endswith("/comment")] == ["GET"]
    judged = [json.loads(line) for line in gates_log.read_text().splitlines()]
    assert [j["classification"] for j in judged if j["call_id"] == call_id] == ["write"]


# -- approvals ---------------------------------------------------------------


def wait_for(stack: Stack, sql: str, *params: object, timeout: float = 20.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = stack.query(sql, *params)
        if rows:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"nothing for {sql}")


def kill_while_held(stack: Stack) -> tuple[str, str]:
    """A run that may not wait holds its lease while a person decides: kill it then."""
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "12", "--steps", "2",
                         "--plan", "approval", "--no-may-wait")
    run_id = victim.read_event("started")["run_id"]
    ((approval_id,),) = wait_for(
        stack, "select approval_id::text from ticketiq.approval_requests where run_id = %s",
        run_id)
    victim.kill()
    assert victim.popen.returncode == KILLED
    assert len(stack.sweep_as_if_later()) == 1
    return run_id, approval_id


def comments_keyed(stack: Stack, key: str) -> list[dict]:
    return [r for r in stack.vendor.requests("jira") if r["method"] == "POST" and r["key"] == key]


def test_a_held_write_coalesces_with_the_waiting_request(stack: Stack) -> None:
    run_id, approval_id = kill_while_held(stack)
    resumer = stack.spawn("--exit-after", "1")
    # the resumed run routes the call again: no second request is filed
    wait_for(stack, "select 1 from ticketiq.audit where run_id = %s and event = "
             "'agent.run.adopted'", run_id)
    time.sleep(0.5)
    assert stack.query("select count(*) from ticketiq.approval_requests") == [(1,)]
    # a person approves through the CLI
    assert cli.main(["approvals", "--database-url", stack.db_url]) == 0
    assert cli.main(["approve", approval_id, "--actor", "carol", "--reason", "ok",
                     "--database-url", stack.db_url]) == 0
    assert resumer.wait(60) == 0, resumer.stderr
    assert resumer.outcomes()[0]["status"] == "completed"
    assert stack.query("select count(*) from ticketiq.approval_requests") == [(1,)]
    # sent once, keyed by its approval
    assert len(comments_keyed(stack, keys.approval_key(approval_id))) == 1
    (detail,) = [d for (d,) in stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)]
    assert "coalesced" in {s["settlement"] for s in detail["settlements"]}


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_a_decision_taken_while_dead_is_read_not_asked_again(stack: Stack, approve: bool) -> None:
    run_id, approval_id = kill_while_held(stack)
    stack.query("select * from ticketiq.decide_approval(%s, %s, 'carol', 'decided')",
                approval_id, approve)
    outcome = resume(stack, sweep=False)
    assert outcome["run_id"] == run_id
    assert stack.query("select count(*) from ticketiq.approval_requests") == [(1,)]
    assert len(comments_keyed(stack, keys.approval_key(approval_id))) == (1 if approve else 0)
    (detail,) = [d for (d,) in stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)]
    assert "read_decision" in {s["settlement"] for s in detail["settlements"]}


def test_a_resume_that_suspends_for_an_approval_is_audited_first(stack: Stack) -> None:
    """I14: killed after the step was written, resumed; the approval then suspends the run.

    The resumed attempt redoes the read, files the approval and suspends (the run may
    wait): its resume is audited ``agent.run.crash_resumed`` with the read's settlement
    before it gives the lease up.  The decision later wakes it: ``agent.run.resumed``.
    """
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "17", "--steps", "2",
                         "--plan", "approval", faults="after_checkpoint@1")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED
    assert len(stack.sweep_as_if_later()) == 1
    resumer = stack.run("--exit-after", "1")
    assert [o["status"] for o in resumer.outcomes()] == ["suspended"], resumer.stderr
    (detail,) = [d for (d,) in stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)]
    assert [s["settlement"] for s in detail["settlements"]] == ["redone"]
    assert detail["loss_count"] == 1
    ((approval_id,),) = stack.query(
        "select approval_id::text from ticketiq.approval_requests where run_id = %s", run_id)
    waker = stack.spawn("--exit-after", "1")
    stack.query("select * from ticketiq.decide_approval(%s, true, 'carol', 'go')", approval_id)
    assert waker.wait(60) == 0, waker.stderr
    assert [o["status"] for o in waker.outcomes()] == ["completed"]
    events = [e for (e,) in stack.query(
        "select event from ticketiq.audit where run_id = %s and event like 'agent.run.%%resumed'"
        " order by audit_id", run_id)]
    assert events == ["agent.run.crash_resumed", "agent.run.resumed"]


def test_a_write_made_before_the_run_suspends_is_recorded_not_left_in_doubt(
    stack: Stack,
) -> None:
    """A step creates an incident, then waits for an approval: the incident's outcome is
    recorded before the run gives its lease up, so the attempt the decision wakes finds it
    done and does not settle it again."""
    owner = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "18", "--steps", "2",
                        "--plan", "write_approval")
    run_id = owner.read_event("started")["run_id"]
    assert owner.wait(60) == 0, owner.stderr
    assert [o["status"] for o in owner.outcomes()] == ["suspended"]
    ((state, settlement),) = stack.query(
        "select state, settlement from ticketiq.calls where run_id = %s"
        " and tool = 'incident.create'", run_id)
    assert (state, settlement) == ("done", "made")
    ((approval_id,),) = stack.query(
        "select approval_id::text from ticketiq.approval_requests where run_id = %s", run_id)
    waker = stack.spawn("--exit-after", "1")
    stack.query("select * from ticketiq.decide_approval(%s, true, 'carol', 'go')", approval_id)
    assert waker.wait(60) == 0, waker.stderr
    assert [o["status"] for o in waker.outcomes()] == ["completed"]
    _, _, settlement, _ = the_write(stack, run_id, "incident.create")
    assert settlement == "made"
    assert stack.duplicates() == {}
    assert sum(1 for r in stack.vendor.requests("incidentio") if r["method"] == "POST") == 1


def test_an_approved_write_in_doubt_is_read_back_by_its_approval_key(stack: Stack) -> None:
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "13", "--steps", "2",
                         "--plan", "approval", "--no-may-wait", faults="after_call@1.2")
    run_id = victim.read_event("started")["run_id"]
    ((approval_id,),) = wait_for(
        stack, "select approval_id::text from ticketiq.approval_requests where run_id = %s",
        run_id)
    stack.query("select * from ticketiq.decide_approval(%s, true, 'carol', null)", approval_id)
    assert victim.wait(60) == KILLED
    resume(stack)
    _, _, settlement, _ = the_write(stack, run_id, "jira.comment_approved")
    assert settlement == "read_back"
    assert len(comments_keyed(stack, keys.approval_key(approval_id))) == 1


# -- delegation --------------------------------------------------------------


def test_a_delegation_is_asked_again_and_finds_its_child(stack: Stack) -> None:
    """Killed after the child answered: the resume finds the answer, no second child."""
    # after_call at step 1: the parent's read (1st), the child's two reads (2nd, 3rd),
    # then the parent's delegation returns (4th) -- fault points count per process.
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "14", "--steps", "2",
                         "--plan", "delegate", faults="after_call@1.4")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED
    outcome = resume(stack)
    assert outcome["run_id"] == run_id
    children = stack.query("select run_id, status from ticketiq.runs where parent_run_id = %s",
                           run_id)
    assert [status for _, status in children] == ["completed"]
    _, _, settlement, result = the_write(stack, run_id, "agent.delegate")
    assert settlement == "asked_again"
    assert result["child_run_id"] == str(children[0][0]) and "answer" in result


def test_a_lapsed_child_is_taken_over_once_by_the_resumed_parent(stack: Stack) -> None:
    """Killed inside the child: parent and child both lapse and are swept; the resumed
    parent asks again by its delegation key and takes the child over (not the worker
    beside it, which leaves a child of a live parent to that parent); the child runs on
    once, its step 1 never asked again."""
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "15", "--steps", "2",
                         "--plan", "delegate", faults="after_checkpoint@1.2")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED
    swept = stack.sweep_as_if_later()
    assert len(swept) == 2  # the parent and its child
    proc = stack.run("--exit-after", "1")
    assert proc.popen.returncode == 0, proc.stderr
    assert [(o["run_id"], o["status"]) for o in proc.outcomes()] == [(run_id, "completed")]
    ((child_id, status, losses),) = stack.query(
        "select run_id, status, loss_count from ticketiq.runs where parent_run_id = %s", run_id)
    assert (status, losses) == ("completed", 1)
    # adopted once, and by the parent's take-over (at the parent's resumed epoch)
    adoptions = stack.query(
        "select event, epoch, detail from ticketiq.audit where run_id = %s "
        "and event in ('agent.run.adopted', 'agent.run.taken_over') order by audit_id",
        child_id)
    assert [e for e, _, _ in adoptions] == ["agent.run.adopted", "agent.run.taken_over"]
    ((parent_epoch,),) = stack.query(
        "select epoch from ticketiq.audit where run_id = %s and event = 'agent.run.adopted'",
        run_id)
    assert adoptions[1][2] == {"parent_run_id": run_id, "parent_epoch": parent_epoch}
    assert adoptions[0][1] == adoptions[1][1]
    # the child's step 1 was asked once, before the kill; never again
    assert stack.model_asks(child_id)[1] == 1
    _, _, settlement, result = the_write(stack, run_id, "agent.delegate")
    assert settlement == "asked_again" and result["child_run_id"] == str(child_id)


def test_a_run_that_may_wait_suspends_and_is_woken_elsewhere(stack: Stack) -> None:
    """It gives its lease up while a person decides; the decision wakes it on any process."""
    owner = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "16", "--steps", "2",
                        "--plan", "approval")
    run_id = owner.read_event("started")["run_id"]
    assert owner.wait(60) == 0, owner.stderr  # suspended: the run ended here
    assert [o["status"] for o in owner.outcomes()] == ["suspended"]
    ((status, holder, wait_key),) = stack.query(
        "select status, lease_holder, wait_key from ticketiq.runs where run_id = %s", run_id)
    assert status == "suspended" and holder is None and wait_key.startswith("approval:")
    approval_id = wait_key.removeprefix("approval:")
    other = stack.spawn("--exit-after", "1")
    stack.query("select * from ticketiq.decide_approval(%s, true, 'carol', 'go')", approval_id)
    assert other.wait(60) == 0, other.stderr
    assert [o["status"] for o in other.outcomes()] == ["completed"]
    assert stack.query("select count(*) from ticketiq.approval_requests") == [(1,)]
    assert len(comments_keyed(stack, keys.approval_key(approval_id))) == 1
    events = [e for (e,) in stack.query(
        "select event from ticketiq.audit where run_id = %s order by audit_id", run_id)]
    assert "agent.run.suspended" in events and "agent.run.woken" in events
    assert "agent.run.resumed" in events and "agent.run.crash_resumed" not in events


def test_deciding_an_unknown_approval_is_a_clear_error(stack: Stack, capsys) -> None:
    assert cli.main(["reject", "00000000-0000-0000-0000-000000000009",
                     "--database-url", stack.db_url]) == 1
    assert "unknown approval request" in capsys.readouterr().err


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_a_keyed_write_in_doubt_whose_gate_now_holds_it_waits_for_approval(
    stack: Stack, approve: bool,
) -> None:
    """Issue 20.1: resent with its key only once a person approves; rejected, never resent."""
    # the incident create was marked in doubt but never sent when the process died
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "8", "--steps", "2",
                         "--plan", "writes", faults="after_mark@1")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    stack.gates_file.write_text('{"approval_tools": ["incident.create"]}')
    assert len(stack.sweep_as_if_later()) == 1
    # the resume files a request and the run (it may wait) gives its lease up
    resumer = stack.run("--exit-after", "1")
    assert resumer.outcomes()[0]["status"] == "suspended", resumer.stderr
    ((approval_id,),) = stack.query(
        "select approval_id::text from ticketiq.approval_requests where run_id = %s", run_id)
    # held: nothing was sent while the request waits
    assert [r for r in stack.vendor.requests("incidentio") if r["method"] == "POST"] == []
    stack.query("select * from ticketiq.decide_approval(%s, %s, 'carol', 'decided')",
                approval_id, approve)
    assert resume(stack, sweep=False)["run_id"] == run_id
    call_id, step_key, settlement, _ = the_write(stack, run_id, "incident.create")
    created = [r for r in stack.vendor.requests("incidentio") if r["effect"] == "created"]
    if approve:
        # sent with the key it was marked with (its step key), applied once
        assert settlement == "resent_same_key"
        assert [r["key"] for r in created] == [step_key]
    else:
        assert settlement == "unknown" and created == []


def test_a_write_with_no_step_key_is_settled_unknown_not_read_back(stack: Stack) -> None:
    """Issue 20.5: a positional call id has no stable key: a reader by key cannot answer."""
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "8", "--steps", "2",
                         "--plan", "mixed", faults="after_mark@1.2",
                         TICKETIQ_SCRIPT_POSITIONAL_IDS="1")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    resume(stack)
    ((step_key, settlement, outcome),) = stack.query(
        "select step_key, settlement, outcome from ticketiq.calls "
        "where run_id = %s and tool = 'jira.comment'", run_id)
    assert step_key is None
    # never "not_found": the write may have landed under its ad hoc key
    assert settlement == "unknown" and outcome["outcome"] == "unknown"
    # and the model was told
    assert "not sent again" in outcome["message"]
