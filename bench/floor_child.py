"""One process of the floor measured as the database gives it (section 13).

``python -m bench.floor_child --url URL --conns K --first F --bodies FILE`` opens K
connections, prints ``{"event": "ready"}``, then for each ``go`` line on stdin has
each connection write every body of FILE (``--repeat`` times) (a JSON list) as one single-statement
``UPDATE`` of its own row (``F`` + its index) and prints the steps, window seconds
and client CPU seconds as one JSON line; it exits when stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

UPDATE = "update bench_raw_floor set state = %s where run_id = %s"


async def _writer(conn: psycopg.AsyncConnection, row: int, bodies: list[Jsonb]) -> None:
    for body in bodies:
        await conn.execute(UPDATE, (body, row), prepare=True)


async def main_async(args: argparse.Namespace, bodies: list[Jsonb]) -> int:
    conns = [await psycopg.AsyncConnection.connect(args.url, autocommit=True)
             for _ in range(args.conns)]
    try:
        for i, conn in enumerate(conns):  # prepared before the first window
            await _writer(conn, args.first + i, bodies[:1] * 6)
        print(json.dumps({"event": "ready"}), flush=True)
        while (await asyncio.to_thread(sys.stdin.readline)).strip() == "go":
            cpu0, t0 = time.process_time(), time.perf_counter()
            await asyncio.gather(*(_writer(c, args.first + i, bodies * args.repeat)
                                   for i, c in enumerate(conns)))
            seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            print(json.dumps({"steps": len(bodies) * args.repeat * len(conns), "seconds": seconds,
                              "cpu": cpu}), flush=True)
    finally:
        for conn in conns:
            await conn.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor_child")
    parser.add_argument("--url", required=True)
    parser.add_argument("--conns", type=int, required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--bodies", required=True)
    parser.add_argument("--repeat", type=int, default=1, help="the bodies this many times a round")
    args = parser.parse_args()
    bodies = [Jsonb(b) for b in json.loads(Path(args.bodies).read_text())]
    return asyncio.run(main_async(args, bodies))


if __name__ == "__main__":
    sys.exit(main())
