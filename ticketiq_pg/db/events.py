"""A run's event stream, as a client reads it: durable events by id, live ones as they come.

A run's **durable** events (``started``, ``step_written``, ``call_started``,
``call_settled``, ``waiting``, ``suspended``, ``released``, ``resumed``, ``answer``,
``failed``, ``stopped``) are rows of ``ticketiq.run_events``, written by the SQL
function that makes each change, in the same statement, under the run's row lock: read
after the last id seen (``ticketiq.run_events_after``), none is missed and none comes
twice, whichever process wrote it and whichever process reads it, across crashes.

Its **live** events (``step_started``, ``text``: the model's text as it is generated, and
a read's ``call_started`` and ``call_settled``) are not stored: the process running the
run sends them by NOTIFY on :data:`STREAM_CHANNEL`, and only for runs some client
watches (a feed says so on :data:`WATCH_CHANNEL` every few seconds while it has a
watcher).  A live event has no id.  A ``text`` event carries its step, the epoch of the
attempt that streamed it and its offset in the step's text; when a process dies in the
middle of a step, the run's ``resumed`` event names the step whose text is void
(``discard``: that step, from attempts before the new epoch), and the step is asked
again.  The step's whole text is in its ``step_written`` (or ``answer``) event, so a
client that missed pieces (it reconnected) still ends with the text as written:
:class:`RunText` applies these rules.

:class:`EventFeed` is one process's reader for all its watchers: one LISTEN session, one
poll of each watched run's durable events every ``poll`` seconds (sooner when the run
shows life), and :meth:`EventFeed.subscribe` as an async iterator per watcher.
:func:`watch_run` is the same for a script or a terminal, on its own connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ticketiq_pg.background import Background
from ticketiq_pg.db.listener import Listener, Wakeup
from ticketiq_pg.errors import UnknownRun

if TYPE_CHECKING:
    from ticketiq_pg.db.driver import TicketIQ

log = logging.getLogger(__name__)

__all__ = ["DURABLE_KINDS", "ENDING_KINDS", "LIVE_KINDS", "STREAM_CHANNEL", "WATCH_CHANNEL",
           "EventFeed", "RunEvent", "RunText", "watch_run"]

#: Live events of watched runs, from the process that runs them (JSON payloads).
STREAM_CHANNEL = "ticketiq_stream"
#: "Someone watches run R": each feed says it of its runs every ``watch_every`` seconds.
WATCH_CHANNEL = "ticketiq_watch"
DURABLE_KINDS = frozenset({
    "started", "step_written", "call_started", "call_settled", "waiting", "suspended",
    "released", "resumed", "answer", "failed", "stopped",
})
LIVE_KINDS = frozenset({"step_started", "text", "text_discarded", "call_started",
                        "call_settled"})
#: After one of these the run takes no further step: a stream of it ends.
ENDING_KINDS = frozenset({"answer", "failed", "stopped"})


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One event of a run: durable (an ``id``, kept) or live (no id, never kept)."""

    run_id: uuid.UUID
    kind: str
    step: int | None
    epoch: int | None
    body: dict[str, Any] = field(default_factory=dict)
    #: The durable event's id (a client resumes after it: ``Last-Event-ID``); None: live.
    id: int | None = None
    at: datetime | None = None

    @property
    def durable(self) -> bool:
        return self.id is not None

    @property
    def ends_run(self) -> bool:
        return self.kind in ENDING_KINDS

    def data(self) -> dict[str, Any]:
        """The event as JSON (an SSE ``data:`` line): its fields, then its body's."""
        return {"run_id": str(self.run_id), "kind": self.kind, "step": self.step,
                "epoch": self.epoch, "durable": self.durable,
                "at": self.at.isoformat() if self.at else None, **self.body}

    def sse(self) -> str:
        """The event as Server-Sent Events text; a live event has no ``id:`` line, so a
        browser's ``Last-Event-ID`` stays the last durable event's."""
        head = f"id: {self.id}\n" if self.id is not None else ""
        return f"{head}event: {self.kind}\ndata: {json.dumps(self.data(), default=str)}\n\n"

    @classmethod
    def from_row(cls, run_id: uuid.UUID, row: dict[str, Any]) -> RunEvent:
        """A durable event from its row (``ticketiq.run_events_after``)."""
        return cls(run_id=run_id, kind=row["kind"], step=row["step"], epoch=row["epoch"],
                   body=row["body"] or {}, id=row["event_id"], at=row["at"])

    @classmethod
    def from_payload(cls, payload: str) -> RunEvent | None:
        """A live event from its NOTIFY payload; None for one this reader cannot read."""
        try:
            raw = json.loads(payload)
            return cls(run_id=uuid.UUID(raw["r"]), kind=str(raw["k"]), step=raw.get("s"),
                       epoch=raw.get("e"), body=dict(raw.get("b") or {}))
        except (ValueError, KeyError, TypeError):
            return None


def live_payload(run_id: uuid.UUID, kind: str, step: int | None, epoch: int | None,
                 body: dict[str, Any]) -> str:
    """The NOTIFY payload of a live event (:meth:`RunEvent.from_payload` reads it)."""
    return json.dumps({"r": str(run_id), "k": kind, "s": step, "e": epoch, "b": body},
                      separators=(",", ":"), ensure_ascii=False, default=str)


class RunText:
    """A run's text as a client assembles it from its events.

    ``text`` events add pieces at their offsets (a piece seen twice counts once); a
    ``resumed`` event voids the text of the step it names from earlier attempts; a
    ``step_written`` or ``answer`` event sets the step's text as written.  ``steps``
    maps each step to its text; :attr:`answer` is the final text once the run answered;
    :attr:`discarded` lists the (step, epoch) texts that were voided after pieces of
    them had been seen.
    """

    def __init__(self) -> None:
        self.steps: dict[int, str] = {}
        self.written: set[int] = set()
        self.answer: str | None = None
        self.discarded: list[tuple[int, int]] = []
        self._pieces: dict[tuple[int, int], dict[int, str]] = {}

    def add(self, event: RunEvent) -> None:
        """Take one event of the run into the text (others change nothing)."""
        if event.kind == "text" and event.step is not None and event.epoch is not None:
            if event.step in self.written:
                return
            pieces = self._pieces.setdefault((event.step, event.epoch), {})
            pieces[int(event.body.get("offset", 0))] = str(event.body.get("text", ""))
            self.steps[event.step] = self._joined(pieces)
        elif event.kind == "text_discarded" and event.step is not None:
            # The try that streamed it failed; the step is asked again in this attempt.
            if self._pieces.pop((event.step, event.epoch or 0), None) is not None:
                self.discarded.append((event.step, event.epoch or 0))
                self.steps.pop(event.step, None)
        elif event.kind == "resumed":
            discard = event.body.get("discard") or {}
            step, before = discard.get("step"), discard.get("epochs_before")
            for key in [k for k in self._pieces if k[0] == step and k[1] < (before or 0)]:
                self.discarded.append(key)
                del self._pieces[key]
                self.steps.pop(key[0], None)
        elif event.kind in ("step_written", "answer") and event.step is not None:
            self.written.add(event.step)
            self.steps[event.step] = str(event.body.get("text", ""))
            if event.kind == "answer":
                self.answer = self.steps[event.step]

    @staticmethod
    def _joined(pieces: dict[int, str]) -> str:
        text = ""
        for offset in sorted(pieces):
            if offset > len(text):
                break  # a gap: what follows waits for the step's written text
            text += pieces[offset][len(text) - offset:]
        return text


class _Watcher:
    """One subscription: its run, the last durable id it has, its queue."""

    def __init__(self, run_id: uuid.UUID, after: int) -> None:
        self.run_id = run_id
        self.after = after
        self.queue: asyncio.Queue[RunEvent] = asyncio.Queue(maxsize=10_000)
        self.overflowed = False

    def put(self, event: RunEvent) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            # A watcher this far behind is ended; it reconnects from its last id.
            self.overflowed = True


class _FeedHints(Wakeup):
    def __init__(self, feed: EventFeed) -> None:
        super().__init__([STREAM_CHANNEL])
        self.feed = feed

    def notify(self, channel: str, payload: str = "") -> None:
        self.feed._live(payload)

    def notify_all(self) -> None:
        self.feed._poke.set()


class EventFeed:
    """One process's reader of run events, for all its watchers.

    ``db`` reads the durable events and sends the watch notices; ``conninfo`` (a string,
    or a function that returns one) is the LISTEN session's.  Started at the first
    :meth:`subscribe`; :meth:`close` ends every subscription.
    """

    def __init__(self, db: TicketIQ, conninfo: str | Callable[[], str | None], *,
                 poll: float = 0.25, watch_every: float = 5.0,
                 application_name: str = "ticketiq-events") -> None:
        self.db = db
        self._conninfo = conninfo
        self.poll = poll
        self.watch_every = watch_every
        self.application_name = application_name
        self.watchers: dict[uuid.UUID, set[_Watcher]] = {}
        self._poke = asyncio.Event()
        self._listener: Listener | None = None
        self._loop = Background("event-feed", self._poll_forever)
        self._watch_sent = 0.0
        #: Durable events read, live events passed on (for metrics and tests).
        self.read = 0
        self.passed_live = 0

    def _start(self) -> None:
        if self._listener is None:
            conninfo = self._conninfo() if callable(self._conninfo) else self._conninfo
            if conninfo:
                self._listener = Listener(conninfo, _FeedHints(self),
                                          application_name=self.application_name)
                self._listener.start()
        self._loop.start()

    async def close(self) -> None:
        """Stop reading: every subscription ends with its run's next poll."""
        await self._loop.stop()
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None

    async def subscribe(self, run_id: uuid.UUID, after: int = 0, *,
                        pending: bool = False) -> AsyncIterator[RunEvent]:
        """The run's durable events after id ``after``, then its events as they come,
        live ones among them, until the run ends (an ``answer``, ``failed`` or
        ``stopped`` event is the last).  An unknown run raises
        :class:`~ticketiq_pg.errors.UnknownRun` at the first step, unless ``pending``
        (the caller knows it was accepted and will start): then its events are waited
        for."""
        # The first read is the caller's: an unknown run raises here, not in the loop.
        try:
            rows = await self.db.run_events_after(run_id, after)
        except UnknownRun:
            if not pending:
                raise
            rows = []
        first = [RunEvent.from_row(run_id, row) for row in rows]
        # The poll goes on from the last event read here: none comes twice.
        watcher = _Watcher(run_id, max([after, *(e.id or 0 for e in first)]))
        self.watchers.setdefault(run_id, set()).add(watcher)
        self._start()
        await self._send_watch([run_id])
        try:
            for event in first:
                yield event
                if event.ends_run:
                    return
            while True:
                event = await watcher.queue.get()
                if watcher.overflowed:
                    return
                yield event
                if event.ends_run:
                    return
        finally:
            found = self.watchers.get(run_id)
            if found is not None:
                found.discard(watcher)
                if not found:
                    del self.watchers[run_id]

    def _live(self, payload: str) -> None:
        event = RunEvent.from_payload(payload)
        if event is None:
            return
        watchers = self.watchers.get(event.run_id)
        if not watchers:
            return
        for watcher in watchers:
            watcher.put(event)
        self.passed_live += 1
        # Life in the run: its durable events may follow closely.
        self._poke.set()

    async def _poll_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), self.poll)
            self._poke.clear()
            try:
                await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the next poll tries again
                log.warning("reading run events failed", exc_info=True)
                await asyncio.sleep(self.poll)

    async def _tick(self) -> None:
        runs = list(self.watchers)
        if not runs:
            return
        if time.monotonic() - self._watch_sent >= self.watch_every:
            await self._send_watch(runs)
        for run_id in runs:
            watchers = [w for w in self.watchers.get(run_id, ()) if not w.overflowed]
            if not watchers:
                continue
            after = min(w.after for w in watchers)
            try:
                rows = await self.db.run_events_after(run_id, after)
            except UnknownRun:
                continue  # accepted, not started yet

            for row in rows:
                event = RunEvent.from_row(run_id, row)
                self.read += 1
                for watcher in watchers:
                    if event.id is not None and event.id > watcher.after:
                        watcher.after = event.id
                        watcher.put(event)
            if len(rows) >= 1000:
                self._poke.set()

    async def _send_watch(self, runs: list[uuid.UUID]) -> None:
        self._watch_sent = time.monotonic()
        try:
            await self.db.notify_many(WATCH_CHANNEL, [str(r) for r in runs])
        except Exception:  # noqa: BLE001 - a hint: durable events still come by the poll
            log.debug("watch notice failed", exc_info=True)


async def watch_run(url: str, run_id: uuid.UUID | str, after: int = 0, *,
                    poll: float = 0.25) -> AsyncIterator[RunEvent]:
    """A run's events on connections of its own (a script, a terminal): as
    :meth:`EventFeed.subscribe`, for ``url``'s database."""
    from ticketiq_pg.db.driver import TicketIQ

    run = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
    async with await TicketIQ.connect(url, min_size=1, max_size=2) as db:
        feed = EventFeed(db, url, poll=poll, application_name="ticketiq-watch")
        try:
            async for event in feed.subscribe(run, after):
                yield event
        finally:
            await feed.close()
