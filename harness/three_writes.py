"""The kill trials' ``three`` kind: a run whose steps make three writes at once.

Each step but its last asks for a keyed incident, a Jira comment with a reader and a
Teams reply with neither (the scripted plan ``three_writes_held``), which the step makes
at once: all three marked in doubt by one statement, then sent together.  The keyed
incident is held up to 0.8 s before it is sent (a random share, drawn per step), the
vendor holds each step's Teams reply :data:`~harness.trial_timing.THREE_HOLD` seconds
before applying it and its Jira comment a random part of that (:func:`hold_writes`), so
the writes are in flight for a while after their marks, each landed or not yet as the
fault falls.  When the kind is a round's target, the fault
waits until its run's writes are marked on the victim and lands a random share of the
hold later (:func:`wait_in_flight`): some of the step's writes landed, some not yet.

Judged (:func:`judge`), besides the trials' own verdicts (no loss, no duplicate by what
landed): every call the victim left in doubt (the resume's settlements but
``already_made``: a call it had recorded) is settled on resume by its route
(:data:`BY_ROUTE`: the keyed incident sent again with its key, the comment read back, the
reply reported unknown and not sent again), and no write of the run landed twice.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from harness.scripted import plan_calls
from harness.trial_report import Trial
from harness.trial_timing import THREE_HOLD

#: How each of the three writes is settled on resume, by its route.
BY_ROUTE = {"incident.create": "resent_same_key", "jira.comment": "read_back",
            "teams.reply": "unknown"}
#: What else a route may end in where the vendor fails on purpose (the flaky trials): a
#: reader that failed leaves its call unknown, never sent again.
ALSO_WHEN_FLAKY = {"read_back": {"unknown"}}

Query = Callable[..., list[tuple[Any, ...]]]


def hold_writes(vendor: Any, script: dict[str, Any], rng: random.Random) -> None:
    """Delay faults at the vendor for the run of ``script``: each step's Teams reply
    (its conversation is the seed's) for the whole hold, each step's Jira comment (its
    issue drawn as the scripted model draws it) for a random part of it."""
    seed, steps = script["seed"], int(script["steps"])
    vendor.fault("teams", "delay", path_regex=f"/conversations/conv-{seed}/activities",
                 method="POST", seconds=THREE_HOLD, count=steps)
    for step in range(1, steps):
        comment = plan_calls(script["plan"], random.Random(f"{seed}:{step}"), seed, step)[1]
        vendor.fault("jira", "delay", method="POST", count=1,
                     path_regex=f"/issue/{comment.arguments['issue_key']}/comment$",
                     seconds=round(rng.uniform(0.1, THREE_HOLD), 2))


def in_doubt(query: Query, trial: Trial, victim: str) -> int:
    """The trial's calls in doubt (marked, not recorded) while its run is on ``victim``."""
    rows = query(
        "select count(*) from ticketiq.entries as e join ticketiq.runs as r using (run_id)"
        " join ticketiq.calls as c using (run_id) where e.kind = %s and e.sender_id = %s"
        " and r.lease_holder = %s and c.state = 'in_doubt'",
        trial.entry_kind, trial.sender_id, victim)
    return int(rows[0][0]) if rows else 0


def wait_in_flight(query: Query, trial: Trial, victim: str, share: float,
                   timeout: float = 15.0) -> bool:
    """Wait until the trial's writes are marked on the victim, then a ``share`` of most
    of the hold (the Teams reply still unapplied); False if never seen in time."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if in_doubt(query, trial, victim):
            time.sleep(share * 0.8 * THREE_HOLD)
            return True
        time.sleep(0.01)
    return False


#: How a resume names a call the lost attempt had made and recorded (not in doubt).
RECORDED_BEFORE = frozenset({"already_made", "made"})


def judge(query: Query, trials: list[Trial], writes: list[dict[str, Any]],
          flaky: bool = False) -> list[str]:
    """What is wrong with the round's three-writes trials (nothing: an empty list); fills
    each trial's ``settlements``."""
    problems = []
    for trial in trials:
        if trial.kind != "three" or trial.run_id is None:
            continue
        rows = query("select detail from ticketiq.audit where run_id = %s"
                     " and event = 'agent.run.crash_resumed' order by audit_id", trial.run_id)
        tools = dict(query("select call_id, tool from ticketiq.calls where run_id = %s",
                           trial.run_id))
        for (detail,) in rows:
            for item in (detail or {}).get("settlements", []):
                tool = tools.get(item.get("call_id"), "?")
                trial.settlements.append(f"{tool}:{item.get('settlement')}")
                # "already_made" ("made" before issue 44): recorded by the victim before
                # the fault, not in doubt
                route = BY_ROUTE.get(tool)
                settled = item.get("settlement")
                if settled not in RECORDED_BEFORE and route is not None and settled != route \
                        and not (flaky and settled in ALSO_WHEN_FLAKY.get(route, ())):
                    problems.append(f"round {trial.round} three: {tool} call "
                                    f"{item.get('call_id')} settled {item.get('settlement')}"
                                    f", its route says {BY_ROUTE[tool]}")
        applied = Counter((w["step"], w["call_id"]) for w in writes
                          if w["run_id"] == trial.run_id and w["effect"] == "created")
        twice = {k: n for k, n in applied.items() if n > 1}
        if twice:
            problems.append(f"round {trial.round} three: writes landed twice {twice}")
        trial.writes_landed = sum(applied.values())
    return problems


def summary(trials: list[Trial]) -> dict[str, Any]:
    """The three-writes trials in a report: how many, how many were killed with writes in
    flight, and the settlements by tool."""
    three = [t for t in trials if t.kind == "three"]
    return {
        "trials": len(three),
        "killed_with_writes_in_flight": sum(1 for t in three if t.writes_in_flight),
        "calls_in_doubt_at_the_kill": sum(t.writes_in_flight or 0 for t in three),
        "settlements": dict(Counter(s for t in three for s in t.settlements)),
        "writes_landed": sum(t.writes_landed for t in three),
    }
