"""What every agent framework's integration shares: a tool's route and the current call.

An integration's tools are classified by the app (``routes={"get_ticket": read(),
"post_comment": write(takes_key=True, dedupe_window=math.inf, read_back=...)}``); a tool
the routes do not name is :data:`UNCLASSIFIED`.  A tool finds its call's step key (its
idempotency key) with :func:`current_call`, whichever framework runs it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.agent import CallContext

__all__ = ["CALL", "UNCLASSIFIED", "Route", "current_call", "read", "write"]

#: The call a framework's tool is running for (set by the integration's invoker).
CALL: contextvars.ContextVar[CallContext] = contextvars.ContextVar("ticketiq_call")


def current_call() -> CallContext:
    """The ticketiq-pg call a framework's tool is running for: its ``step_key`` (the
    idempotency key to send), ``run``, ``step``, ``resumed``.  LookupError outside a call."""
    return CALL.get()


@dataclass(frozen=True)
class Route:
    """How a tool's call is classified and settled: ``classification`` and the
    :class:`~ticketiq_pg.Tool` route options (``takes_key``, ``dedupe_window``,
    ``read_back``, ``retry``)."""

    classification: str
    options: Mapping[str, Any] = field(default_factory=dict)


def read(**options: Any) -> Route:
    """A read: made again on resume, never marked in doubt."""
    return Route("read", options)


def write(**options: Any) -> Route:
    """A write: marked in doubt before it is sent, settled by its route on resume
    (``takes_key=True, dedupe_window=math.inf``: sent again with the same key;
    ``read_back=``: found by its reader; neither: ``unknown``, never sent again)."""
    return Route("write", options)


#: A tool the app did not classify: a write with no key and no reader (the safe side).
UNCLASSIFIED = Route("write")
