"""An app process: runs its runs, renews their leases, sweeps when leader, resumes lost runs.

One :class:`Worker` per app process.  It

* registers the process and renews all of its leases in one statement per tick
  (:class:`~ticketiq_pg.runtime.leases.LeaseKeeper`), stopping a run at once when
  renewal says it no longer holds it, and self-fencing when it cannot renew in time;
* holds its liveness token and watches its peers' (:mod:`ticketiq_pg.runtime.liveness`):
  a peer whose PostgreSQL session ended while this one's stayed up is dead,
  and its runs are claimed after a short grace (``TICKETIQ_LIVENESS_INTERVAL``;
  0 turns this off and leaves detection to lease expiry alone);
* takes part in leader election (a lease row on the database clock); the
  leader sweeps lapsed leases every ``sweep_interval`` seconds, and a
  resigning leader's NOTIFY lets a follower take over at once.  The leader
  lease is shorter than a run lease (:func:`leader_ttl`) and a follower
  wakes when the leader's lease is due, so a dead leader is replaced, and
  the follower sweeps, within one run lease period;
* LISTENs for ``ticketiq_resume`` on a dedicated connection and polls every
  ``poll_interval`` seconds (the poll is the truth), adopting claimed runs
  and continuing them through the step loop;
* runs the entry pump (:mod:`ticketiq_pg.runtime.entries`): due cron fires and
  pending inbox rows (webhooks, ticket events, Teams activities, A2A tasks,
  co-pilot turns) become runs here, woken by NOTIFY ``ticketiq_entry``;
* runs a background job worker (:mod:`ticketiq_pg.runtime.jobs`) for the app's job
  handlers (the leader also takes back lapsed jobs), and its ``services`` beside (the
  HTTP front, ``/metrics`` on a port of its own);
* once started, tunes its garbage collector for many runs (:mod:`.gc_pauses`);
* on :meth:`shutdown` (SIGTERM) stops taking work, resigns leadership (a follower
  takes over at once), releases each run at its next step boundary, and exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ticketiq_pg import observe
from ticketiq_pg.agent import AllowAll
from ticketiq_pg.background import Background, poll_forever
from ticketiq_pg.config import Settings
from ticketiq_pg.db.driver import ENTRY_CHANNEL, LEADER_CHANNEL, RESUME_CHANNEL, TicketIQ
from ticketiq_pg.db.events import WATCH_CHANNEL
from ticketiq_pg.db.jobs import JOB_CHANNEL, JobStore
from ticketiq_pg.db.listener import Listener, Wakeup
from ticketiq_pg.db.sessions import OwnSession
from ticketiq_pg.retries import MODEL_RETRY, TOOL_RETRY
from ticketiq_pg.runtime import gc_pauses
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.entries import EntryPump
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.jobs import JobWorker
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.live import LiveEvents
from ticketiq_pg.runtime.liveness import Liveness
from ticketiq_pg.runtime.runner import Runner, RunOutcome
from ticketiq_pg.runtime.setup import ResumeTurn

log = logging.getLogger(__name__)

LEADER_NAME = "sweeper"

#: A follower never waits less than this between two claims of the leader lease.
MIN_LEADER_WAIT = 0.05

#: The outcomes of ended runs a worker keeps, the newest (``Worker.ended`` counts them all).
RECENT_OUTCOMES = 1000

#: Claimed runs adopted per statement at most (``ticketiq.adopt_runs`` caps a call at 1000).
ADOPT_BATCH = 1000


def leader_ttl(settings: Settings) -> float:
    """How long the leader lease lasts: shorter than a run lease, longer than two ticks.

    The leader renews it every ``sweep_interval``; a follower claims it as soon
    as it lapses.  With the defaults (8 s run leases, 3 s sweeps) it is 6 s, so a
    killed leader is replaced and the follower sweeps within one run lease
    period of the kill.
    """
    ttl, tick = settings.lease_ttl, settings.sweep_interval
    return min(ttl, max(2 * tick, ttl - tick))


class Service(Protocol):
    """Something a worker runs beside its runs, such as the HTTP front."""

    async def start(self, worker: Worker) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class RunHandle:
    """A run started (or found) by :meth:`Worker.start_run`."""

    run_id: uuid.UUID
    task: asyncio.Task[RunOutcome] | None  # None: the run already existed

    async def outcome(self) -> RunOutcome:
        """Wait for the run to end here (``exists``: it was started before, elsewhere)."""
        if self.task is None:
            return RunOutcome(self.run_id, "exists")
        return await self.task


class Worker:
    """One app process: runs its app's runs, renews their leases, sweeps when leader, resumes.

    ``async with Worker(settings, app) as worker:`` starts it and shuts it down
    gracefully (every run released at its next step boundary) when the block ends.
    """

    def __init__(
        self,
        settings: Settings,
        app: App,
        *,
        process_id: str | None = None,
        max_runs: int | None = None,
        faults: FaultPoints | None = None,
        on_outcome: Callable[[RunOutcome], Awaitable[None] | None] | None = None,
        max_jobs: int = 4,
        services: Sequence[Service] = (),
    ) -> None:
        if not settings.database_url:
            raise ValueError("the worker needs TICKETIQ_DATABASE_URL")
        self.settings = settings
        self.app = app
        self.process_id = process_id or (
            f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        )
        #: Runs driven at once (``Settings.max_runs`` unless given); the pool is sized
        #: apart (``Settings.pool_size``): a run waiting on its model holds no connection.
        self.max_runs = max_runs if max_runs is not None else settings.max_runs
        self.faults = faults or FaultPoints.from_env()
        self.on_outcome = on_outcome
        self.db: TicketIQ | None = None
        self.leases: LeaseKeeper | None = None
        self.liveness: Liveness | None = None
        self.runner: Runner | None = None
        #: Started once the worker is up, stopped first on shutdown (the HTTP front:
        #: :class:`ticketiq_pg.front.server.FrontServer`).
        self.services = list(services)
        self.max_jobs = max_jobs
        self.pump: EntryPump | None = None
        self.jobs: JobWorker | None = None
        #: The live half of the run event streams; the runner sends through it once up.
        self.live = LiveEvents(None)
        self.wakeup = Wakeup([RESUME_CHANNEL, LEADER_CHANNEL, ENTRY_CHANNEL, JOB_CHANNEL],
                             handlers={WATCH_CHANNEL: lambda p: self.live.watched_by(p)})
        #: The process's own sessions (liveness, renewal, adoption, LISTEN) need real
        #: sessions: behind a transaction-mode pooler, their own URL.  A pooler there
        #: once answered an adoption with another statement's result (``SET``) after
        #: the adoption committed: the runs it held lapsed and were lost once more.
        own_url = settings.sessions_url or settings.database_url or ""
        own_prepared = bool(settings.sessions_url) or settings.prepared_statements
        self.listener = Listener(
            own_url,
            self.wakeup,
            application_name=f"ticketiq-listen:{self.process_id}",
        )
        self.is_leader = False
        self.leader_epoch: int | None = None
        #: The newest outcomes of runs ended here (answers and all); ``ended`` counts all.
        self.outcomes: deque[RunOutcome] = deque(maxlen=RECENT_OUTCOMES)
        self.ended: Counter[str] = Counter()
        self.swept = 0
        #: The waiting workflow runs no live process could run when this one started.
        self.unrunnable: list[Any] = []
        self._runs: dict[uuid.UUID, asyncio.Task[RunOutcome]] = {}
        self._loops: list[Background] = []
        #: Adoption's own session (lease renewal has one too): see :meth:`adopt_available`.
        self._adopt_session = OwnSession(
            own_url, name=f"ticketiq-adopt:{self.process_id}",
            connect_timeout=settings.renew_interval, prepared=own_prepared)
        self._stopping = asyncio.Event()
        self._slots = asyncio.Semaphore(self.max_runs)

    # -- life cycle -------------------------------------------------------

    async def start(self, *, listen_timeout: float = 5.0) -> Worker:
        """Connect, register, start renewing, leading and resuming.

        Returns once the LISTEN connection is up, the liveness token is held and a
        watch has seen the live peers, so that a peer that dies from then on is
        noticed by its session, not only by its lease (or after ``listen_timeout``
        seconds without one of them: the poll and the leases cover meanwhile).
        """
        s = self.settings
        assert s.database_url
        await self.app.run_startup()
        self.db = await TicketIQ.connect(
            s.database_url, min_size=2, max_size=s.pool_size,
            group_commit=s.group_commit > 0, group_size=max(2, s.group_commit),
            prepared=s.prepared_statements)
        await self.db.processes.register_process(self.process_id, socket.gethostname(), os.getpid())
        for vendor, limit in self.app.vendor_limits.items():
            # The app's limits; an operator's (ticketiq-pg limits set) stay over them.
            await self.db.set_vendor_limit(vendor, limit.rate, limit.burst, limit.concurrency,
                                           limit.per, "app")
        self.leases = LeaseKeeper(
            self.db, self.process_id, ttl=s.lease_ttl, renew_interval=s.renew_interval,
            margin=s.self_fence_margin, conninfo=s.sessions_url or s.database_url,
            prepared=bool(s.sessions_url) or s.prepared_statements)
        self.runner = Runner(
            self.db,
            self.leases,
            s.sealer(),
            self.app.model,
            self.app.tools,
            gates=self.app.gates or AllowAll(),
            agent_loop=self.app.agent_loop,
            answer_retention=s.answer_retention,
            deliver=self.app.deliver,
            deliveries=self.app.deliveries,
            faults=self.faults,
            max_losses=s.max_losses,
            poll_interval=s.poll_interval,
            model_retry=self.app.model_retry or replace(
                MODEL_RETRY, attempts=s.model_attempts, max_elapsed=s.model_retry_seconds or None),
            tool_retry=self.app.tool_retry or replace(TOOL_RETRY, attempts=s.tool_attempts),
            max_steps=self.app.max_steps or s.max_steps,
            deadline=self.app.deadline if self.app.deadline is not None else (
                s.run_deadline or None), workflows=self.app.workflows,
            calls_at_once=s.calls_at_once, vendor_suspend_after=s.vendor_suspend_after,
            resumes_first_wait=s.resumes_first_wait,
        )
        # What this code runs, said before any adoption: a run of another workflow version
        # is left to a process that runs it (a rolling deploy's old worker).
        await self.db.processes.declare_workflows(self.process_id,
                                                  self.runner.workflows.declaration())
        await self._report_unrunnable()
        self.live = LiveEvents(self.db, mode=s.live_events, interval=s.live_text_interval)
        self.runner.setup.live = self.live
        observe.attach(self)  # metrics and traces: its statements, its model's calls
        self.pump = EntryPump(
            self.db, self.runner, self.leases, self._spawn,
            crash_resume_entries=s.crash_resume_entries,
            claim_delay=s.entry_claim_delay,
            owner_limit=s.owner_max_runs or None,
        )
        self.leases.start()
        if s.liveness_interval > 0:
            self.liveness = Liveness(
                # a session of its own: behind a transaction-mode pooler, its own URL
                self.db, s.sessions_url or s.database_url, self.process_id,
                interval=s.liveness_interval,
                max_losses=s.max_losses, books=[self.leases],
                # A peer's runs claimed here: adopt them now, not at the NOTIFY.
                on_claimed=lambda _n: self.wakeup.notify(RESUME_CHANNEL),
            )
            self.leases.liveness = self.liveness
            self.liveness.start()
        self.listener.start()
        if self.app.jobs:
            self.jobs = JobWorker(
                self.db, self.process_id, self.app.jobs, ttl=s.lease_ttl,
                renew_interval=s.renew_interval, margin=s.self_fence_margin,
                poll_interval=s.poll_interval, wakeup=self.wakeup, max_jobs=self.max_jobs,
                liveness=self.liveness,
            )
            if self.liveness is not None:
                self.liveness.books.append(self.jobs.leases)  # renewed with the runs after a gap
            await self.jobs.start()
        self._loops = [
            Background("leader", lambda: poll_forever(
                "leader tick", self._lead_tick, stopping=self._stopping,
                # A resigning leader's NOTIFY wakes followers at once.
                wait=lambda t: self.wakeup.wait(LEADER_CHANNEL, t),
                interval=s.sweep_interval)),
            Background("resume", lambda: poll_forever(
                "resume poll", self._resume_tick, stopping=self._stopping,
                wait=lambda t: self.wakeup.wait(RESUME_CHANNEL, t),
                interval=s.poll_interval)),
            Background("entries", lambda: poll_forever(
                "entry pump tick", self._entries_tick, stopping=self._stopping,
                wait=lambda t: self.wakeup.wait(ENTRY_CHANNEL, t),
                interval=s.poll_interval)),
        ]
        for loop in self._loops:
            loop.start()
        try:
            await asyncio.wait_for(self.listener.connected.wait(), listen_timeout)
        except TimeoutError:
            log.warning("LISTEN connection not up after %.1fs; polling meanwhile", listen_timeout)
        if self.liveness is not None and not await self.liveness.wait_ok(listen_timeout):
            log.warning("liveness token not held after %.1fs; leases cover meanwhile",
                        listen_timeout)
        elif self.liveness is not None and not await self.liveness.wait_watching(
                listen_timeout):
            log.warning("no watch of the peers after %.1fs: a peer that dies meanwhile "
                        "is noticed by its lease", listen_timeout)
        # Services (the front) last: a process answers only once it is ready.
        for service in self.services:
            await service.start(self)
        log.info("worker %s started", self.process_id)
        gc_pauses.settle_collector()
        return self

    async def shutdown(self, *, drain_timeout: float = 30.0, loop_timeout: float = 10.0) -> None:
        """Graceful stop: release runs at their next step boundary, stop services, resign.

        The leader and resume loops are woken and left to finish what they are
        doing rather than cancelled mid-statement: a cancelled ``adopt_run``
        may have committed, leaving a run held by nobody that would only come
        back after its lease lapsed, counted as a loss.
        """
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self.runner is not None:
            self.runner.draining = True
        self.wakeup.notify_all()
        for service in reversed(self.services):
            try:
                await service.stop()
            except Exception:  # noqa: BLE001 - the runs must still be released
                log.exception("stopping %r failed", service)
        await asyncio.gather(*(loop.finish(loop_timeout) for loop in self._loops))
        # Resign first: a follower takes over at once (NOTIFY ticketiq_leader)
        # while this process drains its runs.  Resigning a lease not held is
        # a no-op, so do it even if the last tick failed to learn who leads.
        if self.db is not None:
            try:
                await self.db.processes.resign_leader(LEADER_NAME, self.process_id)
            except Exception:  # noqa: BLE001
                log.exception("resigning leadership failed")
            self.is_leader = False
        if self._runs:
            _, pending = await asyncio.wait(list(self._runs.values()), timeout=drain_timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        if self.jobs is not None:
            await self.jobs.stop(drain_timeout=drain_timeout)
        await self.live.close()
        await self.listener.stop()
        await self._adopt_session.drop()
        if self.liveness is not None:
            # A clean exit, not a death, once every run was released; before the
            # lease keeper stops, since the watch loop may renew leases.
            if self.leases is not None:
                self.leases.liveness = None
            await self.liveness.stop(release=True)
        if self.leases is not None:
            await self.leases.stop()
        if self.db is not None:
            await self.db.close()
        await self.app.run_shutdown()
        log.info("worker %s stopped", self.process_id)

    async def __aenter__(self) -> Worker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def wait_stopped(self) -> None:
        """Wait until :meth:`shutdown` has begun."""
        await self._stopping.wait()

    # -- running runs -----------------------------------------------------

    def _spawn(self, run_id: uuid.UUID, work: Awaitable[RunOutcome],
               epoch: int | None = None) -> asyncio.Task[RunOutcome]:
        async def wrapped() -> RunOutcome:
            try:
                outcome = await work
            finally:
                self._slots.release()
                if self._runs.get(run_id) is task:
                    del self._runs[run_id]
            self.outcomes.append(outcome)
            self.ended[outcome.status] += 1
            if self.on_outcome is not None:
                maybe = self.on_outcome(outcome)
                if asyncio.iscoroutine(maybe):
                    await maybe
            return outcome

        task = asyncio.create_task(wrapped(), name=f"run:{run_id}")
        # An abandoned run (logged by the runner) comes back through its lease:
        # its exception is retrieved here, not reported again at exit.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        if epoch is not None and self.leases is not None:
            # A lease held at adoption: dropped however the task ends, even cancelled
            # before its first turn (its own finally never runs then).
            leases = self.leases
            task.add_done_callback(lambda _t: leases.drop(run_id, epoch))
        self._runs[run_id] = task
        return task

    async def start_run(self, **kwargs: Any) -> RunHandle:
        """Start a run here and drive it in the background.

        A repeated idempotency key finds the existing run: the handle has no task.
        """
        if self._stopping.is_set():
            raise RuntimeError("worker is shutting down")
        assert self.runner is not None
        await self._slots.acquire()
        try:
            state = await self.runner.start(**kwargs)
        except BaseException:
            self._slots.release()
            raise
        if isinstance(state, RunOutcome):
            self._slots.release()
            return RunHandle(state.run_id, None)
        return RunHandle(state.run_id, self._spawn(state.run_id, self.runner.run(state)))

    def running(self) -> list[uuid.UUID]:
        """The runs this process is driving now."""
        return list(self._runs)

    # -- workflow versions across deploys ---------------------------------

    async def _report_unrunnable(self) -> None:
        """Log the waiting workflow runs no live process can run (``ticketiq-pg status``
        shows them too): a deploy that dropped a version they need is seen at its start,
        not when they wake."""
        assert self.db is not None
        self.unrunnable = await self.db.processes.unrunnable_runs(1000)
        by_version = Counter((r.workflow, r.workflow_version) for r in self.unrunnable)
        for (name, version), count in sorted(by_version.items()):
            first = next(r for r in self.unrunnable
                         if (r.workflow, r.workflow_version) == (name, version))
            log.warning(
                "%s waiting run(s) of workflow %s version %s: no live worker can run them "
                "(e.g. run %s, %s since %s); they wait for a worker that declares that "
                "version%s", count, name, version, first.run_id, first.status,
                first.waiting_since.isoformat(),
                f" for at most {self.settings.workflow_wait_limit:g} s "
                "(TICKETIQ_WORKFLOW_WAIT_LIMIT)" if self.settings.workflow_wait_limit else "")

    async def _fail_unrunnable(self) -> None:
        """As the leader: fail the runs that waited past the operator's limit for a worker."""
        assert self.db is not None
        limit = self.settings.workflow_wait_limit
        if limit <= 0:
            return
        for row in await self.db.processes.fail_unrunnable_runs(self.process_id, limit):
            log.warning("failed run %s: %s", row.run_id, row.reason)

    # -- leadership and the sweep -----------------------------------------

    async def _lead_tick(self) -> float:
        """Claim or renew the leader lease; as the leader, sweep.  How long to wait."""
        assert self.db is not None
        s = self.settings
        wait = s.sweep_interval
        try:
            lease = await self.db.processes.claim_leader(LEADER_NAME, self.process_id,
                                                         leader_ttl(s))
            if lease.is_leader and not self.is_leader:
                log.info("worker %s is the sweep leader (epoch %s)",
                         self.process_id, lease.epoch)
            self.is_leader = lease.is_leader
            self.leader_epoch = lease.epoch
            if lease.is_leader:
                swept = await self.db.processes.sweep_lapsed(self.process_id,
                                                             max_losses=s.max_losses)
                self.swept += len(swept)
                for row in swept:
                    log.warning("swept run %s (lost %s times, now %s)",
                                row.run_id, row.loss_count, row.status)
                await JobStore(self.db).sweep(self.process_id, max_losses=s.max_losses)
                await self._fail_unrunnable()
            elif lease.expires_at is not None:
                # Claim again as soon as the leader's lease is due, not a
                # whole tick later: a dead leader is replaced on time.
                due = (lease.expires_at - await self.db.now()).total_seconds()
                wait = min(wait, max(due, 0.0) + MIN_LEADER_WAIT)
        except Exception:
            self.is_leader = False
            raise
        return wait

    # -- the resume worker ------------------------------------------------

    async def _resume_tick(self) -> None:
        await self.adopt_available()

    def _may_take_work(self) -> bool:
        """Whether to adopt runs and claim entries now: not while the liveness token is unconfirmed.

        A peer that found this process's session ended cuts the lease of every
        run it holds, one adopted meanwhile too, and claims it again: a loss
        counted for nothing (a run lost more than ``max_losses`` times fails).
        The poll, or the next NOTIFY, tries again once the token is confirmed.
        """
        return self.liveness is None or self.liveness.may_call()

    async def adopt_available(self) -> int:
        """Adopt claimed runs while this process has room, a batch a statement; return how many.

        Up to :data:`ADOPT_BATCH` runs per ``ticketiq.adopt_runs``, so the thousand runs
        of a dead peer come back in one statement, before their resumes crowd the pool
        (bench section 8), not in a thousand queued behind them.

        On a session of its own, not behind the resumes' statements in the pool's queue:
        there the adopted leases' deadline (counted from the send) had passed on arrival,
        and 3,000 of 10,000 runs were lost again (bench section 8).

        Once a batch came back, and until the last one has, the adoption counts as a
        resume pending (:class:`~ticketiq_pg.runtime.setup.ResumesFirst`): the runs
        resumed from the first batches do not take their later steps between two batches.
        """
        assert self.db is not None and self.leases is not None and self.runner is not None
        adopted_count = 0
        adopting: ResumeTurn | None = None
        try:
            while not self._stopping.is_set():
                if not self._may_take_work() and self.liveness is not None:
                    # A busy process's token is often confirmed late: wait for the next
                    # confirmation here, not a whole poll (each poll could find it late
                    # again, and a few runs stayed claimed 10 s in bench section 8).
                    await self.liveness.wait_confirmed(self.liveness.interval * 3)
                if self._slots.locked() or not self._may_take_work():
                    break
                room = 0
                while room < ADOPT_BATCH and not self._slots.locked():
                    await self._slots.acquire()
                    room += 1
                try:
                    conn = await self._adopt_session.get()
                    sent = self.leases.sent_at()
                    adopted = await self.db.adopt_runs(
                        self.process_id, self.settings.lease_ttl, room, conn=conn
                    )
                except BaseException:
                    for _ in range(room):
                        self._slots.release()
                    if self._adopt_session.broken:
                        await self._adopt_session.drop()
                    raise
                for _ in range(room - len(adopted)):
                    self._slots.release()
                adopted_count += len(adopted)
                if adopted and adopting is None:
                    adopting = self.runner.setup.resumes.begin()
                for run in adopted:
                    # Held (so renewed) from here, not from its task's first turn: a
                    # thousand resumes start one after another.
                    self.leases.hold(run.run_id, run.epoch, sent)
                for run in adopted:
                    log.info(
                        "resuming run %s from step %s (lost %s times)",
                        run.run_id, run.last_step, run.loss_count,
                    )
                    self._spawn(run.run_id, self.runner.resume(run, sent), run.epoch)
                if len(adopted) < room:
                    break
        finally:
            if adopting is not None:
                adopting.end()
        return adopted_count

    # -- entry points -----------------------------------------------------

    async def _entries_tick(self) -> None:
        """Fire due crons and claim pending entries while this process has room."""
        assert self.pump is not None
        room = 0
        try:
            while room < 16 and not self._slots.locked() and self._may_take_work():
                await self._slots.acquire()
                room += 1
            await self.pump.tick(room)
        finally:
            # Each run the pump started holds one slot; give back the rest.
            for _ in range(max(0, room - self.pump.last_claimed)):
                self._slots.release()
