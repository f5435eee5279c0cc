"""What every part of the step engine reads: the store, the leases, the seal, the app's parts.

The store is :class:`~ticketiq_pg.runtime.store.RunStore`, the engine's one typed interface
to the database.

The engine (:class:`~ticketiq_pg.runtime.runner.Runner`) is composed of parts that hand
a run's :class:`~ticketiq_pg.runtime.run_state.RunState` along: a decider
(:mod:`~ticketiq_pg.runtime.deciders`), the call executor
(:mod:`~ticketiq_pg.runtime.calls`), the resumer (:mod:`~ticketiq_pg.runtime.resume`)
and the ending (:mod:`~ticketiq_pg.runtime.ending`).  They share one
:class:`EngineSetup` instead of reaching into each other through ``self``: a part calls
only parts below it, and what they all need (the database, the process's leases, the
sealer, the app's model, tools and gates) is here.  It is mutable on purpose: the
observability layer wraps the model and the tools after the engine is built, and a
graceful shutdown sets :attr:`EngineSetup.draining`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.agent import Gates, Model, RunInfo, Tools
from ticketiq_pg.retries import MODEL_RETRY, TOOL_RETRY, RetryPolicy
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.live import LiveEvents
from ticketiq_pg.runtime.run_state import RunState
from ticketiq_pg.runtime.store import RunStore
from ticketiq_pg.seal import Sealer


class ResumesFirst:
    """A takeover's resumes go before the later steps of the runs already going on.

    A process that adopts a dead peer's thousands of runs must verify, settle and step
    each of them once.  The runs it already drives (its own, and those resumed earlier
    in the same takeover) would otherwise take their later steps in between, and the
    last runs adopted would wait behind all of them: in bench section 8 (10,000 runs)
    the next step came 8 s after the last adoption at the median.  While resumes are
    pending, a run about to decide a later step waits for them, at most ``max_wait``
    seconds a step (20: in bench section 8's 10,000-run takeover the last next step came
    at 16.4 s, 18.1 s with 5).  A resume awaiting its model or a vendor is not pending
    meanwhile (:meth:`ResumeTurn.pause`): nothing other runs do delays an answer from
    outside, so a slow model holds nobody.  ``max_wait`` 0 turns the order off.

    A resume that waits for others (a parent for its child runs, a call for a person's
    approval or a vendor's token) leaves the order as it starts to wait
    (:meth:`EngineSetup.poll`): the runs it waits for may be among those held, and
    holding them for it would make each of their steps wait ``max_wait`` (in the kill
    trials' lease-only round, before this, a resumed fanout parent took recoveries from
    about 10 s to 15-40 s).
    """

    __slots__ = ("_clear", "max_wait", "pending", "waited")

    def __init__(self, max_wait: float = 20.0) -> None:
        self.max_wait = max_wait
        #: Resumes adopted whose first step is not written yet.
        self.pending = 0
        #: Steps that waited for resumes (a figure for the operator).
        self.waited = 0
        self._clear = asyncio.Event()
        self._clear.set()

    def begin(self) -> ResumeTurn:
        """A resume starts: pending until its first step is written (or it ends)."""
        self.pending += 1
        self._clear.clear()
        return ResumeTurn(self)

    def _end(self) -> None:
        self.pending -= 1
        if self.pending <= 0:
            self.pending = 0
            self._clear.set()

    def _again(self) -> None:
        self.pending += 1
        self._clear.clear()

    async def turn(self) -> None:
        """Wait while resumes are pending, at most :attr:`max_wait` seconds."""
        if not self.pending or self.max_wait <= 0:
            return
        self.waited += 1
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.max_wait):
                await self._clear.wait()


class ResumeTurn:
    """One resume's place in :class:`ResumesFirst`; :meth:`end` once (again: nothing).

    Between :meth:`pause` and :meth:`unpause` (its model's answer or a vendor's awaited)
    the resume is not pending: the order puts the work of resumes first, and nothing
    other runs do delays an answer from outside.
    """

    __slots__ = ("_order", "ended", "paused")

    def __init__(self, order: ResumesFirst) -> None:
        self._order = order
        self.ended = False
        self.paused = False

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            if not self.paused:
                self._order._end()

    def pause(self) -> None:
        if not self.ended and not self.paused:
            self.paused = True
            self._order._end()

    def unpause(self) -> None:
        if self.paused:
            self.paused = False
            if not self.ended:
                self._order._again()


@dataclass(eq=False)
class EngineSetup:
    """The step engine's shared parts, set once per process (the model and tools may be
    wrapped later, :attr:`draining` is set at shutdown)."""

    #: The engine's one interface to the database (the driver, ``TicketIQ``, is one).
    db: RunStore
    leases: LeaseKeeper
    sealer: Sealer
    model: Model
    tools: Tools
    gates: Gates
    faults: FaultPoints = field(default_factory=FaultPoints)
    #: The agent loop's name, part of every agent call's step key.
    agent_loop: str = "main"
    #: How a failing model step and tool call are tried again (a tool's own wins).
    model_retry: RetryPolicy = MODEL_RETRY
    tool_retry: RetryPolicy = TOOL_RETRY
    #: Seconds between two looks at an approval or a child run being waited for.
    poll_interval: float = 0.5
    #: Losses after which a run is failed (a child taken over counts one).
    max_losses: int = 2
    #: A step's calls made at once, at most (1: one after another).
    calls_at_once: int = 8
    #: Seconds a call waits for a vendor's token holding its run's lease; past them a
    #: run that may wait suspends until its turn (TICKETIQ_VENDOR_SUSPEND_AFTER).
    vendor_suspend_after: float = 2.0
    #: A takeover's resumes before the later steps of runs already going on
    #: (TICKETIQ_RESUMES_FIRST_WAIT).
    resumes: ResumesFirst = field(default_factory=ResumesFirst)
    #: Set by the process at graceful shutdown: each run is released at its next step
    #: boundary, with the results it already has.
    draining: bool = False
    #: The live half of the runs' event streams (text as it is generated; nothing sent
    #: unless a client watches, :mod:`ticketiq_pg.runtime.live`).
    live: LiveEvents = field(default_factory=LiveEvents)
    #: Called as each step starts (the run's info, its request): the entry point's
    #: delivery shows progress (:meth:`ticketiq_pg.runtime.ending.Ending.progress`).
    #: None when no delivery shows progress: the step loop then calls nothing.
    progress: Callable[[RunInfo, Any], None] | None = None

    @property
    def holder(self) -> str:
        return self.leases.holder

    async def poll(self, state: RunState, seconds: float | None = None) -> None:
        """Wait between two looks at what the run waits for (``poll_interval``, or
        ``seconds``).  A resume that waits for others is no longer one the other runs'
        steps wait for (:class:`ResumesFirst`): what it waits for may be among them."""
        if state.resuming is not None:
            state.resuming.end()
        await asyncio.sleep(self.poll_interval if seconds is None else seconds)

    async def count_failure(self, state: RunState, step_no: int, target: str, reason: str,
                            failed: int) -> int:
        """Count one failed attempt at the model or a call; durably for a durable run (a
        crash keeps the count, ``record_attempt``)."""
        if not state.durable:
            return failed + 1
        self.leases.check(state.run_id, state.epoch)
        row = await self.db.record_attempt(state.run_id, state.epoch, step_no, target, reason)
        return row.attempts
