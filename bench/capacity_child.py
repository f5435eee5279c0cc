"""One worker process of section 13 (capacity): many runs at once, each step a slow model.

``python -m bench.capacity_child --runs 2000 --latency 1 --steps 28 --ramp 2`` is a real
:class:`~ticketiq_pg.runtime.worker.Worker` with the settings an app author gets from
``Settings.from_env()`` (pool, group commit, leases, liveness), whose model answers
after ``--latency`` s with one read.  It prints ``ready``; on ``go`` it starts the runs
spread evenly over ``--ramp`` s (so their steps are spread over the model's wait, as
independent conversations are) and prints ``steady`` one wait after the last is in
flight; ``open`` and ``close`` bound the measured window (``window``: its steps, CPU,
pool use, memory); ``done`` once every run ended; it exits when stdin closes.  Each
event is one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

from ticketiq_pg.agent import CallContext, Tool, Tools
from ticketiq_pg.config import Settings
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.worker import Worker

from .capacity import launch_at
from .takeover_child import memory_kib
from .workload import SlowModel, kb_search, start_kwargs

POOL_SAMPLE = 0.02


def event(kind: str, **fields: Any) -> None:
    print(json.dumps({"event": kind, **fields, **memory_kib()}), flush=True)


def cpu_seconds() -> float:
    """This process's utime + stime (every thread: psycopg's pool workers too)."""
    t = os.times()
    return t.user + t.system


class Counted:
    """The read tool, counting the steps done (each step makes exactly one read)."""

    def __init__(self) -> None:
        self.steps = 0

    async def __call__(self, ctx: CallContext) -> Any:
        self.steps += 1
        return await kb_search(ctx)


class PoolWatch:
    """Peak connections in use and requests waiting, sampled while the window is open."""

    def __init__(self, worker: Worker) -> None:
        assert worker.db is not None and worker.db.pool is not None
        self.pool = worker.db.pool
        self.peak_in_use = 0
        self.peak_waiting = 0
        self.peak_size = 0
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        while True:
            s = self.pool.get_stats()
            size = s.get("pool_size", 0)
            self.peak_size = max(self.peak_size, size)
            self.peak_in_use = max(self.peak_in_use, size - s.get("pool_available", 0))
            self.peak_waiting = max(self.peak_waiting, s.get("requests_waiting", 0))
            await asyncio.sleep(POOL_SAMPLE)

    def start(self) -> dict[str, int]:
        self._task = asyncio.create_task(self._sample())
        return dict(self.pool.get_stats())

    async def stop(self, before: dict[str, int]) -> dict[str, Any]:
        assert self._task is not None
        self._task.cancel()
        after = self.pool.get_stats()
        requests = after.get("requests_num", 0) - before.get("requests_num", 0)
        queued = after.get("requests_queued", 0) - before.get("requests_queued", 0)
        wait_ms = after.get("requests_wait_ms", 0) - before.get("requests_wait_ms", 0)
        return {"max_size": after.get("pool_max"), "peak_size": self.peak_size,
                "peak_in_use": self.peak_in_use, "peak_requests_waiting": self.peak_waiting,
                "requests": requests, "requests_queued": queued,
                "wait_ms_per_request": wait_ms / requests if requests else 0.0}


async def line() -> str:
    return (await asyncio.to_thread(sys.stdin.readline)).strip()


async def main_async(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    counted = Counted()
    tools = Tools([Tool("kb.search", "read", counted)])  # the only tool its runs call
    worker = Worker(settings, App(model=SlowModel(args.latency), tools=tools),
                    process_id=args.process_id)
    await worker.start()
    used = {k: getattr(settings, k) for k in (
        "pool_size", "group_commit", "lease_ttl", "renew_interval", "liveness_interval",
        "prepared_statements", "max_runs")}
    event("ready", pid=os.getpid(), settings=used)
    try:
        if await line() != "go":
            return 1
        handles: list[asyncio.Task[Any]] = []
        t0 = time.perf_counter()
        for i in range(args.runs):
            delay = t0 + launch_at(i, args.runs, args.ramp) - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            handles.append(asyncio.create_task(worker.start_run(
                **start_kwargs(args.first + i, "reads", args.steps))))
        runs = [(await h).task for h in handles]
        started = time.perf_counter() - t0
        await asyncio.sleep(args.latency)
        event("steady", started_s=round(started, 3), running=len(worker.running()))
        if await line() != "open":
            return 1
        watch = PoolWatch(worker)
        pool0 = watch.start()
        steps0, ended0, cpu0, w0 = counted.steps, worker.ended.total(), cpu_seconds(), \
            time.perf_counter()
        if await line() != "close":
            return 1
        w1, cpu1, steps1, ended1 = time.perf_counter(), cpu_seconds(), counted.steps, \
            worker.ended.total()
        event("window", steps=steps1 - steps0, seconds=w1 - w0, cpu=cpu1 - cpu0,
              ended_in_window=ended1 - ended0, running=len(worker.running()),
              pool=await watch.stop(pool0))
        outcomes = await asyncio.gather(*(t for t in runs if t is not None))
        event("done", statuses=sorted({o.status for o in outcomes}), runs=len(outcomes))
        await line()  # until stdin closes
    finally:
        await worker.shutdown(drain_timeout=5.0)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity_child")
    parser.add_argument("--process-id", required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--latency", type=float, required=True)
    parser.add_argument("--ramp", type=float, required=True)
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
