"""The cyclic garbage collector's pauses in a worker process, and keeping them short.

Every collection stops the event loop, and a full one (generation 2) walks every
tracked object the process holds: with thousands of runs taken over at once those
walks are most of what the runs wait on.  :class:`GcPauses` records each pause
(``gc.callbacks``); :func:`settle_collector`, called by ``Worker.start``, moves what
start-up left (modules, classes, pools) out of the collector's sight (``gc.freeze``)
and collects the young generations less often, so a takeover's runs are not scanned
again and again while they are built.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


class GcPauses:
    """Each collection's pause, per generation: how many, how long in all, the longest.

    ``clock`` is :func:`time.perf_counter` unless a test gives another.  Install with
    :meth:`start` (appends to ``gc.callbacks``); :meth:`stop` removes it.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.count = [0, 0, 0]
        self.total = [0.0, 0.0, 0.0]
        self.longest = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self.clock()
            return
        gen = int(info.get("generation", 2))
        took = self.clock() - self._started
        self.count[gen] += 1
        self.total[gen] += took
        self.longest[gen] = max(self.longest[gen], took)

    def start(self) -> GcPauses:
        if self not in gc.callbacks:
            gc.callbacks.append(self)
        return self

    def stop(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)

    def figures(self) -> dict[str, Any]:
        """Totals over every generation, and each generation's own, in seconds."""
        return {
            "pauses": sum(self.count),
            "pause_s": round(sum(self.total), 4),
            "longest_s": round(max(self.longest), 4),
            "full_collections": self.count[2],
            "by_generation": {str(g): {"pauses": self.count[g], "pause_s": round(self.total[g], 4),
                                       "longest_s": round(self.longest[g], 4)}
                              for g in range(3)},
        }


def freeze_startup() -> int:
    """Collect once, then freeze what is left: start-up's objects live as long as the process.

    Returns how many objects were frozen.  Idempotent enough to call again (what is
    frozen stays frozen; the newer objects join it).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()



#: A young collection every this many new container objects (CPython's default is 700),
#: the middle one every this many young ones (default 10).  A takeover builds its runs'
#: state a million objects at a time: at 700 each was scanned in several young and middle
#: collections and their growth set off 28 full ones, 9.4 s of pauses for 10,000 runs;
#: at these, 15 young pauses, 0.5 s in all (bench section 8, TICKETIQ_BENCH_LONG=1).
#: What it costs: cyclic garbage waits longer to be freed (up to ~100,000 objects).
YOUNG_THRESHOLD = 100_000
MIDDLE_THRESHOLD = 20

_settled = False


def settle_collector(young: int = YOUNG_THRESHOLD, middle: int = MIDDLE_THRESHOLD) -> bool:
    """Once a worker has started: freeze what start-up left, collect the young less often.

    Once per process (a second worker in it changes nothing), and only raising: an app
    that disabled the collector or set higher thresholds keeps its own.  Returns whether
    it changed anything.
    """
    global _settled
    if _settled or not gc.isenabled():
        return False
    _settled = True
    freeze_startup()
    t0, t1, t2 = gc.get_threshold()
    gc.set_threshold(max(t0, young), max(t1, middle), t2)
    return True
