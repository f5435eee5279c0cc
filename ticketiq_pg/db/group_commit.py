"""Group commit: checkpoints of runs that step at the same moment share a statement,
and so do the settlements of runs resumed at the same moment.

A process runs many runs at once.  Each step writes its checkpoint before
any of its calls is made (invariant I5), and each write is a durable commit:
one statement, one round trip, one WAL flush.  When several runs of one
process reach that point together, :class:`CheckpointBatcher` sends their
checkpoints in one ``ticketiq.write_checkpoints`` statement, so the fixed
cost of a statement (the round trip, the executor's start, the commit and
its flush, the driver's own work) is paid once for several of them.

* **Alone, at once.**  A checkpoint written while no other is queued or in
  flight, by a process whose last checkpoint was alone too, goes straight
  out through ``ticketiq.write_checkpoint``: a lone run waits for nobody
  and pays nothing (bench section 1, one run at once).
* **Together, as soon as there are enough.**  Otherwise it queues.  As
  soon as ``group`` checkpoints are queued they go out in one statement,
  while the process steps the runs still to queue (so the server works on
  one group while the process prepares the next); whatever is left at the
  end of a pass of the event loop goes out then, so nobody waits for a
  group that does not fill.
* **Each caller gets what a lone call would have given it.**
  ``write_checkpoints`` writes what passes its checks and returns those
  rows; every other checkpoint of the statement goes through
  ``write_checkpoint`` on its own, which writes it, recognises a repeat, or
  raises the documented error (fenced, lapsed, malformed, ...).  A
  grouped statement that fails as a whole sends each of its checkpoints on
  its own too, so one bad checkpoint fails only its own caller; only a
  lost connection (after the driver's retries) fails them all, as it would
  have failed each alone.
* A caller cancelled before its checkpoint was sent is left out.

Each checkpoint is still written and durable before its caller returns, so
the step loop does not change; only the number of statements and commits
does.

:class:`ResumeBatcher` does the same for a resume's settlements
(``ticketiq.record_resume``, grouped by ``ticketiq.record_resumes``): a
process that takes over thousands of runs at once settles them together,
and each settlement is still recorded before its resumer goes on (I14).
Both are a :class:`Grouped`: the same queue for any statement with a lone
and a grouped form.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from ticketiq_pg.db import retry
from ticketiq_pg.db import rows as models

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Result = TypeVar("Result")

#: (run_id, epoch, step, body, seal, seal_key_id)
Checkpoint = tuple[uuid.UUID, int, int, Any, str, str]
#: (run_id, epoch, settlements): one ``record_resume`` of a resume's settlements
Settlements = tuple[uuid.UUID, int, Sequence[dict[str, Any]]]

#: Checkpoints a statement carries at most.  Side by side in one process
#: (``scripts/compare_group_sizes.py``), 16 stepped x1.4 as fast as 4 with 32 runs at
#: once and x1.7 to x2.0 with 128, at about 150 instead of 210 us of client CPU a step;
#: 1 and 8 at once never fill a group of 4 for long, and a lone checkpoint goes alone.
DEFAULT_GROUP = 16


class _Writes(Protocol):
    """The driver methods the batchers send (the driver itself)."""

    async def write_checkpoint_alone(
        self, run_id: uuid.UUID, epoch: int, step: int, body: Any, seal: str, seal_key_id: str
    ) -> models.CheckpointWritten: ...

    async def write_checkpoints(
        self, checkpoints: Sequence[Checkpoint]
    ) -> dict[int, models.CheckpointWritten]: ...

    async def record_resume_alone(
        self, run_id: uuid.UUID, epoch: int, settlements: Sequence[dict[str, Any]] = ()
    ) -> models.ResumeAudited: ...

    async def record_resumes(
        self, items: Sequence[Settlements]
    ) -> dict[int, models.ResumeAudited]: ...


class Grouped(Generic[Item, Result]):
    """Sends the items one kind of statement takes, grouped: ``alone`` takes one,
    ``together`` several and answers those it did by their index."""

    def __init__(
        self,
        alone: Callable[[Item], Awaitable[Result]],
        together: Callable[[list[Item]], Awaitable[dict[int, Result]]],
        *,
        group: int = DEFAULT_GROUP,
    ) -> None:
        if group < 2:
            raise ValueError("group must be at least 2")
        self._send_alone = alone
        self._send_together = together
        self.group = group
        self._queue: list[tuple[Item, asyncio.Future[Result]]] = []
        self._scheduled = False
        self._solo = True
        self._out = 0
        self._tasks: set[asyncio.Task[None]] = set()
        #: Statements of more than one item sent, and the items they carried.
        self.batches = 0
        self.batched = 0

    async def write(self, item: Item) -> Result:
        if self._solo and self._out == 0 and not self._queue:
            self._out += 1
            try:
                return await self._send_alone(item)
            finally:
                self._out -= 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queue.append((item, future))
        if len(self._queue) >= self.group:
            self._dispatch()
        elif not self._scheduled:
            self._scheduled = True
            # A context of its own: the group's statement is no one caller's (its log
            # lines must not carry the run id of whichever caller queued first).
            loop.call_soon(self._end_of_pass, context=contextvars.Context())
        return await future

    async def drain(self) -> None:
        """Wait until every item handed in has been sent and answered."""
        while self._scheduled or self._tasks:
            if self._tasks:
                await asyncio.wait(set(self._tasks))
            else:
                await asyncio.sleep(0)

    def _end_of_pass(self) -> None:
        self._scheduled = False
        # Alone in a pass, with nothing else out: the next one goes straight out.
        self._solo = len(self._queue) <= 1 and self._out == 0
        self._dispatch()

    def _dispatch(self) -> None:
        waiting = [(c, f) for c, f in self._queue if not f.done()]
        self._queue.clear()
        if not waiting:
            return
        self._out += 1
        task = asyncio.get_running_loop().create_task(self._send(waiting),
                                                      context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(functools.partial(self._sent, waiting))

    def _sent(
        self, group: list[tuple[Item, asyncio.Future[Result]]], task: asyncio.Task[None]
    ) -> None:
        """A statement's task ended: it runs even for a task cancelled before it started."""
        self._out -= 1
        self._tasks.discard(task)
        for _, future in group:  # cancelled (the loop is closing): nobody waits for good
            if not future.done():
                future.cancel()

    async def _send(self, group: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        if len(group) == 1:
            await self._alone(*group[0])
        else:
            await self._together(group)

    async def _alone(self, item: Item, future: asyncio.Future[Result]) -> None:
        try:
            written = await self._send_alone(item)
        except Exception as exc:  # noqa: BLE001 - handed to its caller
            if not future.done():
                future.set_exception(exc)
        else:
            if not future.done():
                future.set_result(written)

    async def _together(self, group: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        self.batches += 1
        self.batched += len(group)
        try:
            written = await self._send_together([c for c, _ in group])
        except Exception as exc:  # noqa: BLE001 - handed to the callers, or each goes alone
            if retry.is_connection_error(exc):
                for _, future in group:
                    if not future.done():
                        future.set_exception(exc)
                return
            # Something in one item (a value the statement cannot take, a fenced run):
            # alone, each gets its own answer.
            log.debug("a group of %d failed (%s): each goes on its own", len(group), exc)
            written = {}
        left: list[tuple[Item, asyncio.Future[Result]]] = []
        for index, (item, future) in enumerate(group):
            if future.done():  # a cancelled caller: its item is not sent again
                continue
            row = written.get(index)
            if row is None:
                left.append((item, future))
            else:
                future.set_result(row)
        if left:
            log.debug("%d of %d items go on their own", len(left), len(group))
            await asyncio.gather(*(self._alone(c, f) for c, f in left))



class CheckpointBatcher(Grouped[Checkpoint, models.CheckpointWritten]):
    """Writes the pooled checkpoints of one :class:`~ticketiq_pg.db.driver.TicketIQ`, grouped."""

    def __init__(self, db: _Writes, *, group: int = DEFAULT_GROUP) -> None:
        super().__init__(lambda c: db.write_checkpoint_alone(*c), db.write_checkpoints,
                         group=group)


class ResumeBatcher(Grouped[Settlements, models.ResumeAudited]):
    """Records the pooled settlements of one driver's resumes, grouped: a process that
    takes over thousands of runs records their settlements in ``ticketiq.record_resumes``
    statements of up to ``group`` resumes, not one ``record_resume`` statement each."""

    def __init__(self, db: _Writes, *, group: int = DEFAULT_GROUP) -> None:
        super().__init__(lambda r: db.record_resume_alone(*r), db.record_resumes,
                         group=group)
