"""What a kill trial run found: one :class:`Trial` per request a round began, and the
:class:`Report` over the run (losses, duplicate writes counted by what landed, with every
write the vendor recorded, stalled writes, the trials caught in flight per kind, and resume
and recovery percentiles per detection; flaky, the transient errors injected and seen, and
the losses counted beyond the faults).  Arithmetic only; :mod:`~.trials` runs the rounds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from harness import landed, stalled_calls

#: The inbox entry kind of a trial kind whose entry is named otherwise.
ENTRY_KINDS = {"long": "webhook", "workflow": "scripted_flow", "three": "run", "watch": "run",
               "fanout": "scripted_flow", "keep": "deploy_keep", "strict": "deploy_strict"}


@dataclass
class Trial:
    round: int
    kind: str
    sender_id: str
    kill_after: float  # seconds from the victim being up to the fault
    outcome: str = "pending"  # answered | failed | lost
    in_flight: bool = False  # open at the fault (at_fault is not "done")
    # Where it was at the fault: done | unclaimed (not fired or claimed yet) |
    # victim (its run running on the victim: caught) | survivor.
    at_fault: str = ""
    target: bool = False  # the fault was timed from this trial's run
    # Seconds its run had run at the fault (None: finished before it, or not begun).
    into_run: float | None = None
    recovery_seconds: float | None = None
    loss_count: int = 0
    retried: bool = False
    detail: str = ""
    run_id: str | None = None
    resumed_by: str | None = None
    detection: str = "session"  # session (the victim held a liveness token) | lease
    claimed_by: str | None = None  # session_ended | lease_lapsed: why the run was taken over
    resume_seconds: float | None = None
    failure_reason: str | None = None  # the run's, when it ended failed
    # The faults that hit the run's process: 1 caught in flight on the victim, else 0.
    loss_allowed: int = 0
    model_errors: int = 0  # transient errors the run's model answered (flaky)
    vendor_errors: int = 0  # vendor errors the run's tools saw (flaky)
    script: dict[str, Any] = field(default_factory=dict)  # the run's (seed, steps, ...)
    # Production shape (trial_shape): every HTTP status its request got (the edge's,
    # retries included), and for a run a drain handed over, seconds from its release
    # to its adoption and to its next step written.
    http_status: list[int] = field(default_factory=list)
    handover_wait: float | None = None
    handover_step: float | None = None
    # The three-writes kind (harness.three_writes): its calls in doubt on the victim at
    # the fault (None: not looked), each resume settlement as "tool:settlement", and its
    # writes the vendor applied.
    writes_in_flight: int | None = None
    settlements: list[str] = field(default_factory=list)
    writes_landed: int = 0
    # The fan-out kind (harness.fanout_trial): its children started and ended at the
    # fault (None: not looked), and its child runs in the end.
    children_at_fault: tuple[int, int] | None = None
    children: int = 0
    # The versions kind (harness.versions_trial): the workflow version its run started
    # on, the process and release that ran its last step, why it was taken over after a
    # SIGKILL (each time), and its round's deploy (the process killed, each release).
    workflow_version: str | None = None
    finished_by: str | None = None
    taken_over: list[str] = field(default_factory=list)
    versions: dict[str, Any] | None = None

    @property
    def judged_seconds(self) -> float | None:
        """The time held to the recovery bound: from the fault to the trial's end, but
        from the fault to the run's next step after the takeover for a long run (its
        end is 30 more steps of its own work away) and for a taken-over run that met
        injected errors (flaky): the rest of such a run is its own work, retries and
        their backoff included, not recovery; and for a taken-over workflow, whose rest
        holds its own durable sleeps."""
        if self.kind == "long":
            return self.resume_seconds
        if self.kind in ("workflow", "fanout") and self.resume_seconds is not None:
            # its durable sleeps and the code between its calls are its own time
            return self.resume_seconds
        if (self.model_errors or self.vendor_errors) and self.resume_seconds is not None:
            return self.resume_seconds
        return self.recovery_seconds

    @property
    def entry_kind(self) -> str:
        """The kind of its inbox entry: a long run comes in as a webhook, a workflow
        as the scripted workflow's kind (``POST /runs`` with ``"kind"``)."""
        return ENTRY_KINDS.get(self.kind, self.kind)

    @property
    def detected_by(self) -> str | None:
        """What took the run over: session (its process's liveness session ended),
        lease (its lease lapsed), drain (released at a step boundary); None: not taken
        over."""
        return {"session_ended": "session", "lease_lapsed": "lease",
                "released": "drain"}.get(self.claimed_by or "")


@dataclass
class Report:
    mode: str
    seed: int
    rounds: int = 0
    trials: list[Trial] = field(default_factory=list)
    # (run, call)s the vendor applied more than once, counted by what landed (see
    # :mod:`~harness.landed`), and every write it recorded, to recount.
    duplicates: dict[str, int] = field(default_factory=dict)
    writes: list[dict[str, Any]] = field(default_factory=list)
    stalled_writes: int = 0
    # Vendor limits on (LIYAGENT_KILL_VENDOR_LIMITS): per round, the victim's calls
    # counted in flight under a concurrency at the fault, and the seconds from the fault
    # to the last of them no longer counted (its run claimed at a new epoch); and the
    # runs suspended waiting for a token at the fault.
    tokens_given_back: list[dict[str, Any]] = field(default_factory=list)
    # stop: every outside call the stalled process made that reached a vendor after the
    # takeover (:mod:`~harness.stalled_calls`), begun and applied counted apart.
    stalled_calls: list[dict[str, Any]] = field(default_factory=list)
    # From each request's lease check in its process to the vendor having it whole.
    send_window: dict[str, Any] = field(default_factory=dict)
    flaky: bool = False
    model_errors: int = 0  # transient errors the model answered, in all
    vendor_errors: dict[str, int] = field(default_factory=dict)  # requests hit, by fault
    # Production shape (trial_shape): the edge's own counters and what was judged at it
    # (None: no edge), and the shape's findings (an edge 2xx without exactly one run ...).
    edge: dict[str, Any] | None = None
    shape_problems: list[str] = field(default_factory=list)
    # What a mode's or a kind's own judging found (watch mode's clients, the three-writes
    # kind's settlements), and their tallies (None: the mode or kind did not run).
    problems: list[str] = field(default_factory=list)
    watch: dict[str, Any] | None = None
    three: dict[str, Any] | None = None
    fanout: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None

    @property
    def lost(self) -> int:
        return sum(1 for t in self.trials if t.outcome != "answered")

    @property
    def recovery_seconds(self) -> list[float]:
        return [t.recovery_seconds for t in self.trials if t.recovery_seconds is not None]

    @property
    def duplicate_writes(self) -> int:
        """Writes applied beyond the first for their run and call."""
        return sum(n - 1 for n in self.duplicates.values())

    def by_kind(self) -> dict[str, dict[str, int]]:
        """Per kind: its trials, those caught in flight (running on the victim at the
        fault), those open anywhere at the fault, and those the fault was timed from."""
        kinds = dict.fromkeys(t.kind for t in self.trials)
        return {kind: {
            "trials": sum(1 for t in self.trials if t.kind == kind),
            "caught": sum(1 for t in self.trials if t.kind == kind and t.at_fault == "victim"),
            "in_flight": sum(1 for t in self.trials if t.kind == kind and t.in_flight),
            "targeted": sum(1 for t in self.trials if t.kind == kind and t.target),
        } for kind in kinds}

    def rarely_caught(self, share: float = 0.25) -> dict[str, dict[str, int]]:
        """The kinds caught in flight in fewer than ``share`` of their trials."""
        return {k: v for k, v in self.by_kind().items() if v["caught"] < share * v["trials"]}

    @property
    def runs_with_errors(self) -> int:
        """Trials whose run saw at least one transient error (model or vendor)."""
        return sum(1 for t in self.trials if t.model_errors or t.vendor_errors)

    @property
    def excess_losses(self) -> list[Trial]:
        """Trials whose run counted more losses than faults hit its process."""
        return [t for t in self.trials if t.loss_count > t.loss_allowed]

    @property
    def live_takeovers(self) -> int:
        """Runs taken over because a session ended although the victim lived (restart)."""
        if self.mode not in ("restart", "failover", "deploy", "patroni"):
            return 0
        return sum(1 for t in self.trials if t.claimed_by == "session_ended")

    def by_detection(self) -> dict[str, dict[str, Any]]:
        """Resume and recovery percentiles for each detection (session, lease)."""
        out: dict[str, dict[str, Any]] = {}
        for detection in sorted({t.detection for t in self.trials}):
            trials = [t for t in self.trials if t.detection == detection]
            resume = [t.resume_seconds for t in trials if t.resume_seconds is not None]
            recovery = [t.recovery_seconds for t in trials if t.recovery_seconds is not None]
            out[detection] = {
                "trials": len(trials),
                "taken_over": len(resume),
                "claimed_by": dict(Counter(t.claimed_by for t in trials if t.claimed_by)),
                "resume_p50": percentile(resume, 0.5),
                "resume_p95": percentile(resume, 0.95),
                "resume_p99": percentile(resume, 0.99),
                "resume_max": max(resume) if resume else None,
                "recovery_p50": percentile(recovery, 0.5),
                "recovery_p95": percentile(recovery, 0.95),
                "recovery_max": max(recovery) if recovery else None,
            }
        return out

    def as_json(self) -> dict[str, Any]:
        flaky = {"flaky": {
            "model_errors": self.model_errors,
            "vendor_errors": sum(self.vendor_errors.values()),
            "vendor_errors_by_fault": self.vendor_errors,
            "runs_with_errors": self.runs_with_errors,
            "excess_losses": len(self.excess_losses),
            "failure_reasons": dict(Counter(
                t.failure_reason for t in self.trials if t.failure_reason)),
        }} if self.flaky else {}
        return {
            "mode": self.mode,
            "rounds": self.rounds,
            "seed": self.seed,
            "lost": self.lost,
            "duplicates": self.duplicate_writes,
            "duplicates_counted_by": "per call of a run (run, step, call id), from the "
                                     "content the vendor applied, whatever its key",
            "duplicate_writes": self.duplicates,
            "writes": len(self.writes),
            "writes_applied": sum(1 for w in self.writes if w["effect"] == "created"),
            "writes_unattributed": landed.unattributed(self.writes),
            "by_kind": self.by_kind(),
            "stalled_writes": self.stalled_writes,
            **stalled_calls.summary(self.stalled_calls),
            **({"tokens_given_back": self.tokens_given_back} if self.tokens_given_back else {}),
            "send_window": self.send_window,
            "live_takeovers": self.live_takeovers,
            "by_detection": self.by_detection(),
            **flaky,
            **self.shape_json(),
            "problems": self.problems,
            **({"watch": self.watch} if self.watch is not None else {}),
            **({"three": self.three} if self.three is not None else {}),
            **({"fanout": self.fanout} if self.fanout is not None else {}),
            **({"versions": self.versions} if self.versions is not None else {}),
            "recovery_seconds": self.recovery_seconds,
            "trials": [asdict(t) for t in self.trials],
            "write_log": self.writes,
        }

    def shape_json(self) -> dict[str, Any]:
        """``detected_by`` per trial (always), ``edge_5xx`` and the edge's counters when
        an edge ran, each drained run's wait in ``deploy`` mode."""
        out: dict[str, Any] = {
            "detected_by": [{"round": t.round, "kind": t.kind, "detected_by": t.detected_by}
                            for t in self.trials],
            "shape_problems": self.shape_problems,
        }
        if self.edge is not None:
            out["edge_5xx"] = self.edge.get("hrsp_5xx", 0)
            out["edge"] = self.edge
        waits = [t.handover_wait for t in self.trials if t.handover_wait is not None]
        if self.mode == "deploy" or waits:
            steps = [t.handover_step for t in self.trials if t.handover_step is not None]
            out["handovers"] = {
                "runs": len(waits), "wait_seconds": waits,
                "wait_p50": percentile(waits, 0.5), "wait_max": max(waits) if waits else None,
                "next_step_p50": percentile(steps, 0.5),
                "next_step_max": max(steps) if steps else None,
            }
        return out


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[rank]
