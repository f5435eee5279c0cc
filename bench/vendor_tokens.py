"""18. What a vendor's token costs a call (issue 43): statements and their time.

A call of a tool with a vendor (``Tool.vendor``) takes a token before each try
(``ticketiq.take_vendor_token``) and, under a concurrency, gives it back after
(``give_vendor_token``); a tool without one takes nothing (limits off: no statement).
Here ``calls`` calls' takes and gives at 1 and at 128 at once (each its own run, fenced
as a call's take is), against one vendor whose limits never refuse (a rate and a
concurrency far above the load), so what is measured is the cost of deciding, not of
waiting: the wall of a take and of a give, the calls a second the one vendor bucket lets
through (every take of a vendor locks its bucket's row), and the statements a call costs.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from typing import Any

from ticketiq_pg.db.driver import TicketIQ

from .common import BenchDB, Sizes
from .report import _row

LEVELS = (1, 128)


async def _level(db: TicketIQ, runs: list[uuid.UUID], at_once: int, calls: int
                 ) -> dict[str, Any]:
    takes: list[float] = []
    gives: list[float] = []
    per_task = max(1, calls // at_once)

    async def one(run_id: uuid.UUID) -> None:
        for i in range(per_task):
            call = f"c{i}"
            started = time.perf_counter()
            granted, _, counted = await db.take_vendor_token("bench", run_id, 1, call, None)
            took = time.perf_counter()
            if not granted or not counted:
                raise RuntimeError("the bench's vendor refused a token")
            await db.give_vendor_token(run_id, call)
            takes.append(took - started)
            gives.append(time.perf_counter() - took)

    before = db.statements.copy()
    started = time.perf_counter()
    await asyncio.gather(*(one(runs[i]) for i in range(at_once)))
    wall = time.perf_counter() - started
    made = per_task * at_once
    sent = sum(v - before.get(k, 0) for k, v in db.statements.items())
    return {"calls": made, "take_ms_p50": statistics.median(takes) * 1e3,
            "give_ms_p50": statistics.median(gives) * 1e3,
            "calls_per_s": made / wall, "statements_per_call": sent / made}


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    calls = max(128, sizes.rt_runs * sizes.rt_steps * 8)
    db = await TicketIQ.connect(bdb.url, min_size=2, max_size=32, group_commit=False)
    out: dict[str, Any] = {"limits_off_statements_per_call": 0}
    try:
        await db.set_vendor_limit("bench", 1e6, 1_000_000, 100_000)
        runs = []
        for _ in range(max(LEVELS)):
            started = await db.start_run(holder="bench-tokens", owner="bench", run_as="bench",
                                         channel="bench", entry_point="bench", may_wait=False,
                                         ttl=3600.0)
            runs.append(started.run_id)
        for level in LEVELS:
            out[str(level)] = await _level(db, runs, level, calls)
    finally:
        await db.close()
    one, many = out["1"], out[str(max(LEVELS))]
    log(f"  a vendor token: take {one['take_ms_p50']:.2f} ms, give {one['give_ms_p50']:.2f} ms "
        f"at 1 at once ({one['calls_per_s']:.0f} calls/s); at {max(LEVELS)}: take "
        f"{many['take_ms_p50']:.2f} ms, {many['calls_per_s']:.0f} calls/s through one bucket")
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    one, many = res["1"], res[str(max(LEVELS))]
    return [
        _row("18", "a vendor token: statements a call (limits off: 0)",
             f"{one['statements_per_call']:.2f}", "take + give (a concurrency)",
             key="vendor_tokens.statements_per_call", value=one["statements_per_call"]),
        _row("18", "take, p50, at 1 and 128 at once (ms)",
             f"{one['take_ms_p50']:.2f}, {many['take_ms_p50']:.2f}",
             f"give {one['give_ms_p50']:.2f}, {many['give_ms_p50']:.2f}",
             key="vendor_tokens.take_ms_p50_128", value=many["take_ms_p50"]),
        _row("18", "calls a second through one vendor's bucket, 1 and 128 at once",
             f"{one['calls_per_s']:.0f}, {many['calls_per_s']:.0f}", "",
             key="vendor_tokens.calls_per_s_128", value=many["calls_per_s"]),
    ]
