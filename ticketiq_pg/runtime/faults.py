"""Fault points: let tests SIGKILL (or SIGSTOP) a process at an exact point.

``TICKETIQ_FAULTS`` holds comma-separated ``point@step[.n][:signal]`` items,
e.g. ``after_mark@2`` (SIGKILL this process right after the first in-doubt
mark of step 2), ``after_call@2.3`` (after the third call of step 2
returned) or ``after_checkpoint@1:STOP``.  Points, in the order a step
passes them:

``before_model``       the model is about to be asked for the step (the last
                       step's outcomes recorded, its next checkpoint not written)
``before_checkpoint``  the model answered; nothing written yet
``after_checkpoint``   the write-ahead checkpoint is committed
``after_mark``         a changing call is marked in doubt, not yet sent
``after_call``         a call returned, its outcome not yet recorded
``children_started``   a ``ctx.first``'s child runs are started (held by this process),
                       not yet in their group nor handed over
``mid_settlement``     a resume recorded the settlement of a call its last step
                       left (``@step.n``: the n-th), the others not yet settled
``after_seal``         the answer is sealed, not yet handed on
``after_deliver``      a confirmable delivery (a Teams reply) was sent, not
                       yet handed on
``after_hand_on``      the answer is handed on

Unset, every point is a no-op.  The signal is a real one, sent to the
process itself, so what follows is exactly what a crash leaves behind.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping

from ticketiq_pg.config import Environment

POINTS = (
    "before_model",
    "before_checkpoint",
    "after_checkpoint",
    "after_mark",
    "after_call",
    "children_started",
    "mid_settlement",
    "after_seal",
    "after_deliver",
    "after_hand_on",
)


class FaultPoints:
    def __init__(self, spec: str = "") -> None:
        self._armed: dict[tuple[str, int, int], signal.Signals] = {}
        self._seen: dict[tuple[str, int], int] = {}
        for item in (part.strip() for part in spec.split(",")):
            if not item:
                continue
            where, _, sig = item.partition(":")
            point, at, position = where.partition("@")
            step, _, nth = position.partition(".")
            if point not in POINTS or not at or not step.isdigit() or not (nth or "1").isdigit():
                raise ValueError(f"bad fault point {item!r}: expected point@step[.n][:SIGNAL]")
            signum = getattr(signal, f"SIG{sig or 'KILL'}", None)
            if not isinstance(signum, signal.Signals):
                raise ValueError(f"bad signal in fault point {item!r}")
            self._armed[(point, int(step), int(nth or 1))] = signum

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FaultPoints:
        env = Environment.current().values if environ is None else environ
        return cls(env.get(Environment.FAULTS, ""))

    def __bool__(self) -> bool:
        return bool(self._armed)

    def reach(self, point: str, step: int) -> None:
        if not self._armed:
            return
        nth = self._seen.get((point, step), 0) + 1
        self._seen[(point, step)] = nth
        signum = self._armed.pop((point, step, nth), None)
        if signum is not None:
            os.kill(os.getpid(), signum)
