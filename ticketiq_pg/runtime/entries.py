"""The entry pump: durable inbox rows become runs on whichever process claims them.

Every app process runs one.  It fires due cron schedules (each fire is one
inbox row, written once across processes) and claims pending inbox rows —
webhook and ticket-event deliveries, Teams activities, A2A tasks, co-pilot
turns — starting each one's run in the same statement
(``ticketiq.claim_entries``).  From then on the run's lease is the entry's:
if this process dies, the sweep hands the run back and another process
adopts its checkpoint; the entry's outcome is recorded when the run ends.

``TICKETIQ_CRASH_RESUME_ENTRIES=false`` writes ahead only the runs that may
wait (A2A, playground): cron, trigger, co-pilot and Teams runs are then not
checkpointed and, if lost, failed rather than resumed.

NOTIFY ``ticketiq_entry`` is a hint; the poll is the truth.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ticketiq_pg.agent import AnswerDelivery, RunInfo
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.rows import ClaimedEntry
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner, RunOutcome

log = logging.getLogger(__name__)

#: What ``ticketiq.accept_entry`` takes as a kind (TQ004 otherwise).
KIND_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class EntryKind:
    """A kind of entry: its name, whether its runs may wait, whether they are written
    ahead (None: as ``TICKETIQ_CRASH_RESUME_ENTRIES`` says), how its answer is delivered
    (None: it lands on the transcript and ``GET /runs/{id}``), and whether ``POST /runs``
    may start it (the built-in product kinds have routes of their own)."""

    name: str
    may_wait: bool = False
    written_ahead: bool | None = None
    delivery: AnswerDelivery | None = None
    via_runs_api: bool = True

    def __post_init__(self) -> None:
        if not KIND_NAME.match(self.name):
            raise ValueError(f"an entry kind is 1 to 64 of a-z 0-9 _ . - starting with a "
                             f"letter: {self.name!r}")

    def durable(self, crash_resume_entries: bool) -> bool:
        """Whether this kind's runs are written ahead under the setting."""
        return crash_resume_entries if self.written_ahead is None else self.written_ahead


#: The kinds every app has, registered as an app's own are.
BUILTIN_KINDS: tuple[EntryKind, ...] = (
    *(EntryKind(name, via_runs_api=False)
      for name in ("cron", "webhook", "ticket_event", "copilot", "teams")),
    *(EntryKind(name, may_wait=True, written_ahead=True, via_runs_api=False)
      for name in ("a2a", "playground")),
    EntryKind("run", may_wait=True, written_ahead=True),
)


def builtin_kinds() -> dict[str, EntryKind]:
    return {kind.name: kind for kind in BUILTIN_KINDS}


def durable_for(kind: str, crash_resume_entries: bool,
                kinds: dict[str, EntryKind] | None = None) -> bool:
    found = (kinds or builtin_kinds()).get(kind)
    return True if found is None else found.durable(crash_resume_entries)


class EntryPump:
    def __init__(
        self,
        db: TicketIQ,
        runner: Runner,
        leases: LeaseKeeper,
        spawn: Callable[[Any, Awaitable[RunOutcome]], object],
        *,
        crash_resume_entries: bool = True,
        fire_crons: bool = True,
        claim_delay: float = 0.0,
        owner_limit: int | None = None,
    ) -> None:
        self.db = db
        #: Runs in flight an owner may have before its next waits (None: no limit).
        self.owner_limit = owner_limit
        self.runner = runner
        self.leases = leases
        self.spawn = spawn
        self.crash_resume_entries = crash_resume_entries
        self.fire_crons = fire_crons
        self.claim_delay = claim_delay
        self.claimed = 0
        self.fired = 0
        self.timers_fired = 0
        self.last_claimed = 0

    async def tick(self, room: int) -> int:
        """Fire due crons, then claim up to ``room`` entries and start their runs."""
        self.last_claimed = 0
        if self.fire_crons:
            try:
                fires = await self.db.entries.fire_due_crons(durable=self.crash_resume_entries)
                self.fired += len(fires)
            except Exception:  # noqa: BLE001 - a failed fire must not keep the inbox waiting
                log.exception("firing due crons failed; claiming entries all the same")
            try:
                # workflow timers (an app with workflows) and vendor turns (an app with
                # limited tools): each fires once, on whichever process gets it first
                if self.runner.workflows or self.runner.vendor_turns:
                    self.timers_fired += len(await self.db.waits.fire_due_timers())
            except Exception:  # noqa: BLE001 - nor a failed timer
                log.exception("firing due workflow timers failed")
        if room < 1:
            return 0
        sent = self.leases.sent_at()
        entries = await self.db.entries.claim_entries(
            self.leases.holder, self.leases.ttl, room, min_age=self.claim_delay,
            owner_limit=self.owner_limit,
        )
        for entry in entries:
            self.leases.hold(entry.run_id, entry.epoch, sent)
            state = self.runner.fresh_state(
                self.info(entry), entry.epoch, entry.payload, entry.durable
            )
            self.spawn(entry.run_id, self.runner.run(state))
            self.last_claimed += 1
        self.claimed += len(entries)
        return len(entries)

    @staticmethod
    def info(entry: ClaimedEntry) -> RunInfo:
        return RunInfo(
            run_id=entry.run_id,
            owner=entry.owner,
            run_as=entry.run_as,
            channel=entry.channel,
            entry_point=entry.kind,
            may_wait=entry.may_wait,
            correlation_id=entry.correlation_id,
        )


def teams_delivery(teams: Any) -> AnswerDelivery:
    """Post a Teams turn's reply, with its cards, exactly once; while the run
    works, a typing activity as each step starts (best effort).

    The reply carries the delivery key in its channelData; a process that
    replaces a dead one reads the conversation back before posting.
    """

    def conversation(request: Any) -> str:
        return str(((request or {}).get("conversation") or {}).get("id") or "")

    async def send(run: RunInfo, request: Any, answer: Any, key: str) -> None:
        text = answer.get("text", "") if isinstance(answer, dict) else str(answer)
        cards = answer.get("cards") if isinstance(answer, dict) else None
        if not cards:
            cards = [{"type": "AdaptiveCard", "version": "1.5",
                      "body": [{"type": "TextBlock", "text": text, "wrap": True}]}]
        await teams.reply(conversation(request), text, cards,
                          reply_to_id=(request or {}).get("id"), key=key)

    async def read_back(run: RunInfo, request: Any, key: str) -> bool:
        return await teams.find_reply(conversation(request), key) is not None

    async def typing(run: RunInfo, request: Any) -> None:
        # In reply to the person's message: Teams shows them the bot typing.
        activity = str((request or {}).get("id") or "")
        if conversation(request) and activity:
            await teams.typing(conversation(request), activity)

    return AnswerDelivery(send=send, read_back=read_back, progress=typing)
