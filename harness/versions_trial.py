"""The versions kind of the kill trials: a rolling deploy of a new workflow version behind
the edge (``LIYAGENT_KILL_MODE=deploy LIYAGENT_KILL_EDGE=1 LIYAGENT_KILL_TARGET=versions``).

The workflows are :mod:`~harness.deploy_workflows`' (``deploy_keep``: release 2 takes
version 1's runs, ``compatible``; ``deploy_strict``: release 2 renamed a step, so only
release 1 runs version 1).  The arena's survivor runs release 1 throughout: it is the
old worker a rolling deploy keeps until the old version's runs are done.  Each round:

1. A victim of release 1 comes up behind the edge beside the survivor.  Five runs are
   started through the edge (``POST /runs``; the edge sends each to either old process):
   of each workflow one waits for the signal ``go`` and one sleeps on a durable timer
   due in 4 to 9 s, and one more ``deploy_strict`` run waits for ``go``.  The round waits
   until all five are asleep (suspended).
2. The deploy: a new process of release 2 comes up behind the edge; two more runs (one
   of each workflow) are started through the edge, so the process that claims each
   decides its version (1 or 2); then the victim gets SIGTERM and drains (its runs
   released at their next step boundary, adopted by a process that can run them).
3. The signals are sent through the edge (``POST /runs/{id}/signals/go``, with an
   ``Idempotency-Key`` the edge may retry with), while the victim drains: they land on
   the survivor or the new process; the timers come due meanwhile.
4. In half the rounds (drawn), one process is SIGKILLed mid-deploy: the draining victim,
   or the new process (its supervisor starts it again a second later, as a restart
   policy does); their runs are taken over by their sessions' end.
5. Every run must end; then the new process is drained (the fleet is rolled back to
   release 1 for the next round).

Judged per run (:func:`judge`): it completed, never failed (no
``agent.run.workflow_*`` audit row: step missing, version unavailable, unknown); the
release that ran its last step (its answer names it), every process that adopted it,
and the process that started it can run its version; its signal's payload is the one
sent; no loss counted unless a SIGKILL hit the round; its incident and its comment landed
at the vendor once each (and nothing twice, :mod:`~harness.landed`, for the whole run).
The report's ``versions`` gives, per workflow and version, on which process and release
each run finished.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from harness.deploy_workflows import SIGNAL, can_run
from harness.trial_report import Trial

if TYPE_CHECKING:
    from harness.trial_proc import Proc
    from harness.trial_report import Report
    from harness.trial_shape import Shape


class Arena(Protocol):
    """What a round uses of its arena (:class:`harness.trials.Arena`)."""

    shape: Shape
    survivor: Proc | None
    survivor_url: str
    tag: str
    say: Callable[[str], None]

    def spawn(self, name: str, **extra: str) -> tuple[Proc, str]: ...

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]: ...

    def authed(self, kwargs: dict[str, Any]) -> dict[str, Any]: ...

    def writes(self) -> list[dict[str, Any]]: ...

#: The trial kinds: a run of each workflow (their entry kinds in trial_report.ENTRY_KINDS).
KINDS = {"keep": "deploy_keep", "strict": "deploy_strict"}
#: The release of the survivor (every arena process but the deploy's new one).
OLD, NEW = "1", "2"
#: Seconds a round waits for its runs to fall asleep, and to end.
ASLEEP_TIMEOUT, END_TIMEOUT = 30.0, 60.0
#: Think time before each call (s): of the runs asleep through the deploy, of those
#: begun as it goes on; and the sleepers' timers, due during or after the deploy.
THINK, FRESH_THINK, TIMER = (0.1, 0.5), (0.8, 2.0), (4.0, 9.0)
#: The rounds with a SIGKILL mid-deploy, and whom it hits: the draining old process, the
#: new one, or the old one kept for the old version's runs (the arena's survivor).
KILL_SHARE = 0.5
KILLED = ("victim", "new", "keeper")


def _start(arena: Arena, url: str, trial: Trial) -> None:
    """The trial's run, started through the edge with its idempotency key."""
    body = {"kind": KINDS[trial.kind], "input": trial.script}
    for _ in range(20):
        try:
            answer = httpx.post(f"{url}/runs", timeout=10, **arena.authed(
                {"json": body, "headers": {"Idempotency-Key": trial.sender_id}}))
            trial.http_status.append(answer.status_code)
            if answer.status_code == 202:
                trial.run_id = str(answer.json()["run_id"])
                return
        except httpx.HTTPError:
            trial.retried = True
        time.sleep(0.5)


def _signal(arena: Arena, url: str, trial: Trial) -> None:
    """The signal ``go`` to the trial's run, through the edge, keyed so it is sent once."""
    payload = {"payload": {"round": trial.round, "key": trial.sender_id}}
    for _ in range(20):
        try:
            answer = httpx.post(f"{url}/runs/{trial.run_id}/signals/{SIGNAL}", timeout=10,
                                **arena.authed({"json": payload, "headers": {
                                    "Idempotency-Key": f"{trial.sender_id}-go"}}))
            trial.http_status.append(answer.status_code)
            if answer.status_code == 202:
                return
        except httpx.HTTPError:
            trial.retried = True
        time.sleep(0.5)


def _states(arena: Arena, trials: list[Trial]) -> dict[str, str]:
    ids = [t.run_id for t in trials if t.run_id]
    return {str(r): s for r, s in arena.query(
        "select run_id, status from ticketiq.runs where run_id = any(%s::uuid[])", ids)}


def _wait(arena: Arena, trials: list[Trial], states: tuple[str, ...], timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = _states(arena, trials)
        if all(t.run_id and found.get(t.run_id) in states for t in trials):
            return True
        time.sleep(0.1)
    return False


def run_round(arena: Arena, index: int, rng: random.Random, report: Report) -> list[Trial]:
    """One rolling deploy of release 2 (see the module's text); its trials, judged."""
    shape = arena.shape
    assert shape.edge is not None, "the versions trial runs behind the edge"
    edge = shape.edge.url
    name = f"victim-{index}"
    assert arena.survivor is not None
    keeper = arena.survivor.name
    releases = {keeper: OLD, name: OLD}
    victim, _ = arena.spawn(name)
    tag = f"{arena.tag}-{index}"
    seed = rng.randrange(1 << 30)

    def trial(kind: str, n: int, think: tuple[float, float], **script: Any) -> Trial:
        return Trial(index, kind, f"trial-{kind}-{tag}-{n}", 0.0, script={
            "seed": seed + n, "think": round_to(rng.uniform(*think)), **script})

    asleep = [trial("keep", 0, THINK, signal=True),
              trial("keep", 1, THINK, sleep=round_to(rng.uniform(*TIMER))),
              trial("strict", 2, THINK, signal=True),
              trial("strict", 3, THINK, signal=True),
              trial("strict", 4, THINK, sleep=round_to(rng.uniform(*TIMER)))]
    up = time.time()
    for t in asleep:
        _start(arena, edge, t)
    if not _wait(arena, asleep, ("suspended",), ASLEEP_TIMEOUT):
        report.problems.append(f"round {index + 1} versions: the old runs did not fall "
                               f"asleep: {_states(arena, asleep)}")
    # The deploy: the new release up at the edge, then the victim drained.
    new_name = f"{name}-next"
    new, _ = arena.spawn(new_name, TICKETIQ_SCRIPT_RELEASE=NEW)
    releases[new_name] = NEW
    # Begun as the deploy goes on: the process that claims each decides its version, and
    # its steps are long enough that the drain (or a SIGKILL) finds it mid-step.
    fresh = [trial("keep", 5, FRESH_THINK, sleep=1.0), trial("strict", 6, FRESH_THINK, sleep=1.0)]
    for t in fresh:
        _start(arena, edge, t)
    time.sleep(rng.uniform(0.0, 0.6))
    fault_at = time.time()
    victim.signal(signal.SIGTERM)
    trials = asleep + fresh
    kill = rng.choice(KILLED) if rng.random() < KILL_SHARE else None
    kill_after = rng.uniform(0.2, 1.6)
    targets = {"victim": victim, "new": new, "keeper": arena.survivor}
    waiting = [t for t in asleep if t.script.get("signal")]
    rng.shuffle(waiting)
    killed: Proc | None = None
    sent_at = [rng.uniform(0.0, 2.0) for _ in waiting]
    for at, t in sorted(zip(sent_at, waiting, strict=True), key=lambda p: p[0]):
        if kill is not None and killed is None and at > kill_after:
            killed = _kill(targets[kill], fault_at + kill_after)
        time.sleep(max(0.0, fault_at + at - time.time()))
        _signal(arena, edge, t)
    if kill is not None and killed is None:
        killed = _kill(targets[kill], fault_at + kill_after)
    if killed is not None and kill != "victim":
        # Its supervisor starts the same release again, under a new process id.
        shape.ports.pop(killed.name, None)
        killed.popen.wait(10)
        time.sleep(1.0)
        again = f"{name}-{kill}-again"
        proc, url = arena.spawn(again, **({"TICKETIQ_SCRIPT_RELEASE": NEW} if kill == "new"
                                          else {"TICKETIQ_ENTRY_CLAIM_DELAY": "2"}))
        releases[again] = releases[killed.name]
        if kill == "new":
            new, new_name = proc, again
        else:
            arena.survivor, arena.survivor_url = proc, url
    try:
        victim.popen.wait(60)  # the drain ends (or the SIGKILL did)
    except Exception:  # noqa: BLE001 - a drain that does not end is judged below
        report.problems.append(f"round {index + 1} versions: the drained victim did not exit")
    ended = _wait(arena, trials, ("completed", "failed", "stopped"), END_TIMEOUT)
    for t in trials:
        t.kill_after = fault_at - up
        t.in_flight = True
        t.detection = "drain"
        t.versions = {"killed": kill, "killed_process": killed.name if killed else None,
                      "releases": dict(releases)}
    report.problems.extend(judge(arena, trials, releases, fault_at,
                                 killed.name if killed else None))
    if not ended:
        report.problems.append(f"round {index + 1} versions: runs open after "
                               f"{END_TIMEOUT:g} s: {_states(arena, trials)}")
    victim.stop()
    new.stop()  # drained: the fleet goes back to release 1 for the next round
    for proc in (name, new_name, f"{name}-next", f"{name}-new-again"):
        shape.ports.pop(proc, None)
    report.problems.extend(shape.one_run_per_2xx(arena, trials))
    arena.say(f"round {index + 1}: deploy of release {NEW}"
              + (f", {kill} SIGKILLed {kill_after:.1f} s into the drain" if kill else "")
              + "; finished on " + ", ".join(
                  f"{t.kind} v{t.workflow_version} {t.finished_by}" for t in trials))
    return trials


def round_to(value: float) -> float:
    return float(f"{value:.2f}")


def _kill(proc: Proc, at: float) -> Proc:
    time.sleep(max(0.0, at - time.time()))
    proc.signal(signal.SIGKILL)
    return proc


def judge(arena: Arena, trials: list[Trial], releases: dict[str, str],
          fault_at: float, killed: str | None) -> list[str]:
    """What is wrong with the round's runs (nothing: an empty list); fills each trial's
    outcome, version, the process that finished it and those that adopted it.  A run is
    taken over (and counts a loss) only from the process SIGKILLed (``killed``): the
    drain hands its runs over and counts none."""
    problems = []
    writes = arena.writes()
    for t in trials:
        where = f"round {t.round + 1} {t.kind} run {t.run_id}"
        if t.run_id is None:
            t.outcome = "lost"
            t.detail = "never started"
            problems.append(f"{where}: never started ({t.http_status})")
            continue
        workflow = KINDS[t.kind]
        rows = arena.query(
            "select r.status, r.loss_count, r.failure_reason,"
            " (select c.body #>> '{counters,workflow,version}' from ticketiq.checkpoints as c"
            "  where c.run_id = r.run_id and c.step = 1),"
            " (select c.epoch from ticketiq.checkpoints as c"
            "  where c.run_id = r.run_id and c.step = 1),"
            " (select a.body -> 'output' from ticketiq.answers as a where a.run_id = r.run_id),"
            " extract(epoch from r.finished_at)"
            " from ticketiq.runs as r where r.run_id = %s", t.run_id)
        (state, t.loss_count, t.failure_reason, t.workflow_version, first_epoch, output,
         finished) = rows[0]
        t.outcome = "answered" if state == "completed" else "lost"
        if finished is not None:
            t.recovery_seconds = max(0.0, float(finished) - fault_at)
        output = output if isinstance(output, dict) else {}
        t.finished_by = f"{output.get('process')} (release {output.get('release')})"
        audit = arena.query(
            "select event, actor, coalesce(detail ->> 'reason', '') || coalesce(' of ' || "
            "(detail ->> 'lapsed_holder'), '') from ticketiq.audit where run_id = %s "
            "order by audit_id", t.run_id)
        adopters = [a for e, a, _ in audit if e == "agent.run.adopted"]
        t.resumed_by = ", ".join(adopters) or None
        starters = [a for e, a, _ in audit if e == "agent.run.started"]
        if any(e == "agent.run.released" for e, _, _ in audit):
            t.claimed_by = "released"
        t.taken_over = [r for e, _, r in audit if e == "agent.run.lease_lapsed"]
        t.loss_allowed = sum(1 for r in t.taken_over if killed and r.endswith(f" of {killed}"))
        if len(t.taken_over) > t.loss_allowed:
            problems.append(f"{where}: taken over {t.taken_over}, not only from the "
                            f"SIGKILLed process ({killed})")
        if state != "completed":
            problems.append(f"{where}: {state} ({t.failure_reason})")
            t.detail = f"{state}: {t.failure_reason}"
        failed = [e for e, _, _ in audit if e.startswith("agent.run.workflow")]
        if failed:
            problems.append(f"{where}: failed for the deploy: {failed}")
        # A run's version is the one its first checkpoint names: a run whose starter was
        # SIGKILLed before writing one is begun afresh by whoever adopts it, on its code.
        ran = {"started": starters if first_epoch == 1 else [], "adopted": adopters}
        for what, names in ran.items():
            wrong = [n for n in names if not can_run(releases.get(n), workflow,
                                                     t.workflow_version)]
            if wrong:
                problems.append(f"{where}: version {t.workflow_version} {what} by {wrong}, "
                                f"which cannot run it")
        if state == "completed" and not can_run(output.get("release"), workflow,
                                                t.workflow_version):
            problems.append(f"{where}: version {t.workflow_version} finished by "
                            f"{t.finished_by}, which cannot run it")
        if state == "completed" and releases.get(str(output.get("process"))) \
                != output.get("release"):
            problems.append(f"{where}: its answer names {t.finished_by}, not a process "
                            f"of that release ({releases})")
        if t.script.get("signal") and state == "completed":
            got = (output.get("signal") or {}).get("payload")
            if got != {"round": t.round, "key": t.sender_id}:
                problems.append(f"{where}: its signal's payload {got}")
        if t.loss_count > t.loss_allowed:
            problems.append(f"{where}: loss_count {t.loss_count}, taken over from the "
                            f"SIGKILLed process {t.loss_allowed} time(s)")
        landed = Counter(w["vendor"] for w in writes
                         if w["run_id"] == t.run_id and w["effect"] == "created")
        t.writes_landed = sum(landed.values())
        if state == "completed" and landed != {"incidentio": 1, "jira": 1}:
            problems.append(f"{where}: landed {dict(landed)}, not one incident and one "
                            f"comment")
    return problems


def summary(trials: list[Trial]) -> dict[str, Any]:
    """The versions trials in a report: per workflow and version, where its runs finished
    (process and release), the rounds with a SIGKILL, the runs handed over by the drain,
    and those taken over after a SIGKILL."""
    ours = [t for t in trials if t.kind in KINDS]
    finished: dict[str, Counter[str]] = {}
    for t in ours:
        label = f"{KINDS[t.kind]} v{t.workflow_version}"
        release = (t.finished_by or "").rpartition("(")[2].rstrip(")")
        finished.setdefault(label, Counter())[release or "none"] += 1
    kills = Counter(str((t.versions or {}).get("killed")) for t in ours
                    if t.kind == "strict" and t.sender_id.endswith("-2"))
    return {"runs": len(ours),
            "finished_on": {k: dict(v) for k, v in sorted(finished.items())},
            "rounds_by_sigkill": dict(kills),
            "released_by_drain": sum(1 for t in ours if t.claimed_by == "released"),
            "taken_over_after_sigkill": sum(1 for t in ours if t.taken_over),
            "signalled": sum(1 for t in ours if t.script.get("signal")),
            "on_timers": sum(1 for t in ours if t.script.get("sleep")),
            "runs_detail": [{"round": t.round + 1, "kind": KINDS[t.kind], "run_id": t.run_id,
                             "version": t.workflow_version, "started_script": t.script,
                             "finished_by": t.finished_by, "adopted_by": t.resumed_by,
                             "taken_over": t.taken_over, "loss_count": t.loss_count}
                            for t in ours]}
