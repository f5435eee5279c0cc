"""6. Wake-up latency: from a sweep's claim to the resume worker starting the run.

A real :class:`ticketiq_pg.runtime.worker.Worker` (its LISTEN connection, its resume
loop polling every ``poll_interval`` seconds) runs in this process; the
bench holds the sweep leader lease itself, so the worker never sweeps.
Each trial: a run whose process "died" after its first checkpoint has
lapsed; the bench calls ``sweep_lapsed`` (limit 1), which claims it and
NOTIFYs ``ticketiq_resume``; t0 is when that statement returned (its commit
is done).  t1 is when the worker, having adopted the run and verified its
seal, asks the gates whether the resumed run may go on (the first thing a
resume does).  Mode ``notify``: the worker as shipped; mode ``poll``: the
same worker with its LISTEN connection left out, so only the poll wakes
it.  Trials start at random moments relative to the poll timer.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

from ticketiq_pg.agent import RunInfo, ToolCall, Verdict
from ticketiq_pg.config import Settings
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.worker import LEADER_NAME, Worker

from .common import BenchDB, Sizes, summary
from .workload import (
    LEASE_TTL,
    RENEW_INTERVAL,
    SEAL_KEY,
    SEAL_KEY_ID,
    SELF_FENCE_MARGIN,
    TOOLS,
    BenchModel,
    start_lapsing_run,
)


class StampGates:
    """Allows everything; stamps the moment a resumed run is first checked."""

    def __init__(self) -> None:
        self.resumed: dict[uuid.UUID, float] = {}
        self.events: dict[uuid.UUID, asyncio.Event] = {}

    def event(self, run_id: uuid.UUID) -> asyncio.Event:
        return self.events.setdefault(run_id, asyncio.Event())

    async def check_run(self, run: RunInfo) -> Verdict:
        if run.resumed and run.run_id not in self.resumed:
            self.resumed[run.run_id] = time.perf_counter()
            self.event(run.run_id).set()
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        return Verdict.allow()


class _NoListen:
    """Stands in for the worker's Listener: no LISTEN session, only the poll."""

    def __init__(self) -> None:
        self.connected = asyncio.Event()
        self.connected.set()
        self.reconnects = 0

    def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


async def _trials(
    db: TicketIQ, url: str, sizes: Sizes, mode: str, trials: int, seq: int
) -> dict[str, Any]:
    settings = Settings(
        database_url=url,
        seal_keys={SEAL_KEY_ID: SEAL_KEY},
        lease_ttl=LEASE_TTL,
        renew_interval=RENEW_INTERVAL,
        self_fence_margin=SELF_FENCE_MARGIN,
        poll_interval=sizes.poll_interval,
    )
    gates = StampGates()
    outcomes: list[Any] = []
    all_done = asyncio.Event()

    def on_outcome(outcome: Any) -> None:
        outcomes.append(outcome)
        if len(outcomes) >= trials:
            all_done.set()

    worker = Worker(settings, App(model=BenchModel(), tools=TOOLS, gates=gates),
                    process_id=f"bench-resume-{mode}", on_outcome=on_outcome)
    if mode == "poll":
        worker.listener = _NoListen()  # type: ignore[assignment]
    runs = [await start_lapsing_run(db, seq + i, ttl=0.1) for i in range(trials)]
    await asyncio.sleep(0.15)
    await worker.start()
    latencies: list[float] = []
    rng = random.Random(seq)
    try:
        await asyncio.sleep(0.2)
        for _ in runs:
            gap = rng.uniform(0.0, sizes.poll_interval) if mode == "poll" else rng.uniform(
                0.02, 0.08)
            await asyncio.sleep(gap)
            swept = await db.processes.sweep_lapsed("bench-sweeper", limit=1)
            t0 = time.perf_counter()
            if len(swept) != 1:
                raise RuntimeError(f"wake-up sweep claimed {len(swept)} runs")
            run_id = swept[0].run_id
            await asyncio.wait_for(gates.event(run_id).wait(), 5 * sizes.poll_interval + 10)
            latencies.append(gates.resumed[run_id] - t0)
        # Let the resumed runs finish (each has only its final step left).
        try:
            await asyncio.wait_for(all_done.wait(), 10)
        except TimeoutError:
            pass
        completed = sum(1 for o in outcomes if o.status == "completed")
    finally:
        await worker.shutdown()
    return {"trials": len(latencies), "completed_runs": completed,
            "latency_ms": summary(latencies, 1000.0), "samples_ms": [1000 * x for x in latencies]}


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=2)
    try:
        lead = await db.processes.claim_leader(LEADER_NAME, "bench-sweeper", 3600.0)
        if not lead.is_leader:
            raise RuntimeError("the bench could not take the sweep leader lease")
        out = {
            "poll_interval_s": sizes.poll_interval,
            "notify": await _trials(db, bdb.url, sizes, "notify", sizes.notify_trials, 10_000),
            "poll": await _trials(db, bdb.url, sizes, "poll", sizes.poll_trials, 20_000),
        }
    finally:
        await db.close()
    for mode in ("notify", "poll"):
        lat = out[mode]["latency_ms"]
        log(f"  wake-up {mode}: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms "
            f"({lat['n']} trials)")
    return out
