"""The front's refusals, counted by reason and logged (rate-limited), so an operator sees
a forged-token storm or a misconfigured sender (docs/front.md, *Refusals*).

Every request the front refuses (401, 403, 409, 413, 422, 429) goes through
:func:`note_refusal` with a short reason (the ``reason`` column of docs/front.md):
the count of that reason goes up, and a warning is logged on the
``ticketiq_pg.front.refusals`` logger, at most one line per reason every
:data:`LOG_EVERY` seconds (that line says how many it stands for), so a flood of
refusals cannot flood the log.  :func:`refusal_counts` reads the counts: one process's,
since it started (a metrics exporter reads them from here).
"""

from __future__ import annotations

import logging
import re
import threading
import time

log = logging.getLogger(__name__)

#: Seconds between two log lines of one reason.
LOG_EVERY = 10.0
_UNSAFE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")

_lock = threading.Lock()
_counts: dict[str, int] = {}
_last_logged: dict[str, float] = {}
_unlogged: dict[str, int] = {}


def note_refusal(reason: str, detail: str = "") -> None:
    """Count one refused request under ``reason`` and log it, unless that reason was
    logged less than :data:`LOG_EVERY` seconds ago (the next line counts the skipped)."""
    now = time.monotonic()
    with _lock:
        _counts[reason] = _counts.get(reason, 0) + 1
        last = _last_logged.get(reason)
        if last is not None and now - last < LOG_EVERY:
            _unlogged[reason] = _unlogged.get(reason, 0) + 1
            return
        _last_logged[reason] = now
        skipped = _unlogged.pop(reason, 0)
    more = f" (and {skipped} more since the last line)" if skipped else ""
    # The detail may hold what a caller sent: no line breaks or lone surrogates in the log.
    shown = _UNSAFE.sub("?", detail[:200])
    log.warning("refused a request: %s%s%s", reason, f": {shown}" if shown else "", more)


def refusal_counts() -> dict[str, int]:
    """Refused requests by reason, in this process since it started (a copy)."""
    with _lock:
        return dict(_counts)
