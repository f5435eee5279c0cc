"""A Server-Sent Events client for tests and trials: a run's events as a watcher gets them.

:func:`read_events` reads ``GET /runs/{id}/events`` with ``httpx`` and parses the
stream as a browser's ``EventSource`` does (``id:``, ``event:``, ``data:`` lines, an
empty line ending each event, comments ignored), giving each event as
:class:`~ticketiq_pg.db.events.RunEvent`.  :class:`Watcher` follows one run through
reconnects, as ``EventSource`` does: after a dropped connection it connects again
(to the next URL, an edge or the other process) with the last event id it got.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from ticketiq_pg.db.events import RunEvent, RunText


def parse(lines: Iterator[str]) -> Iterator[tuple[str | None, str, str]]:
    """(id, event, data) of each event in an SSE stream's lines."""
    event_id: str | None = None
    kind = "message"
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield event_id, kind, "\n".join(data)
            event_id, kind, data = None, "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            event_id = value
        elif name == "event":
            kind = value
        elif name == "data":
            data.append(value)


def as_event(event_id: str | None, kind: str, data: str) -> RunEvent:
    raw: dict[str, Any] = json.loads(data)
    base = {"run_id", "kind", "step", "epoch", "durable", "at"}
    return RunEvent(run_id=uuid.UUID(raw["run_id"]), kind=kind, step=raw.get("step"),
                    epoch=raw.get("epoch"),
                    body={k: v for k, v in raw.items() if k not in base},
                    id=int(event_id) if event_id else None)


def read_events(url: str, run_id: str, headers: dict[str, str], *,
                last_id: int | None = None, timeout: float = 60.0,
                on_event: Callable[[RunEvent], bool] | None = None) -> Iterator[RunEvent]:
    """The run's events from ``url`` until the stream ends (or ``on_event`` says False)."""
    sent = dict(headers)
    if last_id is not None:
        sent["Last-Event-ID"] = str(last_id)
    with httpx.stream("GET", f"{url}/runs/{run_id}/events", headers=sent,
                      timeout=httpx.Timeout(timeout, connect=5.0)) as answer:
        answer.raise_for_status()
        for event_id, kind, data in parse(answer.iter_lines()):
            event = as_event(event_id, kind, data)
            yield event
            if on_event is not None and not on_event(event):
                return


@dataclass
class Watcher:
    """One client of one run, through reconnects: every event it got, the text it
    assembled, how often it connected."""

    run_id: str
    headers: dict[str, str]
    events: list[RunEvent] = field(default_factory=list)
    text: RunText = field(default_factory=RunText)
    connects: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def last_id(self) -> int | None:
        ids = [e.id for e in self.events if e.id is not None]
        return ids[-1] if ids else None

    @property
    def durable(self) -> list[RunEvent]:
        return [e for e in self.events if e.durable]

    @property
    def ended(self) -> bool:
        return any(e.ends_run for e in self.events)

    def follow(self, urls: Callable[[], str], *, deadline: float,
               stop: Callable[[RunEvent], bool] | None = None) -> None:
        """Read until the run ends, ``stop`` says so, or ``deadline`` (monotonic)
        passes; a dropped stream is read again from ``urls()`` with the last id."""
        while not self.ended and time.monotonic() < deadline:
            self.connects += 1
            try:
                for event in read_events(urls(), self.run_id, self.headers,
                                         last_id=self.last_id,
                                         timeout=max(1.0, deadline - time.monotonic())):
                    self.events.append(event)
                    self.text.add(event)
                    if stop is not None and stop(event):
                        return
            except (httpx.HTTPError, OSError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.2)
