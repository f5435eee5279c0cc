"""Kill trials: two app processes over one PostgreSQL, a victim faulted at random.

Each round starts a fresh *victim* app process (``ticketiq-pg worker`` with
the scripted app and the HTTP front) that begins a cron fire, a Teams turn
from the durable inbox, a webhook call and a generic run (``POST /runs``), every
request with the trial's own API key, each a run of a few steps (a model
think time and the step's tool calls), and a long webhook run of 30 steps or
more (its checkpoints a chain of as many links), then faults it once the round's target
kind is seen running on it, a random share of that run's length later
(:mod:`~harness.trial_timing`: every kind is the target in turn,
and always caught in flight; the others, begun with it, at random phases):

============  ============================================================
``kill``      SIGKILL
``stop``      SIGSTOP past its lease, SIGCONT after the takeover; the
              stalled process must write nothing and begin no call after the
              takeover, and a call it began before that lands after it must
              be fenced by its vendor or settled by the survivor
              (:mod:`~harness.stalled_calls`)
``backend``   ``pg_terminate_backend`` of every session of the victim
``restart``   a restart of the private PostgreSQL cluster mid-round
``failover``  SIGKILL of the primary of a private primary and synchronous
              standby pair, and promotion of the standby; the app
              processes are not restarted and reconnect through the
              multi-host URL
``watch``     SIGKILL while SSE clients watch a run of the victim stream
              its text, cut mid-step (:mod:`~harness.watch_trial`; behind
              the edge)
============  ============================================================

In ``kill`` and ``watch`` mode a round also begins a run whose steps make three
writes at once, held in flight at the vendor (:mod:`~harness.three_writes`); an
arena's ``target_kind`` times every round's fault from one kind.

The *survivor* runs the app's own recovery jobs throughout (leader sweep,
resume worker; it leaves fresh inbox entries to the victim for 2 s).  A
request cut off by the fault is retried on the survivor, as the edge in
front of the two processes would.  Every trial is judged from the database
and from the vendor service's own record:

* lost: the trial's record never reaches its end, ends failed, or a Teams
  turn ends with no reply;
* duplicate writes, counted by what landed (:mod:`~harness.landed`):
  more than one write the vendor service applied for one run and call (an
  incident, a Jira comment, a Teams reply, the reply delivering an answer), read
  from the run and call the scripted tools put in the content they send,
  whatever key each carried; the report lists every write the vendor recorded
  with its run, call and key (``Report.writes``), so anyone can recount;
* caught in flight, per kind: the trials whose run was running on the victim
  at the fault (``Trial.at_fault``), and those still open anywhere;
* recovery time: from the fault to the trial's end, for every trial caught
  in flight;
* resume time: from the fault to the resumed run's next step being written
  (its next checkpoint or its sealed answer, by the attempt that took it
  over), for every trial whose run was taken over.

The tallies are :mod:`~harness.trial_report`'s :class:`Report`.

Victims hold a liveness token (:mod:`ticketiq_pg.runtime.liveness`), so the survivor
notices a killed victim by its PostgreSQL session.  ``lease_only_rounds``
interleaves rounds whose victim holds none (``TICKETIQ_LIVENESS_INTERVAL=0``):
detected by lease expiry alone, measured in the same run for comparison.

``flaky`` (:mod:`~harness.flaky`) adds transient errors at random to
whichever fault runs: the scripted model answers 429s, 503s, timeouts and dropped
connections, the vendor service 503s, 429s, dropped connections and slow reads.
Judged besides: no run fails (a failed trial is lost, its run's failure reason
reported), and no run counts more losses than faults hit its process
(``Report.excess_losses``); the report counts the errors injected and the runs that
saw one.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.types.json import Jsonb

from harness import fanout_trial, landed, stalled_calls, three_writes, versions_trial
from harness.flaky import ENV as FLAKY_ENV
from harness.flaky import Flaky, injected_at_vendor, note_errors, vendor_faults
from harness.trial_proc import Proc
from harness.trial_report import Report, Trial
from harness.trial_shape import SHAPE_MODES, Shape
from harness.trial_timing import (
    SEEN_TIMEOUT,
    draw_script,
    draw_three_script,
    draw_workflow_script,
    script_span,
    where,
)
from harness.vendor_sim.process import VendorService
from harness.watch_trial import Watching
from ticketiq_pg.db.keys import create_api_key_sync

MODES = ("kill", "stop", "backend", "restart", "failover", "watch")
#: The modes whose rounds begin a three-writes trial too (:mod:`~harness.three_writes`):
#: the SIGKILLs, which it is built to catch with its writes in flight; and a fan-out of
#: child workflows (:mod:`~harness.fanout_trial`).
THREE_MODES = ("kill", "watch")
SEAL_KEYS = "trials:" + base64.b64encode(b"ticketiq-kill-trials-seal-key-01").decode()

class Arena:
    """The world of a trial run: a database, the vendor service, the survivor."""

    def __init__(
        self,
        db_url: str,
        workdir: Path,
        *,
        restart_cluster: Callable[[], None] | None = None,
        failover_cluster: Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
        say: Callable[[str], None] = lambda _: None,
        flaky: Flaky | None = None,
        shape: Shape | None = None,
        target_kind: str | None = None,
    ) -> None:
        self.db_url = db_url
        #: The kind every round's fault is timed from (None: each kind in turn).
        self.target_kind = target_kind
        #: watch mode: the watched runs and their SSE clients (harness.watch_trial).
        self.watching: Watching | None = None
        self.shape = shape or Shape()  # the edge, the deploy and Patroni faults
        self.flaky = flaky
        self.workdir = workdir
        self.restart_cluster = restart_cluster
        self.failover_cluster = failover_cluster
        self.extra_env = dict(env or {})
        self.say = say
        self.vendor: VendorService | None = None
        self.survivor: Proc | None = None
        self.survivor_url = ""
        self.api_key = ""
        # Trial ids are unique per arena, so a database used before (the
        # demo's embedded server keeps its data) never answers for them.
        self.tag = os.urandom(4).hex()

    # -- processes --------------------------------------------------------

    def env(self, name: str, **extra: str) -> dict[str, str]:
        assert self.vendor is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
        scheme, _, rest = self.vendor.base_url.partition("://")
        env.update(
            TICKETIQ_DATABASE_URL=self.db_url,
            TICKETIQ_SEAL_KEYS=SEAL_KEYS,
            # The vendor records who sent each request (Basic auth user).
            TICKETIQ_VENDOR_URL=f"{scheme}://{name}@{rest}",
            TICKETIQ_MODEL_LOG=str(self.workdir / "model.log"),
            PGAPPNAME=f"ticketiq-worker:{name}",
        )
        if self.flaky is not None:
            env[FLAKY_ENV] = self.flaky.env_value()
        # LIYAGENT_KILL_VENDOR_LIMITS={"jira": {"rate": 20, ...}}: the scripted tools of those
        # vendors take tokens of limits every process shares (issue 43's kill trials).
        if os.environ.get("LIYAGENT_KILL_VENDOR_LIMITS"):
            env["TICKETIQ_SCRIPT_VENDOR_LIMITS"] = os.environ["LIYAGENT_KILL_VENDOR_LIMITS"]
        env.update(self.extra_env)
        env.update(extra)
        return env

    def authed(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A request with the trial's API key (made once, in :meth:`start`)."""
        headers = {**kwargs.get("headers", {}), "Authorization": f"Bearer {self.api_key}"}
        return {**kwargs, "headers": headers}

    def spawn(self, name: str, **extra: str) -> tuple[Proc, str]:
        port = self.shape.port_for(name)
        argv = [sys.executable, "-m", "ticketiq_pg.ops.cli", "worker", "--app",
                "harness.scripted:app", "--process-id", name, "--http-port",
                str(port), "--log-level", "WARNING"]
        proc = Proc(name, argv, self.env(name, **extra), self.workdir / f"{name}.log")
        port = proc.wait_event("http")["port"]
        self.shape.spawned(name, proc, port)
        return proc, f"http://127.0.0.1:{port}"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.vendor = VendorService.start(self.workdir / "vendor")
        for fault in vendor_faults(self.flaky) if self.flaky is not None else ():
            self.vendor.fault(**fault)
        # LIYAGENT_KILL_VENDOR_DELAY=0.3: every request to a limited vendor takes that long,
        # so calls are in flight under its concurrency (counted) when the victim dies.
        delay = float(os.environ.get("LIYAGENT_KILL_VENDOR_DELAY") or 0)
        if delay > 0:
            for vendor in json.loads(os.environ.get("LIYAGENT_KILL_VENDOR_LIMITS") or "{}"):
                self.vendor.fault(vendor, "delay", seconds=delay, count=10_000_000)
        # An API key for the trial: the front refuses every request without a credential.
        self.api_key = create_api_key_sync(self.db_url, "svc:trials", run_as=["*"])
        self.survivor, self.survivor_url = self.spawn("survivor", TICKETIQ_ENTRY_CLAIM_DELAY="2")

    def close(self) -> None:
        if self.survivor is not None:
            self.survivor.stop()
        if self.vendor is not None:
            self.vendor.stop()

    # -- database ---------------------------------------------------------

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        for attempt in range(50):
            try:
                with psycopg.connect(self.db_url, autocommit=True, connect_timeout=5) as conn:
                    cur = conn.execute(sql, params)
                    return cur.fetchall() if cur.description is not None else []
            except psycopg.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.2)  # the cluster may be restarting
        return []

    # -- one round --------------------------------------------------------

    def round(self, index: int, rng: random.Random, mode: str, report: Report,
              lease_only: bool = False) -> list[Trial]:
        if self.target_kind == "versions":
            # a rolling deploy of a new workflow version, a round of its own
            return versions_trial.run_round(self, index, rng, report)
        name = f"victim-{index}"
        victim, victim_url = self.spawn(
            name, **({"TICKETIQ_LIVENESS_INTERVAL": "0"} if lease_only else {}))
        self.shape.before_round(self, mode, name)  # a deploy's new process, made ready
        up = time.time()
        trials = self._begin(index, rng, self.shape.entry_url(victim_url), mode)
        if self.watching is not None:
            trials.append(self.watching.begin(index, rng, self.shape.entry_url(victim_url),
                                              victim_url, name))
        target = self._target(trials, index)
        target.target = True
        share = rng.random()  # where in the target run's span the fault lands
        for trial in trials:
            trial.detection = "lease" if lease_only else "session"
        seen = self._seen_running(target, name)
        delay = share * script_span(target.script)
        timed = {"watch": "once its text streams", "three": "once its writes are in flight",
                 "fanout": "before, among or after its children"}
        self.say(f"round {index + 1}: {name} is up; "
                 + (f"its {target.kind} run is running, {mode} "
                    + timed.get(target.kind, f"in {delay:.1f} s") if seen
                    else f"its {target.kind} run not seen in {SEEN_TIMEOUT:g} s, {mode} now")
                 + (" (lease only)" if lease_only else ""))
        if seen and target.kind == "watch" and self.watching is not None:
            # cut mid-step, while a client sees its text stream
            if not self.watching.wait_for_text(rng):
                self.say(f"round {index + 1}: no text of the drawn step seen, {mode} now")
        elif seen and target.kind == "fanout":
            # cut before, among or after the children's steps
            if not fanout_trial.wait_phase(self.query, target, share):
                self.say(f"round {index + 1}: its children not seen, {mode} now")
        elif seen and target.kind == "three":
            # cut while the step's writes are in flight
            if not three_writes.wait_in_flight(self.query, target, name, share):
                self.say(f"round {index + 1}: its writes not seen in flight, {mode} now")
        else:
            time.sleep(max(0.0, (seen or time.time()) + delay - time.time()))
        for trial in trials:
            if trial.kind == "three":
                trial.writes_in_flight = three_writes.in_doubt(self.query, trial, name)
            if trial.kind == "fanout":
                trial.children_at_fault = fanout_trial.at_fault(self.query, trial)
        tokens = self._tokens_held(name)
        fault_at = time.time()
        at_fault = self._snapshot(trials, name)
        takeover_at = self._fault(mode, victim, name)
        for trial in trials:
            trial.kill_after = fault_at - up
            trial.at_fault = at_fault[id(trial)]
            trial.in_flight = trial.at_fault != "done"
        where_ = {"victim": "running on it", "unclaimed": "not claimed yet",
                  "survivor": "on the survivor"}
        caught = [f"{t.kind} ({where_[t.at_fault]})" for t in trials if t.in_flight]
        self.say(f"round {index + 1}: {mode} done; in flight: {', '.join(caught) or 'nothing'}")
        for trial in trials:
            if trial.retried:
                self._retry_on_survivor(trial, index)
        self._await(trials, fault_at)
        if tokens is not None:
            report.tokens_given_back.append(self._tokens_given_back(index, tokens, fault_at))
        if self.watching is not None:
            self.watching.judge(report)
        if any(t.kind == "three" for t in trials):
            report.problems.extend(three_writes.judge(self.query, trials, self.writes(),
                                                      flaky=self.flaky is not None))
        report.problems.extend(fanout_trial.judge(self.query, trials))
        for trial in trials:
            # A run the survivor held at the fault: the fault did not hit its process.
            trial.loss_allowed = int(trial.in_flight and trial.at_fault != "survivor")
        if self.flaky is not None:
            note_errors(trials, self.flaky.entries())
        if mode == "stop":
            stalled = stalled_calls.listed(self.vendor.requests() if self.vendor else [],
                                           name, takeover_at, self.query, index)
            report.stalled_calls.extend(stalled)
            report.stalled_writes += stalled_calls.counted(stalled)
        victim.stop()
        victim.signal(signal.SIGKILL)
        self.shape.after_round(self, mode, name, trials, fault_at, report)
        return trials

    def _tokens_held(self, name: str) -> dict[str, Any] | None:
        """With vendor limits on: the victim's calls counted in flight (run, epoch) and
        its runs suspended for a token, just before the fault."""
        if not os.environ.get("LIYAGENT_KILL_VENDOR_LIMITS"):
            return None
        held = self.query(
            "select c.run_id, c.epoch from ticketiq.vendor_calls as c join ticketiq.runs as r "
            "on r.run_id = c.run_id and r.epoch = c.epoch and r.status = 'running' "
            "where r.lease_holder = %s", name)
        waiting = self.query("select count(*) from ticketiq.runs where status = 'suspended' "
                             "and wait_key like 'vendor:%%'")[0][0]
        return {"held": held, "suspended": waiting}

    def _tokens_given_back(self, index: int, tokens: dict[str, Any],
                           fault_at: float) -> dict[str, Any]:
        """When each call the victim held in flight stopped counting: its run's first
        audit row at a newer epoch (claimed by the sweep, or by the session's end)."""
        seconds = []
        for run_id, epoch in tokens["held"]:
            (at,), = self.query("select extract(epoch from min(a.at)) from ticketiq.audit as a "
                                "where a.run_id = %s and a.epoch > %s", run_id, epoch)
            seconds.append(None if at is None else round(float(at) - fault_at, 2))
        return {"round": index + 1, "held": len(tokens["held"]),
                "suspended": tokens["suspended"], "given_back_after": seconds}

    def _target(self, trials: list[Trial], index: int) -> Trial:
        """The trial the round's fault is timed from: of the arena's target kind, the
        watched run in watch mode, else each kind in turn."""
        kind = self.target_kind or ("watch" if self.watching is not None else None)
        chosen = [t for t in trials if t.kind == kind]
        return chosen[0] if chosen else trials[index % len(trials)]

    def _begin(self, index: int, rng: random.Random, url: str,
               mode: str = "kill") -> list[Trial]:
        seed = rng.randrange(1 << 30)
        cron = Trial(index, "cron", "", 0.0, script={**draw_script(rng), "seed": seed})
        name = f"trial-{self.tag}-{index}"
        self.query(
            "select * from ticketiq.upsert_cron_schedule(%s, 86400, %s, 'ops', 'ops', 'cron', "
            "clock_timestamp())",
            name, Jsonb(cron.script),
        )
        cron.sender_id = name  # completed to name@fire_at once fired
        tag = f"{self.tag}-{index}"
        # The Teams turn carries its script (its seed, so its model errors repeat when
        # flaky), and its answer names its run, so the reply delivering it is counted
        # by what landed.
        teams = Trial(index, "teams", f"act-{tag}", 0.0,
                      script={**draw_script(rng), "seed": seed + 2, "mark_answer": True})
        webhook = Trial(index, "webhook", f"trials:del-{tag}", 0.0,
                        script={**draw_script(rng), "seed": seed + 1})
        run = Trial(index, "run", f"trial-run-{tag}", 0.0,
                    script={**draw_script(rng), "seed": seed + 3})
        # A long run (30 steps or more): caught in flight, it resumes from its chain.
        long = Trial(index, "long", f"trials:long-{tag}", 0.0,
                     script={**draw_script(rng, long=True), "seed": seed + 3})
        # A workflow (the scripted one: a keyed write, a loop back, a durable sleep),
        # started by the generic runs API with its kind.
        workflow = Trial(index, "workflow", f"trial-flow-{tag}", 0.0,
                         script={**draw_workflow_script(rng), "seed": seed + 4})
        # Steps of three writes made at once (keyed, with a reader, with neither), held
        # in flight at the vendor: in the SIGKILL modes.
        three = Trial(index, "three", f"trial-three-{tag}", 0.0,
                      script={**draw_three_script(rng), "seed": seed + 5})
        # A workflow starting three child workflows at once, waiting for all.
        fanout = Trial(index, "fanout", f"trial-fanout-{tag}", 0.0,
                       script={**fanout_trial.draw_script(rng), "seed": seed + 6})
        begun = [cron, teams, webhook, run, long, workflow]
        extra: list[tuple[Trial, str, dict[str, Any]]] = []
        if mode in THREE_MODES:
            assert self.vendor is not None
            three_writes.hold_writes(self.vendor, three.script, rng)
            begun.append(three)
            extra.append((three, "/runs", {"json": {"input": three.script},
                                           "headers": {"Idempotency-Key": three.sender_id}}))
            begun.append(fanout)
            extra.append((fanout, "/runs", {
                "json": {"kind": "scripted_flow", "input": fanout.script},
                "headers": {"Idempotency-Key": fanout.sender_id}}))
        for trial, path, kwargs in (
            (teams, "/teams/messages", {"json": {
                "type": "message", "id": f"act-{tag}", "conversation": {"id": f"conv-{tag}"},
                "from": {"id": "user-ops"}, "text": f"trial {index}", "script": teams.script}}),
            (webhook, "/webhooks/trials", {"json": webhook.script,
                                           "headers": {"X-Delivery-Id": f"del-{tag}"}}),
            # The generic runs API, keyed by an idempotency key the edge retries with.
            (run, "/runs", {"json": {"input": run.script},
                            "headers": {"Idempotency-Key": f"trial-run-{tag}"}}),
            (long, "/webhooks/trials", {"json": long.script,
                                        "headers": {"X-Delivery-Id": f"long-{tag}"}}),
            (workflow, "/runs", {"json": {"kind": "scripted_flow", "input": workflow.script},
                                 "headers": {"Idempotency-Key": f"trial-flow-{tag}"}}),
            *extra,
        ):
            try:
                response = httpx.post(url + path, timeout=5, **self.authed(kwargs))
                trial.http_status.append(response.status_code)
                response.raise_for_status()
            except httpx.HTTPError:
                trial.retried = True  # cut off: the edge retries on the survivor
            trial.detail = json.dumps({"path": path, **kwargs})
        return begun

    def _seen_running(self, trial: Trial, victim: str) -> float | None:
        """When the trial's run was first seen running on the victim (None: not in time)."""
        deadline = time.time() + SEEN_TIMEOUT
        while time.time() < deadline:
            if self._snapshot([trial], victim)[id(trial)] == "victim":
                return time.time()
            time.sleep(0.02)
        return None

    def _snapshot(self, trials: list[Trial], victim: str) -> dict[int, str]:
        """Where each trial is (:func:`~harness.trial_timing.where`)."""
        return where(self.query, trials, victim)

    def _retry_on_survivor(self, trial: Trial, index: int) -> None:
        request = json.loads(trial.detail)
        path = request.pop("path")
        url = self.shape.retry_url(self.survivor_url)
        for _ in range(20):
            try:
                response = httpx.post(url + path, timeout=5, **self.authed(request))
                trial.http_status.append(response.status_code)
                response.raise_for_status()
                return
            except httpx.HTTPError:
                time.sleep(0.5)

    def _entry(self, trial: Trial) -> tuple[Any, ...] | None:
        if trial.kind == "cron":
            schedule = trial.sender_id.partition("@")[0]
            rows = self.query(
                "select state, run_id, extract(epoch from finished_at), sender_id, "
                "extract(epoch from started_at) "
                "from ticketiq.entries where kind = 'cron' and sender_id like %s",
                schedule + "@%",
            )
        else:
            rows = self.query(
                "select state, run_id, extract(epoch from finished_at), sender_id, "
                "extract(epoch from started_at) "
                "from ticketiq.entries where kind = %s and sender_id = %s",
                trial.entry_kind, trial.sender_id,
            )
        return rows[0] if rows else None

    def _fault(self, mode: str, victim: Proc, name: str) -> float:
        if mode in ("kill", "watch"):
            victim.signal(signal.SIGKILL)
        elif mode == "stop":
            victim.signal(signal.SIGSTOP)
            # Past its lease: the survivor sweeps and takes its runs over.
            deadline = time.time() + 20
            while time.time() < deadline:
                held = self.query("select count(*) from ticketiq.runs where lease_holder = %s "
                                  "and status = 'running'", name)[0][0]
                if not held:
                    break
                time.sleep(0.2)
            takeover = time.time()
            time.sleep(0.5)
            victim.signal(signal.SIGCONT)
            time.sleep(2.0)  # let the stalled process try to go on
            return takeover
        elif mode == "backend":
            self.query("select pg_terminate_backend(pid) from pg_stat_activity "
                       "where application_name like %s", f"%:{name}")
        elif mode == "restart":
            if self.restart_cluster is None:
                raise RuntimeError("restart mode needs a private cluster")
            self.restart_cluster()
        elif mode == "failover":
            if self.failover_cluster is None:
                raise RuntimeError("failover mode needs a primary with a standby")
            self.failover_cluster()
        elif mode in SHAPE_MODES:
            return self.shape.fault(self, mode, victim, name)
        return time.time()

    def _await(self, trials: list[Trial], fault_at: float, timeout: float = 40.0) -> None:
        deadline = fault_at + timeout
        done: set[int] = set()
        while True:
            open_trials = []
            for trial in trials:
                if id(trial) in done:
                    continue
                entry = self._entry(trial)
                if entry is None or entry[0] in ("pending", "running"):
                    open_trials.append(trial)
                    continue
                done.add(id(trial))
                state, run_id, finished, sender_id, started = entry
                if trial.in_flight and started is not None and float(started) < fault_at:
                    trial.into_run = fault_at - float(started)
                trial.sender_id = sender_id
                trial.outcome = state
                trial.run_id = str(run_id) if run_id else None
                adopters = self.query(
                    "select actor from ticketiq.audit where run_id = %s "
                    "and event = 'agent.run.adopted' order by audit_id", run_id)
                trial.resumed_by = ", ".join(a for (a,) in adopters) or None
                losses = self.query("select loss_count, failure_reason from ticketiq.runs"
                                    " where run_id = %s", run_id)
                trial.loss_count = losses[0][0] if losses else 0
                trial.failure_reason = losses[0][1] if losses else None
                if trial.in_flight and finished is not None:
                    trial.recovery_seconds = max(0.0, float(finished) - fault_at)
                if run_id is not None:
                    self._resume_time(trial, run_id, fault_at)
            if not open_trials or time.time() > deadline:
                for trial in open_trials:
                    trial.outcome = "lost"
                    trial.detail = "never reached its end"
                break
            time.sleep(0.1)
        for trial in trials:
            if trial.kind == "teams" and trial.outcome == "answered":
                if not self._teams_replies(trial.round):
                    trial.outcome = "lost"
                    trial.detail = "the Teams turn ended with no reply"
            if trial.outcome != "lost":
                trial.detail = ""

    def _resume_time(self, trial: Trial, run_id: Any, fault_at: float) -> None:
        """Why the run was taken over, and when its next step was written after."""
        claims = self.query(
            "select epoch, coalesce(detail ->> 'reason', 'lease_lapsed') from ticketiq.audit"
            " where run_id = %s and event = 'agent.run.lease_lapsed' and at > to_timestamp(%s)"
            " order by audit_id limit 1", run_id, fault_at)
        if not claims:
            return
        epoch, trial.claimed_by = claims[0]
        ((written,),) = self.query(
            "select extract(epoch from min(t)) from ("
            " select c.written_at as t from ticketiq.checkpoints as c"
            "  where c.run_id = %s and c.epoch >= %s"
            " union all"
            " select a.sealed_at from ticketiq.answers as a where a.run_id = %s and a.epoch >= %s"
            ") as steps", run_id, epoch, run_id, epoch)
        if written is not None:
            trial.resume_seconds = max(0.0, float(written) - fault_at)

    def _teams_replies(self, index: int) -> int:
        assert self.vendor is not None
        return sum(1 for r in self.vendor.requests("teams", path_prefix=(
            f"/teams/v3/conversations/conv-{self.tag}-{index}/")) if r["method"] == "POST"
            and r["effect"] == "created")

    def writes(self) -> list[dict[str, Any]]:
        """Every write the vendor service recorded, with its run, call and key."""
        assert self.vendor is not None
        return landed.writes(self.vendor.requests())


def run_trials(
    db_url: str,
    workdir: Path,
    *,
    rounds: int,
    seed: int,
    mode: str = "kill",
    restart_cluster: Callable[[], None] | None = None,
    failover_cluster: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
    on_round: Callable[[int, list[Trial], Report], None] | None = None,
    say: Callable[[str], None] = lambda _: None,
    lease_only_rounds: int = 0,
    flaky: bool = False,
    shape: Shape | None = None,
    target_kind: str | None = None,
) -> Report:
    """``rounds`` rounds whose victim holds a liveness token, plus ``lease_only_rounds``
    whose victim does not, spread evenly among them (all judged the same way); ``flaky``
    adds transient errors at random (:mod:`~harness.flaky`)."""
    if mode not in MODES + SHAPE_MODES:
        raise ValueError(f"mode must be one of {MODES + SHAPE_MODES}")
    rng = random.Random(seed)
    report = Report(mode=mode, seed=seed, flaky=flaky)
    arena = Arena(db_url, workdir, restart_cluster=restart_cluster,
                  failover_cluster=failover_cluster, env=env, say=say,
                  flaky=Flaky(workdir / "flaky.log", seed=seed) if flaky else None, shape=shape,
                  target_kind=target_kind)
    if target_kind == "versions" and (mode != "deploy" or shape is None or shape.edge is None):
        raise ValueError("the versions trial is a deploy behind the edge: "
                         "LIYAGENT_KILL_MODE=deploy LIYAGENT_KILL_EDGE=1")
    if mode == "watch":
        if shape is None or shape.edge is None:
            raise ValueError("watch mode runs behind the edge (LIYAGENT_KILL_EDGE=1)")
        arena.watching = Watching(arena)
    arena.start()
    try:
        total = rounds + lease_only_rounds
        lease_only = {int((k + 0.5) * total / lease_only_rounds)
                      for k in range(lease_only_rounds)} if lease_only_rounds else set()
        for index in range(total):
            trials = arena.round(index, rng, mode, report, lease_only=index in lease_only)
            report.trials.extend(trials)
            report.rounds += 1
            if on_round is not None:
                on_round(index, trials, report)
        arena.shape.finish(arena, report)
        report.writes = arena.writes()
        if arena.vendor is not None:
            report.send_window = stalled_calls.send_window(arena.vendor.requests())
        report.duplicates = landed.duplicates(report.writes)
        if arena.watching is not None:
            report.watch = arena.watching.summary()
        if any(t.kind == "three" for t in report.trials):
            report.three = three_writes.summary(report.trials)
        if any(t.kind == "fanout" for t in report.trials):
            report.fanout = fanout_trial.summary(report.trials)
        if target_kind == "versions":
            report.versions = versions_trial.summary(report.trials)
        if arena.flaky is not None and arena.vendor is not None:
            report.model_errors = sum(
                1 for e in arena.flaky.entries() if e.get("source") == "model")
            report.vendor_errors = injected_at_vendor(arena.vendor.faults())
    finally:
        arena.close()
    return report
