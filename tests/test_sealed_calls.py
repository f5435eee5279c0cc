"""The call rows a resume acts on are sealed (issue 21, finding 6; I9).

Each case kills the owner with a changing call in flight, changes its row
in ``ticketiq.calls`` through direct table writes (the test's superuser, as
someone with psql would), resumes on another process and judges from the
vendor service's own record that nothing was sent, and from the database
that the run failed with the reason and was audited as a tampered
checkpoint is.
"""

from __future__ import annotations

from procs import KILLED, Stack


def kill_at(stack: Stack, plan: str, faults: str) -> tuple[str, int]:
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "21", "--steps", "2",
                         "--plan", plan, faults=faults)
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    return run_id, len(stack.vendor.requests())


def resume_fails(stack: Stack, run_id: str, seen_at_kill: int, reason: str) -> None:
    assert len(stack.sweep_as_if_later()) == 1
    proc = stack.run("--exit-after", "1")
    (outcome,) = proc.outcomes()
    assert outcome["status"] == "failed", outcome
    assert reason in outcome["reason"]
    # nothing executed: not a write, not a read back, not a read
    assert len(stack.vendor.requests()) == seen_at_kill
    ((status, why),) = stack.query(
        "select status, failure_reason from ticketiq.runs where run_id = %s", run_id)
    assert status == "failed" and reason in why
    events = [e for (e,) in stack.query(
        "select event from ticketiq.audit where run_id = %s order by audit_id", run_id)]
    assert events[-2:] == ["agent.run.crash_resumed", "agent.run.seal_failed"]
    # the model was asked for no step after the one written
    assert stack.model_asks(run_id)[2] == 0


def tampered(stack: Stack, plan: str, faults: str, sql: str, reason: str) -> str:
    """Kill the owner at ``faults``, run ``sql`` on its run's rows, see the resume refuse."""
    run_id, seen = kill_at(stack, plan, faults)
    stack.query(sql, run_id)
    resume_fails(stack, run_id, seen, reason)
    return run_id


FORGED = ("outcome = '{\"sent\": \"FORGED\"}'")
RESET = "state = 'pending', marked_at = null, marked_classification = null, marked_epoch = null"


def test_a_call_in_doubt_reset_to_pending_is_not_sent_again(stack: Stack) -> None:
    tampered(stack, "teams", "after_call@1.2",
             f"update ticketiq.calls set {RESET} where run_id = %s and tool = 'teams.reply'",
             "does not match its seal")
    # sent once, before the kill
    assert len([r for r in stack.vendor.requests("teams") if r["method"] == "POST"]) == 1


def test_a_forged_outcome_never_reaches_the_model(stack: Stack) -> None:
    # incident.create made and recorded; jira.comment marked in doubt when killed
    tampered(stack, "writes", "after_mark@1.2",
             f"update ticketiq.calls set settlement = 'made', {FORGED} "
             "where run_id = %s and tool = 'incident.create'", "does not match its seal")
    assert "FORGED" not in stack.model_log.read_text()


def test_a_call_in_doubt_forged_as_done_is_refused(stack: Stack) -> None:
    tampered(stack, "teams", "after_call@1.2",
             "update ticketiq.calls set state = 'done', settlement = 'made', finished_at = now(), "
             f"{FORGED} where run_id = %s and tool = 'teams.reply'", "does not match its seal")
    assert "FORGED" not in stack.model_log.read_text()


def test_a_missing_call_row_fails_the_run(stack: Stack) -> None:
    tampered(stack, "teams", "after_call@1.2", "delete from ticketiq.calls where run_id = %s",
             "its checkpoint says it must")


def test_a_call_row_moved_to_other_arguments_fails_the_run(stack: Stack) -> None:
    tampered(stack, "teams", "after_call@1.2",
             "update ticketiq.calls set arguments = jsonb_set(arguments, '{text}', '\"rm -rf\"') "
             "where run_id = %s and tool = 'teams.reply'", "is not the call its checkpoint lists")


def test_a_pending_call_reset_from_a_seal_of_another_call_fails(stack: Stack) -> None:
    """A seal copied from another row (another call's) does not verify."""
    tampered(stack, "writes", "after_mark@1.2",
             f"update ticketiq.calls as c set {RESET}, seal = o.seal "
             "from ticketiq.calls as o where c.run_id = %s and o.run_id = c.run_id "
             "and c.tool = 'jira.comment' and o.tool = 'incident.create'",
             "does not match its seal")
