"""Group commit's group size side by side: C runs at once through the Runner, one arm per
group size, and the raw UPDATE of the same checkpoint bodies, in interleaved rounds.

    python scripts/compare_group_sizes.py [--runs 32] [--rounds 12] [--groups 4,8,16]

Starts a private durable cluster (or uses ``TICKETIQ_BENCH_DATABASE_URL``); prints each
arm's steps/s, its ratio to the raw UPDATE and its client CPU per step.  The first
round is a warm-up.  What chose the default group of 16 (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_database  # noqa: E402
from bench.throughput import raw_round, ticketiq_round  # noqa: E402
from bench.workload import BenchModel, make_runner  # noqa: E402
from ticketiq_pg.db.driver import TicketIQ  # noqa: E402

STEPS = 5


async def compare(url: str, runs: int, rounds: int, groups: list[int]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table bench_raw (run_id integer primary key, state jsonb not null)")
        conn.execute("insert into bench_raw select g, '{}' from generate_series(0, %s) as g",
                     (runs,))
    arms = {}
    for group in groups:
        db = await TicketIQ.connect(url, min_size=16, max_size=16, group_size=group)
        model = BenchModel()
        runner = make_runner(db, f"group-{group}", model)
        runner.leases.start()
        arms[group] = (db, model, runner)
    raw_db = await TicketIQ.connect(url, min_size=runs, max_size=runs)
    db, model, runner = arms[groups[0]]
    warm = await ticketiq_round(runner, model, 1, STEPS, 0)
    async with db.pool.connection() as conn:  # type: ignore[union-attr]
        cur = await conn.execute("select body from ticketiq.checkpoints where run_id = %s"
                                 " order by step", (warm.run_ids[0],))
        payloads = [row[0] for row in await cur.fetchall()]
    totals: dict[object, list[float]] = {key: [0, 0.0, 0.0] for key in (*arms, "raw")}
    seq = 1
    try:
        for index in range(rounds + 1):
            measured = []
            for group, (_db, model, runner) in arms.items():
                measured.append((group, await ticketiq_round(runner, model, runs, STEPS, seq)))
                seq += 1
            measured.append(("raw", await raw_round(raw_db, runs, payloads)))
            if index:  # the first round warms each arm up
                for key, done in measured:
                    totals[key][0] += done.steps
                    totals[key][1] += done.seconds
                    totals[key][2] += done.cpu
    finally:
        for db, _, runner in arms.values():
            await runner.leases.stop()
            await db.close()
        await raw_db.close()
    raw = totals["raw"][0] / totals["raw"][1]
    print(f"{runs} runs at once, {rounds} rounds of {STEPS} steps each")
    for key, (steps, seconds, cpu) in totals.items():
        label = f"group {key}" if key != "raw" else "raw UPDATE"
        print(f"{label:11} {steps / seconds:8,.0f} steps/s  ratio {steps / seconds / raw:.2f}"
              f"  client CPU {1e6 * cpu / steps:.0f} us a step")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--groups", default="4,8,16")
    args = parser.parse_args()
    groups = [int(g) for g in args.groups.split(",")]
    with bench_database() as bdb:
        asyncio.run(compare(bdb.url, args.runs, args.rounds, groups))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
