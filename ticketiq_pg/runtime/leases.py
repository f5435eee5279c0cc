"""The leases this process holds, runs' and jobs' alike: renewed in one statement a tick.

The database decides whether a lease holds (invariant I11).  The process keeps, per
lease, a *deadline* on its own monotonic clock: when it sent its last successful
renewal (or the claim) plus the TTL, less a margin.  The database's expiry is at
least that late, because the statement ran after it was sent.  Past the deadline the
process makes no call and writes nothing for that run or job (I12), even while the
database is unreachable; once a renewal says the lease is no longer held, it is lost.

A process holding a liveness token may be taken for dead, and its leases taken over,
before any lapsed; :meth:`LeaseBook.ready`, awaited just before every outside call,
then waits on the token's confirmation (the :class:`CallGate` the worker wires in).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import psycopg

from ticketiq_pg.background import Background
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.sessions import OwnSession
from ticketiq_pg.errors import LeaseLost

log = logging.getLogger(__name__)

__all__ = ["CallGate", "Held", "LeaseBook", "LeaseKeeper", "LeaseLost"]

#: Seconds before a renewal that failed is tried again on a new connection.
RETRY_AFTER = 0.25

#: Leases one renewal statement carries at most.  A statement holds its runs' rows
#: locked until it commits, and a grouped checkpoint or settlement leaves a locked run
#: out (it then goes alone and waits for the lock): 10,000 leases in one statement held
#: every run's row for 0.2 s of each 2 s renewal (bench section 8's takeover).
RENEW_CHUNK = 1000


class CallGate(Protocol):
    """What a lease book asks of the process's liveness token before an outside call."""

    def may_call(self) -> bool: ...

    async def until_may_call(
        self, check: Callable[[], None], left: Callable[[], float]
    ) -> None: ...


@dataclass
class Held:
    """One lease: whose (``key``, a run or job id), at which epoch, until when (monotonic)."""

    key: uuid.UUID
    epoch: int
    deadline: float
    lost: str | None = None


#: ``renew(leases, conn)`` sends one statement and answers ``(key, epoch, held)`` per lease.
Renew = Callable[
    [list[tuple[uuid.UUID, int]], psycopg.AsyncConnection | None],
    Awaitable[Sequence[tuple[uuid.UUID, int, bool]]],
]


class LeaseBook:
    """The leases of one kind (``what``: "run" or "job"), renewed one statement per tick."""

    def __init__(
        self,
        what: str,
        renew: Renew,
        *,
        ttl: float,
        renew_interval: float,
        margin: float,
        clock: Callable[[], float] = time.monotonic,
        conninfo: str | None = None,
        on_lost: Callable[[Held], None] | None = None,
        prepared: bool = True,
    ) -> None:
        if not 0 < renew_interval < ttl:
            raise ValueError("renew_interval must be positive and shorter than the TTL")
        if not 0 <= margin < ttl:
            raise ValueError("margin must be at least 0 and shorter than the TTL")
        self.what = what
        self._renew = renew
        self.ttl = ttl
        self.renew_interval = renew_interval
        self.margin = margin
        self.clock = clock
        self.on_lost = on_lost
        #: The leases by key; a job worker keeps its own records (subclasses of Held) here.
        self.entries: dict[uuid.UUID, Held] = {}
        #: With ``conninfo``, renewals use a connection of their own, so a burst of other
        #: work cannot starve them of a pooled connection.
        self.conninfo = conninfo
        self._session = OwnSession(conninfo, connect_timeout=renew_interval,
                                   prepared=prepared) if conninfo else None
        self._loop = Background(f"{what}-leases", self.run_forever)
        self.renewals = 0
        self.failed_renewals = 0
        #: Set by the worker to the process's liveness: calls wait while its token is unconfirmed.
        self.liveness: CallGate | None = None

    # -- bookkeeping ------------------------------------------------------

    def sent_at(self) -> float:
        """Call just before sending a statement that grants a lease."""
        return self.clock()

    def deadline(self, sent_at: float) -> float:
        return sent_at + self.ttl - self.margin

    def hold(self, key: uuid.UUID, epoch: int, sent_at: float) -> Held:
        """Record a lease granted by a statement sent at ``sent_at``; one of that epoch
        recorded already (at adoption, and renewed or found lost since) is kept as it is:
        a lost lease never comes back."""
        held = self.entries.get(key)
        if held is not None and held.epoch == epoch:
            return held
        return self.add(Held(key, epoch, self.deadline(sent_at)))

    def add(self, held: Held) -> Held:
        self.entries[held.key] = held
        return held

    def drop(self, key: uuid.UUID, epoch: int | None = None) -> None:
        """Forget the lease; with ``epoch``, only if it is still that attempt's."""
        held = self.entries.get(key)
        if held is not None and (epoch is None or held.epoch == epoch):
            del self.entries[key]

    def held(self) -> list[uuid.UUID]:
        return [key for key, held in self.entries.items() if held.lost is None]

    def epoch(self, key: uuid.UUID) -> int | None:
        held = self.entries.get(key)
        return held.epoch if held else None

    def check_held(self, held: Held) -> None:
        """Raise LeaseLost unless this attempt's lease is neither lost nor past its deadline."""
        if held.lost is not None:
            raise LeaseLost(f"lease on {self.what} {held.key} lost: {held.lost}")
        if self.clock() >= held.deadline:
            raise LeaseLost(
                f"lease on {self.what} {held.key} could have lapsed: no renewal confirmed in time"
            )

    def check(self, key: uuid.UUID, epoch: int | None = None) -> None:
        """Raise LeaseLost unless the process may still act for ``key`` (at ``epoch``).

        With ``epoch``, an attempt whose run was taken over and adopted again by this
        very process (a newer epoch) is refused too.
        """
        held = self.entries.get(key)
        if held is None:
            raise LeaseLost(f"this process holds no lease on {self.what} {key}")
        if epoch is not None and held.epoch != epoch:
            raise LeaseLost(
                f"{self.what} {key} is held at epoch {held.epoch}, not by this attempt ({epoch})"
            )
        self.check_held(held)

    def may_act(self, key: uuid.UUID, epoch: int | None = None) -> bool:
        try:
            self.check(key, epoch)
        except LeaseLost:
            return False
        return True

    async def ready_held(self, held: Held) -> None:
        """:meth:`check_held`, first waiting for a fresh liveness confirmation.

        A peer that finds this process's session ended cuts its leases to a short grace
        and then takes them over, possibly before this process noticed anything (a
        partition, a stall).  So an outside call goes only while a watch of its own,
        sent within the call window, confirmed the token held; otherwise this waits
        for the next confirmation, or for the token to be held again and the leases
        renewed, which raises LeaseLost here for a lease lost meanwhile.  The wait ends
        at the deadline at the latest (re-read each time: renewals move it).
        """
        if self.liveness is None:
            self.check_held(held)
            return
        await self.liveness.until_may_call(
            lambda: self.check_held(held), lambda: held.deadline - self.clock()
        )

    async def ready(self, key: uuid.UUID, epoch: int | None = None) -> None:
        """:meth:`check`, after a fresh liveness confirmation: await it before an outside call."""
        if self.liveness is None:
            self.check(key, epoch)
            return

        def left() -> float:
            held = self.entries.get(key)
            return (held.deadline if held else 0.0) - self.clock()

        await self.liveness.until_may_call(lambda: self.check(key, epoch), left)

    # -- renewal ----------------------------------------------------------

    async def renew_once(self) -> list[uuid.UUID]:
        """Renew every live lease, :data:`RENEW_CHUNK` a statement; return the keys found
        lost."""
        live = [held for held in self.entries.values() if held.lost is None]
        if not live:
            return []
        conn = await self._session.get() if self._session is not None else None
        lost: list[uuid.UUID] = []
        try:
            for start in range(0, len(live), RENEW_CHUNK):
                chunk = live[start:start + RENEW_CHUNK]
                sent = self.clock()
                rows = await self._renew([(held.key, held.epoch) for held in chunk], conn)
                for key, epoch, still_held in rows:
                    held = self.entries.get(key)
                    if held is None or held.epoch != epoch or held.lost is not None:
                        continue
                    if still_held:
                        held.deadline = self.deadline(sent)
                    else:
                        held.lost = "renewal refused: taken over, lapsed or finished"
                        lost.append(key)
                        if self.on_lost is not None:
                            self.on_lost(held)
        except BaseException:
            # A later chunk failed: the leases an earlier one found lost are stopped
            # already (on_lost); they are told now, the failure by the caller.
            self._say_lost(lost)
            raise
        self.renewals += 1
        return lost

    def _say_lost(self, keys: list[uuid.UUID]) -> None:
        for key in keys:
            log.warning("lease on %s %s no longer held; stopping it", self.what, key)

    async def _drop_connection(self) -> None:
        if self._session is not None:
            await self._session.drop()

    async def run_forever(self) -> None:
        while True:
            try:
                self._say_lost(await self.renew_once())
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep renewing; deadlines self-fence meanwhile
                self.failed_renewals += 1
                await self._drop_connection()
                log.exception("%s lease renewal failed; they self-fence at their deadlines",
                              self.what)
                # Try again soon on a new connection (a failover takes well under a
                # second), not a whole tick later: the deadlines keep running.
                await asyncio.sleep(min(RETRY_AFTER, self.renew_interval))
                continue
            await asyncio.sleep(self.renew_interval)

    def start(self) -> asyncio.Task[None]:
        return self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        await self._drop_connection()


class LeaseKeeper(LeaseBook):
    """The run leases of one process (``renew_leases``), on a connection of their own."""

    def __init__(
        self,
        db: TicketIQ,
        holder: str,
        *,
        ttl: float,
        renew_interval: float,
        margin: float,
        clock: Callable[[], float] = time.monotonic,
        conninfo: str | None = None,
        prepared: bool = True,
    ) -> None:
        async def renew(
            leases: list[tuple[uuid.UUID, int]], conn: psycopg.AsyncConnection | None
        ) -> list[tuple[uuid.UUID, int, bool]]:
            rows = await db.processes.renew_leases(holder, leases, self.ttl, conn=conn)
            return [(row.run_id, row.epoch, row.held) for row in rows]

        super().__init__("run", renew, ttl=ttl, renew_interval=renew_interval, margin=margin,
                         clock=clock, conninfo=conninfo, prepared=prepared)
        self.db = db
        self.holder = holder

    async def renew_once(self) -> list[uuid.UUID]:
        """Renew every live lease; without a liveness token and with none to renew, an
        empty renewal still marks the process seen (``processes.last_seen_at``): all that
        tells ``ticketiq.unrunnable_runs`` an idle live process from a SIGKILLed one."""
        if self.liveness is None and all(h.lost is not None for h in self.entries.values()):
            conn = await self._session.get() if self._session is not None else None
            await self._renew([], conn)
            return []
        return await super().renew_once()
