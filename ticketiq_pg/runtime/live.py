"""The live half of a run's event stream: what the process running a run says as it goes.

The durable events are written by the SQL functions themselves (``ticketiq.run_events``,
see :mod:`ticketiq_pg.db.events`); this part sends the rest, which is never stored: a
step started, the model's text as it is generated (``StepRequest.on_text``), a read's
call started and settled.  They go by NOTIFY on ``ticketiq_stream``, batched (one
statement for every event of every run ready at once, text coalesced for ``interval``
seconds), and only for runs a client watches: a feed anywhere says so on
``ticketiq_watch`` every few seconds (:meth:`LiveEvents.watched_by`), and a run no one
has named for ``watch_ttl`` seconds is quiet again.  Nothing here can fail a run: a
NOTIFY that fails is logged and dropped (the client still gets every durable event, and
each step's whole text with it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from ticketiq_pg.background import Background
from ticketiq_pg.db.events import STREAM_CHANNEL, live_payload

log = logging.getLogger(__name__)

__all__ = ["LiveEvents", "Notifier"]

#: A NOTIFY payload is at most 8000 bytes: a text piece is cut below that.
MAX_PIECE_BYTES = 6000


class Notifier(Protocol):
    async def notify_many(self, channel: str, payloads: list[str]) -> None: ...


class LiveEvents:
    """Sends the live events of the runs someone watches (none without a ``notifier``).

    ``mode``: ``watched`` (default: only runs a feed named lately), ``always`` (every run;
    for a bench of the stream's cost) or ``off``.
    """

    def __init__(self, notifier: Notifier | None = None, *, mode: str = "watched",
                 interval: float = 0.05, watch_ttl: float = 15.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if mode not in ("watched", "always", "off"):
            raise ValueError(f"live events mode must be watched, always or off, not {mode!r}")
        self.notifier = notifier
        self.mode = mode if notifier is not None else "off"
        self.interval = interval
        self.watch_ttl = watch_ttl
        self.clock = clock
        self._watched: dict[uuid.UUID, float] = {}
        self._queue: list[str] = []
        # Text held, by run, then by (step, epoch): [offset of the pieces held, pieces].
        # By run first: an event flushes its own run's text only, and a send visits the
        # runs with text held, not every run's every step (at 128 runs watched, a scan of
        # every key at each event cost the engine 0.44 of its steps, bench section 19).
        self._texts: dict[uuid.UUID, dict[tuple[int, int], list[Any]]] = {}
        # When each run's held text is due (its first piece held + ``interval``, on the
        # loop's clock): a send woken by another run's event leaves it held until then,
        # so a step's pieces go in a few NOTIFYs whatever the other runs do.
        self._due: dict[uuid.UUID, float] = {}
        self._ready = asyncio.Event()
        # One pending timer: text held waits at most ``interval`` from its first piece
        # (a timer a piece sent one NOTIFY a piece while a step streamed).
        self._timer: asyncio.TimerHandle | None = None
        self._loop = Background("live-events", self._send_forever)
        #: Set while the send loop waits with nothing queued or in flight (close waits).
        self._idle = asyncio.Event()
        #: Whether any run may be watched now (mode ``always``, or a watch seen): the
        #: engine asks :meth:`watching` and builds an event only then, so a step of a
        #: process nobody watches pays one attribute read for its live events.  Kept
        #: beside ``_watched`` by :meth:`_watch` and :meth:`_unwatch`, its only writers.
        self.anyone = self.mode == "always"
        #: Events sent, statements used, sends that failed (for the bench and metrics).
        self.sent = 0
        self.statements = 0
        self.failed = 0

    # -- who watches ---------------------------------------------------------

    def watched_by(self, payload: str) -> None:
        """A feed watches the run named in ``payload`` (a ``ticketiq_watch`` notice)."""
        try:
            run_id = uuid.UUID(payload.strip())
        except ValueError:
            return
        self._watch(run_id, self.clock() + self.watch_ttl)

    def watching(self, run_id: uuid.UUID) -> bool:
        if self.mode == "always":
            return True
        if self.mode == "off":
            return False
        until = self._watched.get(run_id)
        if until is None:
            return False
        if until < self.clock():
            self._unwatch(run_id)
            return False
        return True

    def _watch(self, run_id: uuid.UUID, until: float) -> None:
        self._watched[run_id] = until
        self.anyone = self.mode != "off"

    def _unwatch(self, run_id: uuid.UUID) -> None:
        del self._watched[run_id]
        self.anyone = self.mode == "always" or bool(self._watched)

    # -- what the engine says ------------------------------------------------

    def emit(self, run_id: uuid.UUID, kind: str, step: int | None, epoch: int | None,
             body: dict[str, Any] | None = None) -> None:
        """Queue one live event of a watched run (returns at once)."""
        if not self.watching(run_id):
            return
        self._flush_texts(run_id)  # the text so far goes before what follows it
        payload = live_payload(run_id, kind, step, epoch, body or {})
        if len(payload.encode()) > MAX_PIECE_BYTES and body and "outcome" in body:
            # A large result is the run's to read (GET /runs/{id}), not a NOTIFY's.
            payload = live_payload(run_id, kind, step, epoch,
                                   {**{k: v for k, v in body.items() if k != "outcome"},
                                    "outcome_omitted": True})
        self._queue.append(payload)
        self._wake()

    def text_sink(self, run_id: uuid.UUID, step: int,
                  epoch: int) -> Callable[[str], None] | None:
        """Where the model hands step ``step``'s text (``StepRequest.on_text``); None when
        nobody watches the run (the model then need not stream)."""
        if not self.watching(run_id):
            return None
        key = (step, epoch)
        self._texts.setdefault(run_id, {})[key] = [0, []]

        def on_text(piece: str) -> None:
            if not isinstance(piece, str) or not piece:
                return
            held = self._texts.setdefault(run_id, {}).setdefault(key, [0, []])
            held[1].append(piece)
            if run_id not in self._due:
                self._due[run_id] = time.monotonic() + self.interval
            self._wake(self.interval)

        return on_text

    def text_done(self, run_id: uuid.UUID, step: int, epoch: int) -> None:
        """The step's text is all there: send what is held now, and forget the step."""
        self._flush_texts(run_id, step, epoch, forget=True)
        self._wake()

    # -- sending ---------------------------------------------------------------

    def _flush_texts(self, run_id: uuid.UUID, step: int | None = None,
                     epoch: int | None = None, *, forget: bool = False) -> None:
        steps = self._texts.get(run_id)
        if not steps:
            return
        self._due.pop(run_id, None)
        for key in [k for k in steps if step is None or k == (step, epoch)]:
            offset, pieces = steps[key]
            if pieces:
                text = "".join(pieces)
                for start in range(0, len(text), MAX_PIECE_BYTES // 4):
                    part = text[start:start + MAX_PIECE_BYTES // 4]
                    self._queue.append(live_payload(
                        run_id, "text", key[0], key[1], {"offset": offset + start, "text": part}))
                steps[key] = [offset + len(text), []]
            if forget:
                del steps[key]
        if not steps:
            del self._texts[run_id]
        elif any(held[1] for held in steps.values()):  # another step's (a takeover's)
            self._due[run_id] = time.monotonic()

    def _wake(self, after: float = 0.0) -> None:
        if self.notifier is None:
            return
        self._loop.start()
        if after <= 0:
            self._ready.set()
        elif not self._ready.is_set() and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(after, self._timed_out)

    def _timed_out(self) -> None:
        self._timer = None
        self._ready.set()

    async def _send_forever(self) -> None:
        while True:
            if not self._ready.is_set():
                self._idle.set()  # nothing queued, nothing in flight
            await self._ready.wait()
            self._idle.clear()
            self._ready.clear()
            now = time.monotonic()
            for run_id in [r for r, due in self._due.items() if due <= now + 0.001]:
                self._flush_texts(run_id)
            if self._due and self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(
                    max(0.0, min(self._due.values()) - now), self._timed_out)
            batch, self._queue = self._queue, []
            if not batch or self.notifier is None:
                continue
            try:
                await self.notifier.notify_many(STREAM_CHANNEL, batch)
                self.sent += len(batch)
                self.statements += 1
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - live events are hints: never fail a run
                self.failed += 1
                log.debug("live events not sent", exc_info=True)

    async def close(self, within: float = 2.0) -> None:
        """Send what is queued and held, then stop; at most ``within`` seconds.

        It waits for a send in flight too: stopped mid-send, the last NOTIFY was cut
        (its statement sent, its events never counted as sent; a flaky count in
        test_live_coalescing).
        """
        if self._queue or any(held[1] for steps in self._texts.values()
                              for held in steps.values()):
            self._due = dict.fromkeys(self._due, 0.0)
            self._ready.set()
            self._idle.clear()
        if self._loop.running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), within)
        await self._loop.stop()
