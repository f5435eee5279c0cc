"""Background jobs: source syncs, fine-tuning, classifier training, red-team runs.

A job is a row of ``ticketiq.jobs`` (schema version 4), queued by
``enqueue_job`` and claimed by any process's :class:`JobWorker`.  While a job
runs, its worker holds a lease on the row, fenced by epoch exactly like a
run's lease (:mod:`ticketiq_pg.runtime.leases`):

* the worker renews the leases of all its running jobs in **one statement
  per tick** (``renew_leases``, kind ``job``); a job the database says is no longer
  held is stopped at once;
* it keeps, per job, a *deadline* on its own monotonic clock (the moment the
  claim or the last successful renewal was sent, plus the TTL, less a
  margin).  Past it, the job's :class:`JobContext` refuses to checkpoint or
  finish, and :meth:`JobContext.check` tells a handler to make no further
  external call, even while the database is unreachable;
* every write of an attempt (``checkpoint_job``, ``finish_job``,
  ``fail_job``) is fenced in the database too: a worker that only stalled and
  was swept gets :class:`~ticketiq_pg.errors.Fenced` (TQ002) or
  :class:`~ticketiq_pg.errors.LeaseLapsed` (TQ003).

The leader sweeps (:meth:`JobWorker.sweep_once`, ``sweep_jobs``): a running
job whose lease lapsed is queued again with its checkpointed progress when it
is resumable (source syncs, fine-tuning: spec "Which runs survive a crash"),
and failed ``interrupted: ...`` otherwise (classifier training and red-team
runs: spec "What is not promised"); it is never run again and must be
started anew.

A handler is ``async def handler(ctx: JobContext) -> result`` (any JSON
value).  It reads ``ctx.payload`` and ``ctx.progress`` (what a lost attempt
checkpointed; empty for a fresh job), awaits ``ctx.ready()`` before each
external write and ``await ctx.checkpoint(progress)`` after each unit of
work.  ``ready()`` is ``ctx.check()`` (the lease, on the process's own
clock) plus, in a process that holds a liveness token, a fresh confirmation
that its session is still alive: a peer that found it ended may already have
given the job to another worker, before any database write of this attempt
would be refused.  A handler that raises fails the job with the error as its reason; one
that loses its lease (:class:`LeaseLost`, a
:class:`~ticketiq_pg.errors.NotOwner`) just stops: the sweep takes the job
back.

"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ticketiq_pg.background import Background, poll_forever
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.jobs import JOB_CHANNEL, ClaimedJob, JobStore, SweptJob
from ticketiq_pg.db.listener import Wakeup
from ticketiq_pg.errors import LeaseLost, NotOwner
from ticketiq_pg.runtime.leases import CallGate, Held, LeaseBook

log = logging.getLogger(__name__)

# -- the worker -----------------------------------------------------------------


@dataclass
class HeldJob(Held):
    """A job's lease, with the attempt that runs under it."""

    ending: bool = False  # the handler returned: finishing or failing it now
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def job_id(self) -> uuid.UUID:
        return self.key


Handler = Callable[["JobContext"], Awaitable[Any]]
EventSink = Callable[[str, dict[str, Any]], None]


class JobContext:
    """What a handler sees of its job: payload, progress and the fenced writes."""

    def __init__(self, worker: JobWorker, held: HeldJob, claimed: ClaimedJob) -> None:
        self._worker = worker
        self._held = held
        self.job_id = claimed.job_id
        self.kind = claimed.kind
        self.resumable = claimed.resumable
        self.payload: dict[str, Any] = dict(claimed.payload)
        #: The last progress recorded: a lost attempt's on a resumed job, else {}.
        self.progress: dict[str, Any] = dict(claimed.progress)
        self.epoch = claimed.epoch
        #: How many attempts at this job were lost before this one.
        self.attempts = claimed.attempts
        self.checkpoints = 0

    @property
    def holder(self) -> str:
        return self._worker.holder

    def check(self) -> None:
        """Raise :class:`LeaseLost` unless this attempt may still act for the job.

        Call it before every external write: past the deadline the lease may
        have lapsed, and another worker may already run the job.
        """
        self._worker.leases.check_held(self._held)

    def may_act(self) -> bool:
        """:meth:`check` as a bool."""
        try:
            self.check()
        except LeaseLost:
            return False
        return True

    async def ready(self) -> None:
        """:meth:`check`, first waiting for a fresh liveness confirmation: await it before a call.

        A peer that finds this process's session ended cuts its job leases to a short
        grace, and the sweep then queues its jobs again, possibly before this process
        noticed (:meth:`~ticketiq_pg.runtime.leases.LeaseBook.ready_held`).
        """
        await self._worker.leases.ready_held(self._held)

    async def checkpoint(self, progress: Mapping[str, Any]) -> None:
        """Record ``progress`` (a JSON object), fenced locally and in the database.

        Raises :class:`LeaseLost` without sending anything past the
        deadline, and when the database refuses (swept, taken, lapsed).
        """
        self.check()
        try:
            await self._worker.store.checkpoint(self.job_id, self.epoch, progress)
        except NotOwner as exc:
            self._held.lost = f"checkpoint refused: {exc}"
            raise LeaseLost(f"job {self.job_id}: {exc}") from exc
        self.progress = dict(progress)
        self.checkpoints += 1

    def note(self, event: str = "job_step", **fields: Any) -> None:
        """Report something to the worker's event sink (tests print it)."""
        self._worker.emit(event, job_id=str(self.job_id), kind=self.kind, **fields)


class JobWorker:
    """Claims jobs of the kinds it has handlers for, runs them, renews their leases.

    ``start()`` starts two loops: the claim loop (claims while it has room,
    then waits ``poll_interval`` seconds or for a NOTIFY on
    :data:`JOB_CHANNEL` through ``wakeup``) and the renewal loop (one
    ``renew_leases`` statement (kind ``job``) per ``renew_interval`` for all running
    jobs).  The process's leader loop calls :meth:`sweep_once`.

    ``stop()`` stops claiming, lets running jobs finish for up to
    ``drain_timeout`` seconds, then cancels the rest and stops renewing: their
    leases lapse and the sweep queues resumable jobs again from their last
    checkpoint and fails the others ``interrupted``.
    """

    def __init__(
        self,
        db: TicketIQ,
        holder: str,
        handlers: Mapping[str, Handler],
        *,
        ttl: float = 8.0,
        renew_interval: float = 2.0,
        margin: float = 1.0,
        poll_interval: float = 1.0,
        max_jobs: int = 4,
        sweep_limit: int = 1000,
        wakeup: Wakeup | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_event: EventSink | None = None,
        liveness: CallGate | None = None,
    ) -> None:
        if not handlers:
            raise ValueError("a job worker needs at least one handler")
        if max_jobs < 1:
            raise ValueError("max_jobs must be at least 1")
        if wakeup is not None and JOB_CHANNEL not in wakeup.events:
            raise ValueError(f"the wakeup must listen on {JOB_CHANNEL!r}")
        self.db = db
        self.store = JobStore(db)
        self.holder = holder
        self.handlers = dict(handlers)
        self.kinds = sorted(self.handlers)
        self.ttl = ttl
        self.renew_interval = renew_interval
        self.margin = margin
        self.poll_interval = poll_interval
        self.max_jobs = max_jobs
        self.sweep_limit = sweep_limit
        self.wakeup = wakeup if wakeup is not None else Wakeup([JOB_CHANNEL])
        self.clock = clock
        self.on_event = on_event

        async def renew(
            leases: list[tuple[uuid.UUID, int]], conn: psycopg.AsyncConnection | None
        ) -> list[tuple[uuid.UUID, int, bool]]:
            rows = await self.store.renew(self.holder, leases, self.ttl, conn=conn)
            return [(row.job_id, row.epoch, row.held) for row in rows]

        #: The job leases, in the same kind of book as the runs'.
        self.leases = LeaseBook("job", renew, ttl=ttl, renew_interval=renew_interval,
                                margin=margin, clock=clock, on_lost=self._lost)
        #: The process's liveness token, if it holds one: gates :meth:`JobContext.ready`.
        self.leases.liveness = liveness
        #: The running attempts by job id (the book's entries).
        self.jobs: dict[uuid.UUID, HeldJob] = self.leases.entries  # type: ignore[assignment]
        self.completed = 0
        self._stopping = asyncio.Event()
        self._claim_loop = Background(f"jobs:{self.holder}", lambda: poll_forever(
            "job claim", self._claim_tick, stopping=self._stopping,
            wait=lambda t: self.wakeup.wait(JOB_CHANNEL, t), interval=self.poll_interval))

    # -- events ---------------------------------------------------------------

    def emit(self, event: str, **fields: Any) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event, fields)
        except Exception:  # noqa: BLE001 - a sink must not break the worker
            log.exception("job event sink failed")

    # -- life cycle -----------------------------------------------------------

    async def start(self) -> JobWorker:
        if not self._claim_loop.running:
            self._claim_loop.start()
            self.leases.start()
        return self

    async def stop(self, *, drain_timeout: float = 10.0, loop_timeout: float = 10.0) -> None:
        """Stop claiming; wait for running jobs up to ``drain_timeout``; cancel the rest.

        The claim loop is left to finish its statement rather than cancelled
        mid-statement: a cancelled ``claim_job`` may have committed, leaving a
        job held by nobody until its lease lapses.
        """
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.wakeup.notify(JOB_CHANNEL)
        await self._claim_loop.finish(loop_timeout)
        tasks = [held.task for held in self.jobs.values() if held.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=drain_timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self.leases.stop()

    @property
    def liveness(self) -> CallGate | None:
        return self.leases.liveness

    @property
    def renewals(self) -> int:
        return self.leases.renewals

    @property
    def failed_renewals(self) -> int:
        return self.leases.failed_renewals

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # -- claiming -------------------------------------------------------------

    async def _claim_tick(self) -> None:
        await self.claim_available()

    async def claim_available(self) -> int:
        """Claim queued jobs while this worker has room; return how many.

        Not while the process's liveness token is unconfirmed: a peer that
        found its session ended cuts the lease of every job it holds, one
        claimed meanwhile too, and that would cost the job an attempt (a job
        that is not resumable, all of it) before a step ran.
        """
        claimed_count = 0
        while not self._stopping.is_set() and len(self.jobs) < self.max_jobs:
            if self.liveness is not None and not self.liveness.may_call():
                break
            sent = self.clock()
            claimed = await self.store.claim(self.holder, self.ttl, self.kinds)
            if claimed is None:
                break
            claimed_count += 1
            held = HeldJob(claimed.job_id, claimed.epoch, self.leases.deadline(sent))
            older = self.jobs.get(claimed.job_id)
            if older is not None and older.lost is None:
                # This worker claimed the job again while an older attempt of its own
                # still runs (its lease lapsed and the job was queued again): that
                # attempt is fenced now, and stops like one a renewal found lost.
                older.lost = f"claimed again at epoch {claimed.epoch}"
                if older.task is not None and not older.ending:
                    older.task.cancel()
            self.leases.add(held)
            self.emit(
                "job_claimed",
                job_id=str(claimed.job_id),
                kind=claimed.kind,
                epoch=claimed.epoch,
                attempts=claimed.attempts,
                progress=claimed.progress,
            )
            held.task = asyncio.create_task(
                self._run(held, claimed), name=f"job:{claimed.kind}:{claimed.job_id}"
            )
        return claimed_count

    # -- running a job --------------------------------------------------------

    async def _run(self, held: HeldJob, claimed: ClaimedJob) -> None:
        ctx = JobContext(self, held, claimed)
        ident = {"job_id": str(claimed.job_id), "kind": claimed.kind, "epoch": claimed.epoch}
        try:
            try:
                result = await self.handlers[claimed.kind](ctx)
            except asyncio.CancelledError:
                if held.lost is not None:
                    self.emit("job_lost", **ident, reason=held.lost)
                    return  # we cancelled it: renewal said the job is no longer ours
                self.emit("job_abandoned", **ident, progress=ctx.progress)
                raise
            except NotOwner as exc:
                held.lost = held.lost or str(exc)
                self.emit("job_lost", **ident, reason=held.lost)
                return
            except psycopg.OperationalError as exc:
                # The database, not the job, failed: leave the job to its
                # lease, so the sweep queues it again (or fails it
                # 'interrupted' when it is not resumable).
                log.warning("job %s abandoned: database unreachable: %s", claimed.job_id, exc)
                self.emit("job_abandoned", **ident, progress=ctx.progress, reason=str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - the handler's error fails the job
                reason = f"{type(exc).__name__}: {exc}"
                log.warning("job %s (%s) failed: %s", claimed.job_id, claimed.kind, reason)
                await self._end(ctx, ident, "job_failed", reason=reason)
                return
            try:
                json.dumps(result)
            except (TypeError, ValueError) as exc:
                reason = f"result is not JSON: {type(exc).__name__}: {exc}"
                await self._end(ctx, ident, "job_failed", reason=reason)
                return
            await self._end(ctx, ident, "job_completed", result=result)
        finally:
            if self.jobs.get(claimed.job_id) is held:  # not a newer attempt's
                del self.jobs[claimed.job_id]
            self.wakeup.notify(JOB_CHANNEL)  # room for another job

    async def _end(self, ctx: JobContext, ident: dict[str, Any], event: str, *,
                   result: Any = None, reason: str | None = None) -> None:
        """Finish or fail the job, fenced; a refusal means another attempt owns it."""
        held = ctx._held  # this attempt's, even if a newer one of the job runs here
        held.ending = True  # a renewal that finds it finished must not cancel this
        try:
            ctx.check()
            if event == "job_completed":
                await self.store.finish(ctx.job_id, ctx.epoch, result)
                self.completed += 1
                self.emit(event, **ident, result=result, progress=ctx.progress)
            else:
                assert reason is not None
                await self.store.fail(ctx.job_id, ctx.epoch, reason[:2000])
                self.emit(event, **ident, reason=reason)
        except NotOwner as exc:
            if held.lost is None:
                held.lost = str(exc)
            self.emit("job_lost", **ident, reason=str(exc))
        except Exception:  # noqa: BLE001 - the lease lapses and the sweep takes it back
            log.exception("recording the end of job %s failed", ctx.job_id)
            self.emit("job_end_failed", **ident)

    # -- renewal --------------------------------------------------------------

    async def renew_once(self) -> list[uuid.UUID]:
        """Renew every live job lease (a thousand a statement); stop and return the jobs lost."""
        return await self.leases.renew_once()

    @staticmethod
    def _lost(held: Held) -> None:
        assert isinstance(held, HeldJob)
        if held.task is not None and not held.ending:
            held.task.cancel()

    # -- the sweep (leader only) ----------------------------------------------

    async def sweep_once(self) -> list[SweptJob]:
        """Take back lapsed jobs: call it from the process's leader loop only."""
        swept = await self.store.sweep(self.holder, self.sweep_limit)
        for row in swept:
            log.warning(
                "swept job %s (%s): %s after %s lost attempts",
                row.job_id, row.kind, row.state, row.attempts,
            )
            self.emit(
                "job_swept", job_id=str(row.job_id), kind=row.kind, state=row.state,
                epoch=row.epoch, attempts=row.attempts, lapsed_holder=row.lapsed_holder,
            )
        return swept
