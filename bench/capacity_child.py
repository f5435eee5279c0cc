"""One worker process of section 13 (capacity): many runs at once, each step a slow model.

``python -m bench.capacity_child --runs 2000 --latency 1 --steps 28 --ramp 2`` is a real
:class:`~ticketiq_pg.runtime.worker.Worker` with the settings an app author gets from
``Settings.from_env()`` (pool, group commit, leases, liveness), whose model answers
after ``--latency`` s with one read.  It prints ``ready``; on ``go`` it starts the runs
spread evenly over ``--ramp`` s (so their steps are spread over the model's wait, as
independent conversations are) and prints ``steady`` one wait after the last is in
flight; ``open`` and ``close`` bound the measured window (``window``: its steps, CPU,
pool use, memory, where a step's time goes); ``done`` once every run ended; it exits
when stdin closes.  Each event is one JSON line on stdout.
``TICKETIQ_BENCH_CAPACITY_GC=off`` turns the cyclic garbage collector off from
``steady`` on (a diagnosis, not a setting).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from typing import Any

from ticketiq_pg.agent import CallContext, Tool, Tools
from ticketiq_pg.config import Settings
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.gc_pauses import GcPauses
from ticketiq_pg.runtime.worker import Worker

from .capacity import launch_at
from .common import summary
from .takeover_child import memory_kib
from .workload import SlowModel, kb_search, start_kwargs

POOL_SAMPLE = 0.02
ENV_GC = "TICKETIQ_BENCH_CAPACITY_GC"


def event(kind: str, **fields: Any) -> None:
    print(json.dumps({"event": kind, **fields, **memory_kib()}), flush=True)


def cpu_seconds() -> float:
    """This process's utime + stime (every thread: psycopg's pool workers too)."""
    t = os.times()
    return t.user + t.system


class Probe:
    """Where a step's time beyond the model's wait goes, while the window is open.

    ``step_over_ms``: the time between a run's two reads less the wait; of it,
    ``checkpoint_ms`` is the Runner's wait for its checkpoint (queued for a group,
    waiting for a connection, the statement), ``statement_ms`` one grouped statement
    (with its wait for a connection), ``ready_ms`` the wait before a model or tool call
    for the lease and a fresh liveness confirmation, ``loop_lag_ms`` how late a 10 ms sleep wakes
    (the event loop busy with other runs), ``renew_ms`` one renewal of every lease.
    """

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.steps = 0
        self.on = False
        self._last: dict[Any, float] = {}
        self.times: dict[str, list[float]] = {
            k: [] for k in ("step_over_ms", "checkpoint_ms", "statement_ms", "group_size",
                            "ready_ms", "loop_lag_ms", "renew_ms")}

    async def read(self, ctx: CallContext) -> Any:
        """The read tool, counting the steps done (each step makes exactly one read)."""
        self.steps += 1
        now = time.perf_counter()
        last = self._last.get(ctx.run.run_id)
        self._last[ctx.run.run_id] = now
        if self.on and last is not None:
            self.times["step_over_ms"].append(1000 * (now - last - self.latency))
        return await kb_search(ctx)

    def timed(self, name: str, fn: Any, size: Any = None) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                if self.on:
                    self.times[name].append(1000 * (time.perf_counter() - t))
                    if size is not None:
                        self.times["group_size"].append(size(*args))
        return wrapper

    def attach(self, worker: Worker) -> None:
        db, leases = worker.db, worker.leases
        assert db is not None and leases is not None
        db.write_checkpoint = self.timed("checkpoint_ms", db.write_checkpoint)  # type: ignore[method-assign]
        db.write_checkpoints = self.timed(  # type: ignore[method-assign]
            "statement_ms", db.write_checkpoints, size=len)
        leases.renew_once = self.timed("renew_ms", leases.renew_once)  # type: ignore[method-assign]
        leases.ready = self.timed("ready_ms", leases.ready)  # type: ignore[method-assign]

    async def lag(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            if self.on:
                self.times["loop_lag_ms"].append(1000 * (time.perf_counter() - t - 0.01))

    def figures(self) -> dict[str, Any]:
        return {k: summary(v) for k, v in self.times.items()}


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
    counted = Probe(args.latency)
    tools = Tools([Tool("kb.search", "read", counted.read)])  # the only tool its runs call
    worker = Worker(settings, App(model=SlowModel(args.latency), tools=tools),
                    process_id=args.process_id)
    await worker.start()
    counted.attach(worker)
    lag = asyncio.create_task(counted.lag())
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
        if os.environ.get(ENV_GC) == "off":  # a diagnosis: what the collector costs
            gc.disable()
        event("steady", started_s=round(started, 3), running=len(worker.running()))
        if await line() != "open":
            return 1
        watch = PoolWatch(worker)
        pool0 = watch.start()
        counted.on = True
        pauses = GcPauses().start()  # the collector's pauses stop every run at once
        steps0, ended0, cpu0, w0 = counted.steps, worker.ended.total(), cpu_seconds(), \
            time.perf_counter()
        if await line() != "close":
            return 1
        w1, cpu1, steps1, ended1 = time.perf_counter(), cpu_seconds(), counted.steps, \
            worker.ended.total()
        counted.on = False
        pauses.stop()
        event("window", steps=steps1 - steps0, seconds=w1 - w0, cpu=cpu1 - cpu0,
              gc_enabled=gc.isenabled(), ended_in_window=ended1 - ended0,
              running=len(worker.running()),
              pool=await watch.stop(pool0), probe=counted.figures(),
              gc=pauses.figures())
        outcomes = await asyncio.gather(*(t for t in runs if t is not None))
        event("done", statuses=sorted({o.status for o in outcomes}), runs=len(outcomes))
        await line()  # until stdin closes
    finally:
        lag.cancel()
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
