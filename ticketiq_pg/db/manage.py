"""A person's acts on runs as a whole (issue 42): the list of runs, a Stop by filter, a
restart, a fork from a step.  One method per SQL function; each row a dict."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db.transport import Transport, reason_param

#: The most rows one page of ``list_runs`` and one ``stop_runs`` hold (the SQL's bounds).
MAX_PAGE = 500
MAX_STOPS = 1000


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What ``list_runs`` and ``stop_runs`` filter on; None: any."""

    owner: str | None = None
    statuses: Sequence[str] | None = None
    kind: str | None = None
    workflow: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    ended_from: datetime | None = None
    ended_to: datetime | None = None
    failure: str | None = None


class ManageFunctions:
    """One method per SQL function of a person's acts on runs."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def list_runs(
        self, where: RunFilter = RunFilter(), *, after: tuple[datetime, uuid.UUID] | None = None,
        limit: int = 50, conn: psycopg.AsyncConnection | None = None,
    ) -> list[dict[str, Any]]:
        """``ticketiq.list_runs``: a page of runs newest first, after the keyset ``after``
        (the ``(created_at, run_id)`` of the last row of the page before)."""
        statuses = list(where.statuses) if where.statuses is not None else None
        args = (where.owner, statuses, where.kind, where.workflow, where.created_from,
                where.created_to, where.ended_from, where.ended_to, where.failure,
                after[0] if after else None, after[1] if after else None, limit)
        return await self._t.rows("list_runs", args, conn)

    async def stop_runs(
        self, actor: str, where: RunFilter, *, reason: str | None = None, limit: int = 100,
        conn: psycopg.AsyncConnection | None = None,
    ) -> list[dict[str, Any]]:
        """``ticketiq.stop_runs``: a person's Stop for every unfinished run ``where`` matches
        (oldest first, at most ``limit``); the runs asked."""
        statuses = list(where.statuses) if where.statuses is not None else None
        args = (actor, reason_param(reason), where.owner, statuses, where.kind, where.workflow,
                where.created_from, where.created_to, limit)
        return await self._t.rows("stop_runs", args, conn)

    async def restart_run(
        self, run_id: uuid.UUID, actor: str, reason: str | None = None, *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> dict[str, Any]:
        """``ticketiq.restart_run``: a failed or stopped run claimed again for the resume
        path, its losses and attempts reset, audited with ``actor`` and ``reason``."""
        return (await self._t.rows("restart_run", (run_id, actor, reason_param(reason)),
                                   conn))[0]

    async def fork_source(
        self, run_id: uuid.UUID, step: int, *, conn: psycopg.AsyncConnection | None = None,
    ) -> dict[str, Any]:
        """``ticketiq.fork_source``: the run and its checkpoints 1 to ``step``, in order."""
        return (await self._t.rows("fork_source", (run_id, step), conn))[0]

    async def fork_run(
        self, source_run_id: uuid.UUID, step: int, run_id: uuid.UUID, actor: str,
        checkpoints: list[dict[str, Any]], source_seal: str, *, reason: str | None = None,
        input: Any = None, input_given: bool = False, idempotency_key: str | None = None,
        conn: psycopg.AsyncConnection | None = None,
    ) -> dict[str, Any]:
        """``ticketiq.fork_run``: write the fork (checkpoints sealed anew for ``run_id``)."""
        args = (source_run_id, step, run_id, actor, reason_param(reason),
                Jsonb(input) if input_given else None, idempotency_key, Jsonb(checkpoints),
                source_seal)
        return (await self._t.rows("fork_run", args, conn))[0]
