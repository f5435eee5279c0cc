"""The fan-out kind of the kill trials: a workflow that starts three child workflow runs
at once and waits for all (``ctx.all(ctx.workflow(...), ...)``), or, in half the rounds,
for the first of them to end (``ctx.first``: the scripted workflow's ``race``).

A round begins one (the scripted workflow with ``flows: 3``: its read, a keyed incident
and a Jira comment, no sleep, so it stays on the process that started it, then three runs
of ``scripted_child``, each a keyed write and a write with a reader, run by that process
at once), so its fault lands anywhere from before the children start to after they end;
``LIYAGENT_KILL_TARGET=fanout`` times every round's fault from it.  Judged besides what
every trial is (answered, nothing landed twice): its run has exactly three child runs,
one per delegation key, each completed, and its answer holds the three children's
outputs; a first-of's answer holds the child the database recorded as the first to end
(``ticketiq.first_ends``, written once: the same child however often the parent was
killed), and its other children ran to their own end, each once.  What the children had
done when the fault came (started, ended) is tallied in the report.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from harness.trial_report import Trial

Query = Callable[..., list[tuple[Any, ...]]]

#: Children per fan-out, and the think time before each call (parent and children).
CHILDREN = 3
THINK = (0.2, 0.4)


def draw_script(rng: random.Random) -> dict[str, Any]:
    """A fan-out trial's input; the round adds its seed.  ``steps`` and ``model_delay``
    for :func:`~harness.trial_timing.script_span`: its three calls and the children's
    two, each after a think."""
    think = round(rng.uniform(*THINK), 2)
    kind = "race" if rng.random() < 0.5 else "flows"
    return {"loops": 1, "sleep": 0, "think": think,
            kind: CHILDREN, "child_delay": think, "steps": 5, "model_delay": think}


def at_fault(query: Query, trial: Trial) -> tuple[int, int]:
    """How many of the trial's children had started, and ended, at the fault."""
    rows = query("select count(c.run_id), count(c.finished_at) + count(a.run_id) "
                 "filter (where c.finished_at is null) from ticketiq.entries as e "
                 "join ticketiq.runs as c on c.parent_run_id = e.run_id "
                 "left join ticketiq.answers as a on a.run_id = c.run_id "
                 "where e.kind = %s and e.sender_id = %s", trial.entry_kind, trial.sender_id)
    return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)


def judge(query: Query, trials: list[Trial], timeout: float = 15.0) -> list[str]:
    """What is wrong with the round's fan-out trials (nothing: an empty list).  A child
    whose answer was sealed but not handed on when the victim died gave its parent the
    answer; it is handed on once the parent has ended: waited for up to ``timeout``."""
    problems = []
    for trial in trials:
        if trial.kind != "fanout" or trial.run_id is None:
            continue
        deadline = time.time() + timeout
        while True:
            children = query("select idempotency_key, status from ticketiq.runs "
                             "where parent_run_id = %s", trial.run_id)
            if all(s in ("completed", "failed", "stopped") for _, s in children) \
                    or time.time() > deadline:
                break
            time.sleep(0.1)
        keys = {k for k, _ in children}
        if len(children) != CHILDREN or len(keys) != CHILDREN:
            problems.append(f"round {trial.round} fanout: run {trial.run_id} has "
                            f"{len(children)} child runs under {len(keys)} keys, not "
                            f"{CHILDREN} (one per key)")
        if any(s != "completed" for _, s in children):
            problems.append(f"round {trial.round} fanout: run {trial.run_id} children "
                            f"{sorted(s for _, s in children)}")
        if trial.script.get("race"):
            problems.extend(_judge_first(query, trial))
        else:
            rows = query("select body -> 'output' -> 'flows' from ticketiq.answers "
                         "where run_id = %s", trial.run_id)
            flows = rows[0][0] if rows else None
            if trial.outcome == "answered" and (
                    not isinstance(flows, list) or len(flows) != CHILDREN
                    or not all(isinstance(f, dict) for f in flows)):
                problems.append(f"round {trial.round} fanout: run {trial.run_id} answered "
                                f"without its children's outputs: {flows}")
        trial.children = len(children)
    return problems


def _judge_first(query: Query, trial: Trial) -> list[str]:
    """A first-of's answer: the child recorded as the first to end, completed, its output."""
    rows = query("select a.body -> 'output' -> 'first', f.child_run_id::text "
                 "from ticketiq.answers as a left join ticketiq.first_ends as f "
                 "using (run_id) where a.run_id = %s", trial.run_id)
    if trial.outcome != "answered":
        return []
    first, recorded = rows[0] if rows else (None, None)
    if (not isinstance(first, dict) or first.get("child_run_id") != recorded
            or first.get("status") != "completed" or not isinstance(first.get("output"), dict)):
        return [f"round {trial.round} fanout: run {trial.run_id} answered with {first} as "
                f"its first child, the database recorded {recorded}"]
    return []


def summary(trials: list[Trial]) -> dict[str, Any]:
    """The fan-out trials in a report: how many, and where their children were at the
    fault (none started, some started, all started and running, some or all ended)."""
    fan = [t for t in trials if t.kind == "fanout"]
    phases: dict[str, int] = {}
    for t in fan:
        started, ended = t.children_at_fault or (0, 0)
        phase = ("none started" if started == 0 else
                 "some started" if started < CHILDREN and ended == 0 else
                 "running" if ended == 0 else
                 "all ended" if ended == CHILDREN else "some ended")
        phases[phase] = phases.get(phase, 0) + 1
    return {"trials": len(fan), "first_of": sum(1 for t in fan if t.script.get("race")),
            "child_runs": sum(t.children for t in fan), "at_the_fault": phases}


def wait_phase(query: Query, trial: Trial, share: float, timeout: float = 15.0) -> bool:
    """Time the fault from the children when the trial is the round's target: a fifth of
    the shares land before they start (a share of the parent's own steps), the rest a
    share of the children's span after the first one started, so faults fall before,
    among and after the children's steps.  False if no child was seen in time."""
    think = float(trial.script.get("child_delay", 0.0))
    if share < 0.2:
        time.sleep(share / 0.2 * 3 * think)
        return True
    deadline = time.time() + timeout
    while time.time() < deadline:
        if at_fault(query, trial)[0]:
            time.sleep((share - 0.2) / 0.8 * (2 * think + 0.2))
            return True
        time.sleep(0.02)
    return False
