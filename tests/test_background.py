"""ticketiq_pg.background: the one way the library runs work in the background.

No database: the loops' own behaviour (a failed tick logged and tried again, the wait a
tick asks for, a stop honoured between ticks) and the task's (started once, cancelled by
``stop``, left to end by ``finish`` unless it overstays).
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from ticketiq_pg.background import Background, poll_forever


async def test_a_failed_tick_is_logged_and_the_loop_goes_on(caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    stopping = asyncio.Event()
    ticks: list[int] = []
    waits: list[float] = []

    async def tick() -> float | None:
        ticks.append(len(ticks))
        if len(ticks) == 1:
            raise RuntimeError("the database went away")
        if len(ticks) == 2:
            return 0.25  # asked for a shorter wait this once
        stopping.set()
        return None

    async def wait(seconds: float) -> None:
        waits.append(seconds)

    with caplog.at_level(logging.ERROR, logger="ticketiq_pg.background"):
        await asyncio.wait_for(
            poll_forever("resume poll", tick, stopping=stopping, wait=wait, interval=1.0), 5)
    assert ticks == [0, 1, 2]
    assert waits == [1.0, 0.25]  # none after the tick that stopped the loop
    assert [r.getMessage() for r in caplog.records] == ["resume poll failed"]


async def test_a_cancelled_loop_ends_at_once() -> None:
    stopping = asyncio.Event()

    async def tick() -> None:
        await asyncio.sleep(3600)

    loop = Background("t", lambda: poll_forever("t", tick, stopping=stopping,
                                                 wait=asyncio.sleep, interval=1.0))
    task = loop.start()
    assert loop.start() is task  # started once
    await asyncio.sleep(0)
    await asyncio.wait_for(loop.stop(), 2)
    assert task.cancelled() and not loop.running


async def test_finish_lets_the_loop_end_its_tick_then_cancels_an_overstayer() -> None:
    stopping = asyncio.Event()
    ended: list[str] = []

    async def polite() -> None:
        await stopping.wait()
        await asyncio.sleep(0.05)  # the statement in flight finishes
        ended.append("polite")

    async def stubborn() -> None:
        await asyncio.sleep(3600)

    one, two = Background("polite", polite), Background("stubborn", stubborn)
    first, second = one.start(), two.start()
    stopping.set()
    await asyncio.wait_for(asyncio.gather(one.finish(2.0), two.finish(0.1)), 5)
    assert ended == ["polite"] and not first.cancelled()
    assert second.cancelled()
