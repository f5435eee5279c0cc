"""The functions of app processes: lease renewal, the sweep, the leader, liveness, retention."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Transport


class ProcessFunctions:
    """One method per SQL function of processes: renewal, sweep, leader, liveness, retention
    (``TicketIQ.processes``)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport


    # -- processes and leadership -----------------------------------------

    async def renew_leases(
        self,
        holder: str,
        held: Sequence[tuple[uuid.UUID, int]],
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.LeaseRenewal]:
        """``ticketiq.renew_leases`` (kind ``run``): Renew every listed lease the holder still
        holds unlapsed, in one statement.
        """
        run_ids = [run_id for run_id, _ in held]
        epochs = [epoch for _, epoch in held]
        rows = await self._t.rows("renew_leases", (holder, run_ids, epochs, ttl, "run"), conn)
        return [models.LeaseRenewal(r["lease_id"], r["epoch"], r["held"], r["lease_expires_at"])
                for r in rows]


    async def sweep_lapsed(
        self,
        sweeper: str,
        *,
        max_losses: int = 2,
        limit: int = 1000,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.SweptRun]:
        """``ticketiq.sweep_lapsed``: Claim each running run whose lease lapsed exactly once (epoch
        CAS), count the loss, fail runs lost more than p_max_losses times, NOTIFY
        ticketiq_resume.
        """
        return await self._t.many(
            models.SweptRun, "sweep_lapsed", (sweeper, max_losses, limit), conn
        )


    async def register_process(
        self,
        process_id: str,
        host: str | None = None,
        os_pid: int | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.ProcessRegistration:
        """``ticketiq.register_process``: Record an app process (and its session's backend pid) as
        up.
        """
        return await self._t.one(
            models.ProcessRegistration, "register_process", (process_id, host, os_pid), conn
        )

    async def declare_workflows(
        self,
        process_id: str,
        workflows: list[dict[str, Any]],
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> int:
        """``ticketiq.declare_workflows``: Record the workflows and versions an app process can
        run (``adopt_run`` adopts only those) and each version's kind and signals.
        """
        rows = await self._t.rows("declare_workflows", (process_id, Jsonb(workflows)), conn)
        return int(rows[0]["declare_workflows"])

    async def unrunnable_runs(
        self, limit: int = 100, *, conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.UnrunnableRun]:
        """``ticketiq.unrunnable_runs``: the claimed and suspended workflow runs whose version no
        live process declared it can run, oldest waiting first."""
        return await self._t.many(models.UnrunnableRun, "unrunnable_runs", (limit,), conn)

    async def fail_unrunnable_runs(
        self, actor: str, older_than: float, limit: int = 100, *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.UnrunnableFailed]:
        """``ticketiq.fail_unrunnable_runs``: fail the claimed workflow runs no live process can
        run that waited longer than ``older_than`` seconds (the operator's limit)."""
        return await self._t.many(models.UnrunnableFailed, "fail_unrunnable_runs",
                                  (actor, older_than, limit), conn)

    async def claim_leader(
        self,
        name: str,
        holder: str,
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.LeaderLease:
        """``ticketiq.claim_leader``: Take the named leader lease when free or lapsed (epoch + 1),
        or renew it for its holder.
        """
        return await self._t.one(models.LeaderLease, "claim_leader", (name, holder, ttl), conn)


    async def renew_leader(
        self,
        name: str,
        holder: str,
        epoch: int,
        ttl: float,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> bool:
        """``ticketiq.renew_leader``: Extend the leader lease while the holder still holds it
        unlapsed at that epoch.
        """
        return bool(await self._t.scalar("renew_leader", (name, holder, epoch, ttl), conn))


    async def resign_leader(
        self, name: str, holder: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> bool:
        """``ticketiq.resign_leader``: Give up the leader lease held by p_holder and NOTIFY
        ticketiq_leader so a follower takes over at once.
        """
        return bool(await self._t.scalar("resign_leader", (name, holder), conn))


    async def hold_liveness(
        self, process_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.LivenessToken:
        """Take the liveness token on ``conn``'s session: pass a dedicated, direct connection."""
        return await self._t.one(models.LivenessToken, "hold_liveness", (process_id,), conn)


    async def release_liveness(
        self, process_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> bool:
        """``ticketiq.release_liveness``: Clean stop: mark the process stopped and release its
        liveness token (on the session holding it).
        """
        return bool(await self._t.scalar("release_liveness", (process_id,), conn))


    async def watch_processes(
        self,
        watcher: str,
        session: str | None = None,
        seen: Sequence[str] = (),
        max_losses: int = 2,
        grace: float = 0.3,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[models.WatchedProcess]:
        """Peers alive now; reaps those seen alive in this session and now dead.

        Call it on the connection that holds the watcher's own token and pass
        back the ``session`` it returned: ``seen`` is only honoured on that
        session.  A dead peer's leases are cut to ``grace`` seconds; a later
        call claims its runs once they lapsed.
        """
        return await self._t.many(
            models.WatchedProcess, "watch_processes",
            (watcher, session, list(seen), max_losses, grace), conn,
        )


    async def purge_answers(
        self, limit: int = 1000, *, conn: psycopg.AsyncConnection | None = None
    ) -> int:
        """``ticketiq.purge_answers``: Delete up to p_limit sealed answers past retain_until whose
        runs finished.
        """
        return int(await self._t.scalar("purge_answers", (limit,), conn))


    async def purge_history(
        self,
        older_than: float,
        limit: int = 1000,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> dict[str, int]:
        """Delete up to ``limit`` runs finished ``older_than`` seconds ago, with their history.

        Returns the counts per table (``runs_purged``, ``checkpoints_purged``, ...,
        ``audit_purged``); call it until every count is 0.
        """
        rows = await self._t.rows("purge_history", (older_than, limit), conn)
        return {name: int(value) for name, value in rows[0].items()}





