"""A bench worker process: the victim that holds many runs, or the survivor that takes them.

``python -m bench.takeover_child --role victim --runs 1000 --latency 5``: a real
:class:`~ticketiq_pg.runtime.worker.Worker` (default settings from ``TICKETIQ_*``:
8 s leases, liveness every 0.1 s, the pool of ``TICKETIQ_POOL_SIZE``) whose model
answers after ``--latency`` seconds; the victim starts ``--runs`` runs at once and
prints ``started`` once every one is in flight.  ``--role survivor`` starts none
and resumes what it is handed.  ``--suspend``: each run's write call is held for a
person's approval and the run may wait, so it suspends (its lease given back, its
task ended) at its first step; ``suspended`` is printed once none is in flight, with
the Python heap the suspended runs left behind (``tracemalloc``, traced from
``ready``) and the worker's ``outcomes`` kept.  On SIGTERM it prints ``gc``: the garbage
collector's pauses since ``ready``, per generation, and the objects it tracked (the
survivor samples the most each 5 s).  Each event is one
JSON line on stdout with the process's resident memory (``/proc/self/status``:
VmRSS, VmHWM, in KiB).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import resource
import signal
import sys
import time
import tracemalloc
from dataclasses import replace
from typing import Any

from ticketiq_pg.agent import AllowAll, RunInfo, ToolCall, Verdict, is_changing
from ticketiq_pg.config import Settings
from ticketiq_pg.retries import MODEL_RETRY
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.gc_pauses import GcPauses
from ticketiq_pg.runtime.worker import Worker

from .workload import TOOLS, SlowModel, start_kwargs


class HoldWrites(AllowAll):
    """Gates that hold every changing call for a person's approval (reads go on)."""

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        if is_changing(classification):
            return Verdict.hold("a person approves ticket changes")
        return Verdict.allow()


def memory_kib() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in KiB (ru_maxrss where /proc is absent)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        out["VmHWM"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


async def sample_objects(peak: dict[str, int], interval: float = 5.0) -> None:
    """The most objects the collector tracked (frozen ones apart), sampled each ``interval``.

    Each sample walks every tracked object on the survivor's event loop (60 ms at 10,000
    runs): sampled each second, the bench took 1.5 s of a 3,000-run takeover's survivor
    CPU for itself (cProfile), so a sample each 5 s."""
    while True:
        await asyncio.sleep(interval)
        peak["objects_max"] = max(peak.get("objects_max", 0), len(gc.get_objects()))


def event(kind: str, **fields: Any) -> None:
    print(json.dumps({"event": kind, **fields, **memory_kib()}), flush=True)


async def main_async(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    # Each model attempt is bounded (MODEL_RETRY.timeout, 30 s): a wait at least that
    # long would time out and be tried again for ever, never writing a step (the
    # 10,000-run victim waits 50 s).  The bound is lifted above the wait.
    retry = MODEL_RETRY
    if retry.timeout is not None and args.latency * 2 > retry.timeout:
        retry = replace(retry, timeout=args.latency * 2)
    app = App(model=SlowModel(args.latency), tools=TOOLS,
              model_retry=replace(retry, attempts=settings.model_attempts),
              gates=HoldWrites() if args.suspend else None)
    ended = asyncio.Event()

    def count(_outcome: object) -> None:
        if worker.ended.total() >= args.runs:  # a run's task is forgotten before this
            ended.set()

    # The child keeps no handle on its runs: what the suspended runs leave is the worker's.
    worker = Worker(settings, app, process_id=args.process_id, on_outcome=count)
    await worker.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    event("ready", pid=os.getpid(), process_id=worker.process_id)
    pauses = GcPauses().start()
    # TICKETIQ_BENCH_PROFILE=FILE: the survivor's CPU profile, ready to stop (a diagnosis).
    profile_to = os.environ.get("TICKETIQ_BENCH_PROFILE") if args.role == "survivor" else None
    profiler = cProfile.Profile(time.process_time) if profile_to else None
    if profiler is not None:
        profiler.enable()
    objects = {"objects_ready": len(gc.get_objects()), "frozen": gc.get_freeze_count()}
    sampler = asyncio.create_task(sample_objects(objects)) if args.role == "survivor" else None
    if args.suspend:
        gc.collect()
        tracemalloc.start()
    if args.runs:
        sem = asyncio.Semaphore(64)  # start them at once, a few dozen statements in flight

        async def one(index: int) -> None:
            async with sem:
                kwargs = start_kwargs(args.first + index, plan, args.steps)
                await worker.start_run(**kwargs, may_wait=args.suspend)

        plan = "mixed" if args.suspend else "reads"
        await asyncio.gather(*(one(i) for i in range(args.runs)))
        event("started", runs=args.runs, running=len(worker.running()))
        if args.suspend:
            await ended.wait()
            await asyncio.sleep(0.1)  # the last tasks return
            gc.collect()
            heap, _peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            event("suspended", heap_bytes=heap, outcomes=dict(worker.ended))
    await stop.wait()
    if profiler is not None and profile_to:
        profiler.disable()
        profiler.dump_stats(profile_to)
    if sampler is not None:
        sampler.cancel()
    objects["objects_end"] = len(gc.get_objects())
    if worker.liveness is not None:
        objects["liveness_calls_held"] = worker.liveness.calls_held
    event("gc", **pauses.figures(), **objects)  # from ready until asked to stop
    await worker.shutdown(drain_timeout=5.0)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.takeover_child")
    parser.add_argument("--role", choices=("victim", "survivor"), required=True)
    parser.add_argument("--process-id", required=True)
    parser.add_argument("--runs", type=int, default=0)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--suspend", action="store_true",
                        help="hold each run's write call for approval: the runs suspend")
    args = parser.parse_args(argv)
    if args.role == "survivor" and args.runs:
        parser.error("a survivor starts no runs")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
