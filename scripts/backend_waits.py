"""What the server's backends are doing while C runs step at once: a wait-event sample.

    python scripts/with_test_server.py -- python scripts/backend_waits.py [--at-once 8]

``--rounds`` rounds of C runs of 20 steps through the Runner, as bench section 13 runs
them (all C start together, no model wait).  A thread reads ``pg_stat_activity`` about
every millisecond on a connection of its own, for the bench database's client backends
but its own.  It prints the share of samples by how many backends were active, and the
active backends' wait events by statement: no wait event means on a CPU (or ready to
run).  The sampler's own reads cost the server CPU too, so read the shares, not the
steps/s.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_database  # noqa: E402
from bench.throughput import ticketiq_round  # noqa: E402
from bench.workload import BenchModel, make_runner  # noqa: E402
from ticketiq_pg.db.driver import TicketIQ  # noqa: E402

STEPS = 20
ACTIVITY = """
select state, coalesce(wait_event_type, '-'), coalesce(wait_event, '-'), left(query, 45)
from pg_stat_activity
where pid <> pg_backend_pid() and backend_type = 'client backend'
    and datname = current_database()
"""


class Sampler(threading.Thread):
    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.samples = 0
        self.active: collections.Counter[int] = collections.Counter()
        self.waits: collections.Counter[tuple[str, str, str]] = collections.Counter()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.is_set():
                rows = conn.execute(ACTIVITY).fetchall()
                active = [r for r in rows if r[0] == "active"]
                self.samples += 1
                self.active[len(active)] += 1
                for _state, kind, event, query in active:
                    self.waits[(kind, event, " ".join(query.split()))] += 1
                time.sleep(0.001)


async def main_async(at_once: int, rounds: int) -> None:
    with bench_database() as bdb:
        size = max(2, min(at_once + 2, 16))
        db = await TicketIQ.connect(bdb.url, min_size=size, max_size=size)
        model = BenchModel()
        runner = make_runner(db, "backend-waits", model)
        runner.leases.start()
        try:
            await ticketiq_round(runner, model, at_once, STEPS, 1)  # warm
            sampler = Sampler(bdb.url)
            sampler.start()
            steps, seconds = 0, 0.0
            for i in range(rounds):
                r = await ticketiq_round(runner, model, at_once, STEPS, 100 + i)
                steps, seconds = steps + r.steps, seconds + r.seconds
            sampler.stop.set()
            sampler.join()
        finally:
            await runner.leases.stop()
            await db.close()
    n = sampler.samples or 1
    print(f"{at_once} at once, {rounds} rounds: {steps / seconds:,.0f} steps/s in the steps'"
          f" windows; {sampler.samples} samples over whole rounds (starts and ends too)")
    shares = ", ".join(f"{k}: {v / n:.2f}" for k, v in sorted(sampler.active.items()))
    print(f"backends active (share of samples): {shares}")
    print("active backends' waits (samples; '-' is on a CPU):")
    for (kind, event, query), count in sampler.waits.most_common(12):
        print(f"    {count:6d}  {kind:8s} {event:14s} {query}")


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(prog="scripts/backend_waits.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--at-once", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=16)
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.at_once, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
