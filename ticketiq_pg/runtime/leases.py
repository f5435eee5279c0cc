"""A process's run leases: renewal in one statement per tick, and self-fencing.

The database decides whether a lease holds (invariant I11).  The process
keeps, per run, a *deadline* on its own monotonic clock: the moment it sent
its last successful renewal (or start/adoption) plus the TTL, less a margin.
The database's expiry is at least that late, because the statement ran after
it was sent.  Past the deadline the process makes no call and writes nothing
for that run (I12) — even while the database is unreachable — and once a
renewal says the run is no longer held, the run is stopped at once.

With a liveness token (:mod:`ticketiq_pg.runtime.liveness`), a process whose token
session dropped may have been taken for dead and its runs taken over before
any lease lapsed: :meth:`LeaseKeeper.ready`, awaited just before every
outside call, waits until the token is held again and the leases renewed.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.listener import KEEPALIVE_KWARGS
from ticketiq_pg.errors import NotOwner

if TYPE_CHECKING:
    from ticketiq_pg.runtime.liveness import Liveness

log = logging.getLogger(__name__)

#: Seconds before a renewal that failed is tried again on a new connection.
RETRY_AFTER = 0.25


class LeaseLost(NotOwner):
    """This process no longer holds the run's lease, or cannot be sure it does."""


@dataclass
class HeldLease:
    run_id: uuid.UUID
    epoch: int
    deadline: float  # monotonic seconds
    lost: str | None = None


class LeaseKeeper:
    """Renews every lease the process holds, one statement per tick."""

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
    ) -> None:
        if not 0 < renew_interval < ttl:
            raise ValueError("renew_interval must be positive and shorter than the TTL")
        self.db = db
        self.holder = holder
        self.ttl = ttl
        self.renew_interval = renew_interval
        self.margin = margin
        self.clock = clock
        self._leases: dict[uuid.UUID, HeldLease] = {}
        self._task: asyncio.Task[None] | None = None
        #: With ``conninfo``, renewals use a connection of their own, so a
        #: burst of other work cannot starve them of a pooled connection.
        self.conninfo = conninfo
        self._conn: psycopg.AsyncConnection | None = None
        self.renewals = 0
        self.failed_renewals = 0
        #: Set by :meth:`Liveness.start`: calls wait while its token is not held.
        self.liveness: Liveness | None = None

    # -- bookkeeping ------------------------------------------------------

    def sent_at(self) -> float:
        """Call just before sending a statement that grants a lease."""
        return self.clock()

    def hold(self, run_id: uuid.UUID, epoch: int, sent_at: float) -> None:
        """Record a lease granted by a statement sent at ``sent_at``."""
        self._leases[run_id] = HeldLease(run_id, epoch, sent_at + self.ttl - self.margin)

    def drop(self, run_id: uuid.UUID, epoch: int | None = None) -> None:
        """Forget the lease; with ``epoch``, only if it is still that attempt's."""
        lease = self._leases.get(run_id)
        if lease is not None and (epoch is None or lease.epoch == epoch):
            del self._leases[run_id]

    def held(self) -> list[uuid.UUID]:
        return [r for r, lease in self._leases.items() if lease.lost is None]

    def epoch(self, run_id: uuid.UUID) -> int | None:
        lease = self._leases.get(run_id)
        return lease.epoch if lease else None

    def check(self, run_id: uuid.UUID, epoch: int | None = None) -> None:
        """Raise LeaseLost unless the process may still act for this run (at ``epoch``).

        With ``epoch``, an attempt whose run was taken over and adopted
        again by this very process (a newer epoch) is refused too.
        """
        lease = self._leases.get(run_id)
        if lease is None:
            raise LeaseLost(f"this process holds no lease on run {run_id}")
        if epoch is not None and lease.epoch != epoch:
            raise LeaseLost(
                f"run {run_id} is held at epoch {lease.epoch}, not by this attempt ({epoch})"
            )
        if lease.lost is not None:
            raise LeaseLost(f"lease on run {run_id} lost: {lease.lost}")
        if self.clock() >= lease.deadline:
            raise LeaseLost(
                f"lease on run {run_id} could have lapsed: no renewal confirmed in time"
            )

    async def ready(self, run_id: uuid.UUID, epoch: int | None = None) -> None:
        """:meth:`check`, first waiting for a fresh liveness confirmation: await it before a call.

        With a liveness token, a peer that finds this process's session
        ended cuts its leases to a short grace and then takes its runs over,
        possibly before this process noticed anything (a partition, a
        stall).  So an outside call goes only while a watch of its own, sent
        within the call window, confirmed the token held
        (:meth:`Liveness.may_call`); otherwise wait for the next
        confirmation, or for the token to be held again and the leases
        renewed, which raises LeaseLost here for a run lost meanwhile.  The
        wait ends at the lease's deadline at the latest (re-read each time:
        renewals move it).
        """
        if self.liveness is None:
            self.check(run_id, epoch)
            return

        def left() -> float:
            lease = self._leases.get(run_id)
            return (lease.deadline if lease else 0.0) - self.clock()

        await self.liveness.until_may_call(lambda: self.check(run_id, epoch), left)

    def may_act(self, run_id: uuid.UUID, epoch: int | None = None) -> bool:
        try:
            self.check(run_id, epoch)
        except LeaseLost:
            return False
        return True

    # -- renewal ----------------------------------------------------------

    async def renew_once(self) -> list[uuid.UUID]:
        """Renew every live lease in one statement; return the runs found lost."""
        live = [lease for lease in self._leases.values() if lease.lost is None]
        if not live:
            return []
        conn = await self._connection()
        sent = self.clock()
        rows = await self.db.renew_leases(
            self.holder, [(lease.run_id, lease.epoch) for lease in live], self.ttl, conn=conn
        )
        self.renewals += 1
        lost: list[uuid.UUID] = []
        for row in rows:
            lease = self._leases.get(row.run_id)
            if lease is None or lease.epoch != row.epoch:
                continue
            if row.held:
                lease.deadline = sent + self.ttl - self.margin
            else:
                lease.lost = "renewal refused: taken over, lapsed or finished"
                lost.append(row.run_id)
        return lost

    async def _connection(self) -> psycopg.AsyncConnection | None:
        if self.conninfo is None:
            return None
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, connect_timeout=max(1, int(self.renew_interval)),
                **KEEPALIVE_KWARGS,
            )
        return self._conn

    async def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                await self._conn.close()
            except Exception:  # noqa: BLE001 - it is broken anyway
                pass
            self._conn = None

    async def run_forever(self) -> None:
        while True:
            try:
                lost = await self.renew_once()
                for run_id in lost:
                    log.warning("lease on run %s no longer held; stopping it", run_id)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep renewing; deadlines self-fence meanwhile
                self.failed_renewals += 1
                await self._drop_connection()
                log.exception("lease renewal failed; runs self-fence at their deadlines")
                # Try again soon on a new connection (a failover takes well under a
                # second), not a whole tick later: the deadlines keep running.
                await asyncio.sleep(min(RETRY_AFTER, self.renew_interval))
                continue
            await asyncio.sleep(self.renew_interval)

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run_forever(), name=f"leases:{self.holder}")
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        await self._drop_connection()
