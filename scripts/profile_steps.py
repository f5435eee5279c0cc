"""Where a step's client time goes with C runs at once: cProfile of the bench's rounds.

    python scripts/profile_steps.py [--runs 32] [--rounds 6] [--steps 5] [--top 25] [--cpu]

Starts a private durable cluster (or uses ``TICKETIQ_BENCH_DATABASE_URL``), runs
one warm-up round and then ``--rounds`` rounds of ``--runs`` runs at once through
the Runner (bench section 10's arm A, model latency 0) under cProfile, and prints
the functions by their own time (``--cpu``: this process's CPU time, so waits and a
busy machine's preemption count nothing).  Found the slow seal encoder (issue 24).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_database  # noqa: E402
from bench.throughput import ticketiq_round  # noqa: E402
from bench.workload import SlowModel, make_runner  # noqa: E402
from ticketiq_pg.db.driver import TicketIQ  # noqa: E402


async def profile(url: str, args: argparse.Namespace) -> str:
    db = await TicketIQ.connect(url, min_size=16, max_size=16)
    model = SlowModel(0.0)
    runner = make_runner(db, "profile", model)
    runner.leases.start()
    try:
        await ticketiq_round(runner, model, args.runs, args.steps, 1)
        profiler = cProfile.Profile(time.process_time) if args.cpu else cProfile.Profile()
        profiler.enable()
        for index in range(args.rounds):
            await ticketiq_round(runner, model, args.runs, args.steps, 10 + index)
        profiler.disable()
    finally:
        await runner.leases.stop()
        await db.close()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.top)
    return text.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cpu", action="store_true", help="profile CPU time, not wall time")
    args = parser.parse_args()
    with bench_database() as bdb:
        print(asyncio.run(profile(bdb.url, args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
