"""Which time a kill trial holds to the 15 s recovery bound (Trial.judged_seconds)."""

from __future__ import annotations

import pytest

from ticketiq_pg.testing.trial_report import Trial


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
