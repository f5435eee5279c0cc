"""Time bounds on a model step and a call, on timers shared by every run of a process.

:func:`bounded` awaits an awaitable in the caller's task and, past the bound, cancels it
and raises :class:`TimeoutError`, as ``asyncio.timeout`` does (the same cancel, uncancel
and nesting rules).  What differs is the timer.  ``asyncio.timeout`` puts a timer in the
event loop's heap for every bound: two a step (the model's, the call's), each cancelled
a moment later and left in the heap until the loop clears it, so every step paid for
pushes and pops through a heap of up to hundreds of dead timers, each comparison a call
of Python code (20.8 a step, 5.0 with this; ``bench.step_lines``).  With two smaller
trims it saved 5.5 % of the client's instructions a step at one run at once
(``bench.step_instructions``, docs/performance.md section 17).  Here a bound joins the
slot of its deadline rounded up to a grid, and one timer a slot serves every bound in it:

- a bound of :data:`COARSE` seconds or more (the default retry policies' 30 s) is kept
  to the whole second: it fires up to 1 s late;
- a shorter one to :data:`FINE` of a second: up to 50 ms late.

A bound that ends leaves its slot at no cost to the heap; a slot's timer that fires with
no bound left in it does nothing.  The slots are the running loop's (kept per thread: a
thread runs one loop at a time).
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["COARSE", "FINE", "bounded"]

T = TypeVar("T")

#: A bound this long or longer is kept to the whole second.
COARSE = 20.0
#: A shorter bound is kept to this grid (seconds).
FINE = 0.05


class _Bound:
    """One bound in its slot: the task it cancels, and whether it did."""

    __slots__ = ("cancelling", "expired", "task")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        #: The task's pending cancellations when the bound began (asyncio.timeout's rule:
        #: only a cancel of its own becomes a TimeoutError).
        self.cancelling = task.cancelling()
        self.expired = False


#: Per thread: the loop whose slots are held, and its slots (deadline -> bounds in it).
_held = threading.local()


def _slots(loop: asyncio.AbstractEventLoop) -> dict[float, set[_Bound]]:
    held = getattr(_held, "slots", None)
    if held is None or held[0] is not loop:
        # A slot's timer keeps the dict it was made for: a thread that went on to another
        # loop and came back only stops sharing slots with the bounds before.
        held = _held.slots = (loop, {})
    return held[1]


def _expire(slots: dict[float, set[_Bound]], slot: float) -> None:
    for bound in slots.pop(slot, ()):
        bound.expired = True
        bound.task.cancel()


async def bounded(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``awaitable`` within ``seconds`` (None or infinity: no bound), run in this task."""
    if seconds is None or seconds == math.inf:
        return await awaitable
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    if task is None:  # outside a task: asyncio.timeout says why nothing can be bounded
        async with asyncio.timeout(seconds):
            return await awaitable
    grid = 1.0 if seconds >= COARSE else FINE
    slot = math.ceil((loop.time() + seconds) / grid) * grid
    slots = _slots(loop)
    bounds = slots.get(slot)
    if bounds is None:
        bounds = slots[slot] = set()
        loop.call_at(slot, _expire, slots, slot)
    bound = _Bound(task)
    bounds.add(bound)
    try:
        return await awaitable
    except asyncio.CancelledError as exc:
        if bound.expired:
            bound.expired = False  # uncancelled here, not again below
            if task.uncancel() <= bound.cancelling:
                raise TimeoutError from exc
        raise
    finally:
        bounds.discard(bound)
        if bound.expired:
            # Expired, but what it awaited kept the cancel to itself and returned or
            # raised: the cancel is still taken back, as asyncio.timeout does.
            task.uncancel()
