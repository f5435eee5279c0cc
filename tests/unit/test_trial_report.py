"""Which time a kill trial holds to the 15 s recovery bound (Trial.judged_seconds)."""

from __future__ import annotations

import pytest

from harness.trial_report import Trial


def _trial(kind: str, *, errors: int = 0, resume: float | None = 11.9) -> Trial:
    return Trial(round=0, kind=kind, sender_id="s", kill_after=0.2, outcome="answered",
                 in_flight=True, recovery_seconds=15.5, resume_seconds=resume,
                 model_errors=errors)


@pytest.mark.parametrize(("trial", "judged"), [
    # A run with no injected errors is judged to its end.
    (_trial("webhook"), 15.5),
    # A taken-over run that met injected errors: to its next step after the takeover.
    (_trial("webhook", errors=4), 11.9),
    # ... but to its end when it was never taken over (nothing to measure a resume by).
    (_trial("webhook", errors=4, resume=None), 15.5),
    # A long run: always to its next step after the takeover.
    (_trial("long"), 11.9),
])
def test_the_time_held_to_the_bound(trial: Trial, judged: float) -> None:
    assert trial.judged_seconds == judged


def test_the_report_says_what_took_each_run_over_and_what_the_edge_answered() -> None:
    from harness.trial_report import Report

    trials = [Trial(0, "run", "a", 0.1, claimed_by="session_ended"),
              Trial(0, "cron", "b", 0.1, claimed_by="lease_lapsed"),
              Trial(0, "long", "c", 0.1, claimed_by="released", handover_wait=0.01,
                    handover_step=0.4),
              Trial(0, "teams", "d", 0.1)]
    report = Report(mode="deploy", seed=1, trials=trials, edge={"hrsp_5xx": 2})
    shape = report.as_json()
    assert [d["detected_by"] for d in shape["detected_by"]] == ["session", "lease", "drain",
                                                                 None]
    assert shape["edge_5xx"] == 2
    assert shape["handovers"]["wait_seconds"] == [0.01]
    assert shape["handovers"]["next_step_max"] == 0.4
    # No edge ran: no edge_5xx claimed.
    assert "edge_5xx" not in Report(mode="kill", seed=1).as_json()


def test_a_workflow_trial_is_judged_to_its_end_and_found_by_its_kind() -> None:
    """A workflow trial comes in through POST /runs with the scripted workflow's kind; the
    bound holds its time to its next step after a takeover, else to its end."""
    import random

    from harness.scripted_workflow import scripted_flow
    from harness.trial_timing import draw_workflow_script, script_span

    trial = _trial("workflow")
    assert trial.entry_kind == scripted_flow.kind == "scripted_flow"
    assert trial.judged_seconds == 11.9  # taken over: to its next step (its sleeps are its own)
    assert _trial("workflow", resume=None).judged_seconds == 15.5  # asleep at the fault
    script = draw_workflow_script(random.Random(7))
    assert script["loops"] >= 2 and script["sleep"] > 0  # a loop back and a durable sleep
    assert script_span(script) == script["steps"] * script["think"]
