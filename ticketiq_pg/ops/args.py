"""Argument types of the ``ticketiq-pg`` commands (argparse ``type=`` callables).

Every duration on the command line goes through :func:`duration`, which knows the one
table of units (:data:`UNITS`); each argument type then says which forms it takes and
exits 2 with its own message for the rest.
"""

from __future__ import annotations

import argparse
import math
import uuid
from datetime import UTC, datetime, timedelta

#: Seconds per unit of a duration (``90s``, ``15m``, ``2h``, ``3d``, ``1w``).
UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}

# Longest first, so that "sec" is not read as "se" + "c".
_BY_LENGTH = sorted(UNITS, key=len, reverse=True)


def duration(text: str) -> tuple[float, bool] | None:
    """``text`` as seconds, and whether it named a unit; None when it is not a duration.

    A duration is a finite number >= 0, optionally followed by a unit of :data:`UNITS`
    (any case, spaces allowed between): ``30``, ``1.5``, ``90s``, ``15 min``, ``2H``.
    """
    raw = text.strip().lower()
    unit = next((u for u in _BY_LENGTH if raw.endswith(u)), None)
    number = raw[: -len(unit)] if unit else raw
    try:
        value = float(number)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return (value * UNITS[unit] if unit else value), unit is not None


def seconds_arg(text: str) -> float:
    """A number of seconds >= 0 (``--lapse-within``, ``--seen-within``): no unit."""
    parsed = duration(text)
    if parsed is None or parsed[1]:
        raise argparse.ArgumentTypeError(f"not a number of seconds >= 0: {text!r}")
    return parsed[0]


def age_arg(text: str) -> float:
    """``--older-than``: seconds, or a number with a unit (``90s``, ``15m``, ``2h``, ``30d``)."""
    parsed = duration(text)
    if parsed is None or not parsed[0] > 0:
        raise argparse.ArgumentTypeError(
            f"not an age > 0 (seconds, or 90s, 15m, 2h, 30d, 1w): {text!r}"
        )
    return parsed[0]


def since_arg(text: str) -> datetime | timedelta:
    """``--since``: an age (``90s``, ``15m``, ``2h``, ``3d``, ``1w``: that long before the
    database clock) or an ISO 8601 timestamp (UTC when it names no offset).

    An age needs its unit: a bare number could be an ISO 8601 basic date (``20260101``).
    """
    parsed = duration(text)
    if parsed is not None and parsed[1]:
        return timedelta(seconds=parsed[0])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (an age such as 15m, 2h, 3d, or an ISO 8601 timestamp)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def run_id_arg(text: str) -> uuid.UUID:
    """A run (or approval) id: a UUID, else argparse exits 2 with the message."""
    try:
        return uuid.UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a run id (a UUID): {text!r}") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a whole number >= 1: {text!r}")
    return value


def key_id_arg(text: str) -> str:
    """A seal key id: one word that ``TICKETIQ_SEAL_KEYS`` can carry (no ``:``, ``,``, space)."""
    key_id = text.strip()
    if not key_id or any(c in key_id for c in ":,") or any(c.isspace() for c in key_id):
        raise argparse.ArgumentTypeError(
            f"not a key id (non-empty, without ':', ',' or spaces): {text!r}"
        )
    return key_id
