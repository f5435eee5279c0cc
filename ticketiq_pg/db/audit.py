"""What a person's act and a run's trace leave outside every lease: the inspector's calls
audited, a run's losses as the audit recorded them, the traceparent its entry came with."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from ticketiq_pg.db.transport import Transport, json_param


class AuditFunctions:
    """One method per SQL function that audits a person's act."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def audit_inspector_call(
        self,
        actor: str,
        run_id: uuid.UUID | None,
        tool: str,
        arguments_digest: str,
        step_key: str,
        outcome: str,
        detail: dict[str, Any] | None = None,
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> int:
        """``ticketiq.audit_inspector_call``: Audit an operator's ad hoc call of a tool
        (``inspector.call``, or ``inspector.call_sent`` before a changing call is sent)."""
        args = (actor, run_id, tool, arguments_digest, step_key, outcome,
                json_param(detail or {}))
        return int(await self._t.scalar("audit_inspector_call", args, conn))

    async def run_losses(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[dict[str, Any]]:
        """``ticketiq.run_losses``: The losses of one run, oldest first: when, the process
        that lost it, how it was detected, the loss count after it."""
        return await self._t.rows("run_losses", (run_id,), conn)

    async def record_trace_context(
        self, kind: str, sender_id: str, owner: str, traceparent: str, *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> bool:
        """``ticketiq.record_trace_context``: Record the W3C traceparent an owner's entry
        arrives with, before it is accepted; the first wins."""
        return bool(await self._t.scalar(
            "record_trace_context", (kind, sender_id, owner, traceparent), conn))

    async def run_trace_context(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> str | None:
        """``ticketiq.run_trace_context``: The W3C traceparent the run's entry arrived with,
        or None."""
        found = await self._t.scalar("run_trace_context", (run_id,), conn)
        return str(found) if found else None
