"""Where ours' server CPU goes at 1 at once: a run's start, its steps and its end.

    python scripts/with_test_server.py -- python scripts/server_cpu_windows.py [--runs 32]

``--runs`` runs of 20 steps, one at once, through the Runner (as bench section 13's level
1).  Every server process's CPU (``/proc/<pid>/schedstat``) is read before a run starts,
as its steps' window opens and closes, and after it ends: a step's share of each window,
by process.  Beside it, each statement's execution time a step (pg_stat_statements).  The
steps' window's CPU less its statements' time is what a step costs the server outside
its statements: bind, commit, the protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_database, read_cpu  # noqa: E402
from bench.throughput import ticketiq_round  # noqa: E402
from bench.workload import BenchModel, make_runner  # noqa: E402
from ticketiq_pg.db.driver import TicketIQ  # noqa: E402

STEPS = 20
STATEMENTS = """
select query, calls, total_exec_time from pg_stat_statements
where dbid = (select oid from pg_database where datname = current_database())
"""


class _Marks:
    """The meter ``ticketiq_round`` opens and closes around its steps' window."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.at: list[dict[int, float]] = []

    def open(self) -> None:
        self.at.append(read_cpu(self.pids) or {})

    def close(self) -> None:
        self.at.append(read_cpu(self.pids) or {})


def _statements(conn: psycopg.Connection[Any]) -> dict[str, tuple[int, float]]:
    return {q: (c, t) for q, c, t in conn.execute(STATEMENTS).fetchall()}


async def main_async(runs: int) -> None:
    with bench_database() as bdb:
        db = await TicketIQ.connect(bdb.url, min_size=3, max_size=3)
        model = BenchModel()
        runner = make_runner(db, "server-cpu-windows", model)
        runner.leases.start()
        try:
            await ticketiq_round(runner, model, 1, STEPS, 1)  # warm: prepared statements
            with psycopg.connect(bdb.url, autocommit=True) as mon:
                me = mon.info.backend_pid
                kinds = {int(p): f"{kind} {name or ''}".strip() for p, kind, name in mon.execute(
                    "select pid, backend_type, application_name from pg_stat_activity")}
                pids = [p for p in kinds if p != me]
                windows: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
                steps = 0
                before = _statements(mon)
                for i in range(runs):
                    marks = _Marks(pids)
                    start = read_cpu(pids) or {}
                    r = await ticketiq_round(runner, model, 1, STEPS, 100 + i, meter=marks)
                    end = read_cpu(pids) or {}
                    opened, closed = marks.at
                    steps += r.steps
                    for p in pids:
                        windows["start"][p] += opened.get(p, 0.0) - start.get(p, 0.0)
                        windows["steps"][p] += closed.get(p, 0.0) - opened.get(p, 0.0)
                        windows["end"][p] += end.get(p, 0.0) - closed.get(p, 0.0)
                after = _statements(mon)
        finally:
            await runner.leases.stop()
            await db.close()
    print(f"{runs} runs of {STEPS} steps, {steps} steps in the windows")
    for window, by_pid in windows.items():
        print(f"{window}: {sum(by_pid.values()) / steps * 1e6:.0f} us of server CPU a step")
        for p, cpu in sorted(by_pid.items(), key=lambda kv: -kv[1]):
            if cpu / steps * 1e6 >= 2:
                print(f"    {cpu / steps * 1e6:6.0f} us  pid {p} ({kinds[p]})")
    print("statements, all windows (execution time and calls a step):")
    rows = []
    for query, (calls, ms) in after.items():
        calls0, ms0 = before.get(query, (0, 0.0))
        if calls - calls0:
            rows.append(((ms - ms0) * 1e3 / steps, (calls - calls0) / steps, query))
    for us, calls, query in sorted(rows, reverse=True)[:12]:
        print(f"    {us:7.1f} us {calls:6.3f}  {' '.join(query.split())[:90]}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/server_cpu_windows.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=32)
    asyncio.run(main_async(parser.parse_args().runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
