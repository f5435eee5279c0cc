"""The W3C traceparent a request came with, recorded before the entry it writes.

The front's :class:`~ticketiq_pg.front.trace_header.TraceHeader` middleware sets
:data:`INCOMING` for the request; :func:`record_incoming`, awaited before each driver
statement, records it for the entry (``ticketiq.record_trace_context``) just before
``ticketiq.accept_entry`` writes it.  Every process that drives the run then makes the
run's spans children of it (:mod:`ticketiq_pg.observe.tracing`).  Imports nothing of
OpenTelemetry: a front records the header whether or not it traces itself.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Sequence
from typing import Any

#: version-traceid-spanid-flags; an all-zero trace or span id is invalid.
TRACEPARENT = re.compile(r"^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")

INCOMING: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ticketiq_traceparent", default=None)


def parse(header: str | None) -> str | None:
    """A valid traceparent header, lower-cased, or None (a bad one is ignored, as W3C says)."""
    value = (header or "").strip().lower()
    return value if TRACEPARENT.match(value) and not value.startswith("ff") else None


async def record_incoming(db: Any, function: str, args: Sequence[Any]) -> None:
    """Before an entry is accepted: the traceparent its request came with, for its run."""
    if function == "accept_entry":
        traceparent = INCOMING.get()
        if traceparent is not None:
            # accept_entry's (kind, sender id, payload, owner, ...): keyed by the owner too,
            # as the entry is, so another owner's same sender id has a context of its own.
            await db.audit.record_trace_context(str(args[0]), str(args[1]), str(args[3]),
                                                traceparent)
