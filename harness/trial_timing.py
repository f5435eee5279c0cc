"""When a kill trial's fault lands, and where each trial was when it did.

Each round of :mod:`~harness.trials` begins one trial of every kind
(cron, Teams, webhook, a long webhook run of 30 steps or more, and any kind added
later), each a run of a script drawn here
(:func:`draw_script`: ``STEPS`` steps, the last its answer, each a model think time of
``THINK`` seconds and the step's tool calls), so they are in flight together, each at
a phase of its own.  Round ``i`` times its fault from its *target*, the trial of kind
``i mod kinds``: once the target's run is seen in the database running on the victim
(:func:`where`), the fault lands a random share of that run's least length
(:func:`script_span`) later, anywhere from before its first step is written to its
last.  So the target is caught in flight, whichever kind it is (unless it is not seen
running within ``SEEN_TIMEOUT``), every kind is the target of a quarter of the rounds,
and the others are caught at random points of theirs.  A fixed delay after the victim
is up (0.2 to 4 s, as before) caught the short runs only after they had finished.
The draws come from the round's seeded generator, so ``LIYAGENT_KILL_SEED`` repeats
them (the moments are measured from what the database shows, so they repeat to
within the polling).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.trial_report import Trial

#: Steps of a trial's run (inclusive; the last is its answer) and each step's think time.
STEPS = (3, 5)
THINK = (0.3, 0.6)
#: How long a target may take to be seen running on the victim before the fault anyway.
SEEN_TIMEOUT = 10.0


#: A long run's steps (its checkpoints are a chain of 30 links or more) and think time.
LONG_STEPS = (31, 36)
LONG_THINK = (0.03, 0.08)


def draw_script(rng: random.Random, long: bool = False) -> dict[str, Any]:
    """A trial's script (the round adds its seed); ``long``: a run of 30 steps or more."""
    steps, think = (LONG_STEPS, LONG_THINK) if long else (STEPS, THINK)
    return {"steps": rng.randint(*steps), "plan": "mixed",
            "model_delay": round(rng.uniform(*think), 2)}


#: A workflow trial's loops, the think time before each of its calls, and its sleeps.
WORKFLOW_LOOPS = (2, 3)
WORKFLOW_SLEEP = (0.2, 0.5)


def draw_workflow_script(rng: random.Random) -> dict[str, Any]:
    """A workflow trial's input (the scripted workflow: a keyed incident create, a Jira
    comment and a durable sleep per loop, a loop back); the round adds its seed.  Its
    ``steps`` and ``model_delay`` are its calls and the think before each, for
    :func:`script_span`."""
    loops = rng.randint(*WORKFLOW_LOOPS)
    think = round(rng.uniform(*THINK), 2)
    return {"loops": loops, "sleep": round(rng.uniform(*WORKFLOW_SLEEP), 2), "think": think,
            "steps": 2 + loops, "model_delay": think}


def script_span(script: dict[str, Any]) -> float:
    """The least time a run of ``script`` is in flight once claimed: its think times."""
    return int(script["steps"]) * float(script.get("model_delay", 0.0))


def where(query: Callable[..., list[tuple[Any, ...]]], trials: list[Trial],
          victim: str) -> dict[int, str]:
    """Where each trial is, by ``id(trial)``, read in one query: ``done`` (its entry
    ended), ``unclaimed`` (not fired or not claimed yet), ``victim`` or ``survivor``
    (its run's lease holder).  A cron trial's ``sender_id`` is its schedule's name
    until it fired (its entries are ``name@fire_at``)."""
    rows = query(
        "select e.kind, e.sender_id, e.state, r.lease_holder from ticketiq.entries as e"
        " left join ticketiq.runs as r using (run_id)"
        " where (e.kind = 'cron' and split_part(e.sender_id, '@', 1) = any(%s))"
        " or (e.kind <> 'cron' and e.sender_id = any(%s))",
        [t.sender_id.partition("@")[0] for t in trials if t.kind == "cron"],
        [t.sender_id for t in trials if t.kind != "cron"])
    out = {}
    for trial in trials:
        sender = trial.sender_id.partition("@")[0] if trial.kind == "cron" else None
        found = [(state, holder) for kind, sender_id, state, holder in rows
                 if kind == trial.entry_kind and (sender_id.partition("@")[0] == sender
                                            if sender else sender_id == trial.sender_id)]
        state, holder = found[0] if found else ("pending", None)
        if state not in ("pending", "running"):
            out[id(trial)] = "done"
        elif state == "pending" or holder is None:
            out[id(trial)] = "unclaimed"
        else:
            out[id(trial)] = "victim" if holder == victim else "survivor"
    return out


#: A three-writes trial (the plan ``three_writes_held``: each step but the last makes a
#: keyed incident, held up to 0.8 s before it is sent, a Jira comment with a reader and
#: a Teams reply with neither, at once).
THREE_STEPS = (3, 4)
#: The vendor holds each step's Teams reply this long before applying it (and its Jira
#: comment a random part of it), so a fault timed from the step's marks finds writes in
#: flight: the kill lands while the reply (and perhaps the comment) is still unapplied.
THREE_HOLD = 1.0


def draw_three_script(rng: random.Random) -> dict[str, Any]:
    """A three-writes trial's script (the round adds its seed)."""
    return {"steps": rng.randint(*THREE_STEPS), "plan": "three_writes_held",
            "model_delay": round(rng.uniform(*THINK), 2)}


#: A watched trial's steps, think time (its text streams over the second half) and words.
WATCH_STEPS = (3, 5)
WATCH_THINK = (1.0, 1.6)
WATCH_WORDS = (12, 30)


def draw_watch_script(rng: random.Random) -> dict[str, Any]:
    """A watched trial's script: the scripted model streams each step's text (``words``
    more words) over the second half of its think time while a client watches."""
    return {"steps": rng.randint(*WATCH_STEPS), "plan": "mixed",
            "model_delay": round(rng.uniform(*WATCH_THINK), 2),
            "words": rng.randint(*WATCH_WORDS)}
