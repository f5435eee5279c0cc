"""Time bounds on shared timers (ticketiq_pg.runtime.bounds): asyncio.timeout's rules,
one timer a slot."""

from __future__ import annotations

import asyncio
import math

import pytest

from ticketiq_pg.runtime import bounds
from ticketiq_pg.runtime.bounds import bounded


async def _value(after: float, value: object = "done") -> object:
    await asyncio.sleep(after)
    return value


async def test_an_awaitable_in_time_gives_its_value() -> None:
    assert await bounded(_value(0.01), 5) == "done"
    assert await bounded(_value(0.0), None) == "done"
    # RetryPolicy(timeout=math.inf) passes its check: no bound, not an OverflowError
    assert await bounded(_value(0.0), math.inf) == "done"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_past_its_bound_it_is_cancelled_and_a_timeout_error_is_raised() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TimeoutError):
        await bounded(_value(5), 0.2)
    took = loop.time() - started
    # On the fine grid: not before the bound, at most one grid step after it (and a
    # busy machine's lateness, which is not what this asserts).
    assert took >= 0.2
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_long_bound_fires_on_the_whole_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "COARSE", 0.5)
    loop = asyncio.get_running_loop()
    started = loop.time()
    fired: list[float] = []

    async def sleeper() -> None:
        try:
            await asyncio.sleep(5)
        finally:
            fired.append(loop.time())

    with pytest.raises(TimeoutError):
        await bounded(sleeper(), 0.6)
    (at,) = fired
    slot = math.ceil(started + 0.6)
    assert at >= slot  # the slot's second, not the bound's exact end
    assert at >= started + 0.6


async def test_a_cancel_from_outside_stays_a_cancel() -> None:
    task = asyncio.create_task(bounded(_value(5), 3))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_nested_bounds_the_inner_one_expires_and_the_outer_goes_on() -> None:
    async def inner() -> str:
        with pytest.raises(TimeoutError):
            await bounded(_value(5), 0.1)
        return await _value(0.05, "outer went on")

    assert await bounded(inner(), 5) == "outer went on"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_the_outer_bound_expiring_is_the_outer_ones_timeout() -> None:
    raised: list[str] = []

    async def inner() -> None:
        try:
            await bounded(_value(5), 5)
        except TimeoutError:
            raised.append("inner")
            raise
        except asyncio.CancelledError:
            raised.append("cancelled through inner")
            raise

    with pytest.raises(TimeoutError):
        await bounded(inner(), 0.1)
    assert raised == ["cancelled through inner"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_an_awaitable_that_keeps_the_cancel_to_itself_leaves_no_cancel_behind() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "kept going"
        return "slept"

    assert await bounded(stubborn(), 0.1) == "kept going"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_bounds_with_one_deadline_share_one_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    gate = asyncio.Event()

    async def waiting() -> str:
        await gate.wait()
        return "ok"

    # 200 bounds of 30 s begun within one second share at most two slots (a second's
    # edge may fall between them); asyncio.timeout would hold 200 timers.
    tasks = [asyncio.create_task(bounded(waiting(), 30)) for _ in range(200)]
    await asyncio.sleep(0.01)
    added = len(loop._scheduled) - before  # type: ignore[attr-defined]
    assert 1 <= added <= 2, added
    gate.set()
    assert await asyncio.gather(*tasks) == ["ok"] * 200
