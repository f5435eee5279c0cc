"""One of the two worker processes of section 10's A2 arm (128 runs over 2 processes).

``python -m bench.concurrency_child --url URL --runs 64 --steps 5 --latency 0.02``
prints ``{"event": "ready"}``, then for each ``go`` line on stdin runs one round
(``--runs`` runs at once through the Runner, as arm A) and prints its steps,
window seconds and client CPU seconds as one JSON line; it exits when stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from ticketiq_pg.db.driver import TicketIQ

from .throughput import ticketiq_round
from .workload import SlowModel, make_runner


async def main_async(args: argparse.Namespace) -> int:
    db = await TicketIQ.connect(args.url, min_size=16, max_size=16)
    model = SlowModel(args.latency)
    runner = make_runner(db, f"bench-conc-child-{args.seq}", model)
    runner.leases.start()
    seq = args.seq
    try:
        print(json.dumps({"event": "ready"}), flush=True)
        while (await asyncio.to_thread(sys.stdin.readline)).strip() == "go":
            r = await ticketiq_round(runner, model, args.runs, args.steps, seq)
            seq += 1
            print(json.dumps({"steps": r.steps, "seconds": r.seconds, "cpu": r.cpu}), flush=True)
    finally:
        await runner.leases.stop()
        await db.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency_child")
    parser.add_argument("--url", required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--seq", type=int, default=0)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
