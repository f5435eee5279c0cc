"""10. Throughput against concurrency, and the database's cost per step.

For each simulated model latency L (0 and 20 ms) and each C of 1, 8, 32 and
128 runs at once, side by side in alternating rounds:

* A: C runs in this process through the real Runner (group commit on, the
  worker's default group of 4), each ``conc_steps`` steps of one read tool
  and a model that answers after L; the pool holds ``min(C + 2, 16)``
  connections (16 is the worker's default ``TICKETIQ_POOL_SIZE``);
* B: C clients, each its own connection, each step L of waiting then one
  raw single-statement ``UPDATE`` of the same checkpoint body (as section 1);
* A2 (C = 128 only): the same 128 runs split over 2 worker processes
  (``bench.concurrency_child``), started together.

Per arm: steps/s (the sum of steps over the sum of window time), the
server's CPU seconds per step (every server process's utime + stime from
``/proc``, so the backends, the WAL writer and the rest) and WAL bytes per
step (``pg_current_wal_lsn`` before and after).  Targets (issue 24): A / B
at least 0.8 at 32 and 128 at once; at 1 and 8 no lower than the 0.54 bound;
server CPU per step at most 3x B's at 32.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from ticketiq_pg.db.driver import TicketIQ

from .common import BenchDB, Sizes, cpu_between, read_cpu
from .throughput import RAW_UPDATE, _rate, _Round, raw_round, ticketiq_round
from .workload import SlowModel, make_runner

BOUND_1_8 = 0.54
TARGET_RATIO = 0.8
TARGET_CPU_X = 3.0
ROOT = Path(__file__).resolve().parent.parent


def rounds_for(c: int, steps: int, budget_steps: int) -> int:
    return max(4, min(60, budget_steps // (c * steps)))


class _Meter:
    """Server CPU seconds and WAL bytes inside one arm's windows, summed over its rounds.

    The server's processes are listed once (:meth:`refresh`, outside the windows;
    the pools' backends stay) and read from ``/proc`` as a window opens and closes;
    the WAL position is read on a connection of the meter's own.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn = psycopg.connect(url, autocommit=True)
        self.pids: list[int] = []
        self.cpu = 0.0
        self.wal = 0
        self.cpu_ok = True
        self._at: tuple[dict[int, float] | None, int] = (None, 0)

    def refresh(self) -> None:
        me = self.conn.info.backend_pid
        self.pids = [int(r[0]) for r in self.conn.execute(
            "select pid from pg_stat_activity").fetchall() if int(r[0]) != me]

    def _lsn(self) -> int:
        return int(self.conn.execute(
            "select pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])  # type: ignore[index]

    def open(self) -> None:
        self._at = (read_cpu(self.pids), self._lsn())

    def close(self) -> None:
        cpu1, wal1 = read_cpu(self.pids), self._lsn()
        spent = cpu_between(self._at[0], cpu1)
        if spent is None:
            self.cpu_ok = False
        else:
            self.cpu += spent
        self.wal += wal1 - self._at[1]

    async def around(self, work: Any) -> Any:
        self.refresh()
        self.open()
        result = await work
        self.close()
        return result

    def done(self) -> None:
        self.conn.close()


class _TwoProcesses:
    """A2: two worker processes of ``per`` runs each, started on one signal."""

    def __init__(self, url: str, per: int, rounds: int, steps: int, latency: float) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "bench.concurrency_child", "--url", url, "--runs", str(per),
             "--rounds", str(rounds), "--steps", str(steps), "--latency", str(latency),
             "--seq", str(7_000_000 + 100_000 * i)],
            env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for i in range(2)]
        for p in self.procs:
            assert p.stdout is not None
            if json.loads(p.stdout.readline()).get("event") != "ready":
                raise RuntimeError("a concurrency child did not start")

    async def round(self) -> _Round:
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = await asyncio.gather(*(asyncio.to_thread(p.stdout.readline)  # type: ignore[union-attr]
                                         for p in self.procs))
        done = [json.loads(line) for line in results]
        # the children's windows (their starts and ends left out), begun together
        seconds = max(d["seconds"] for d in done)
        return _Round(sum(d["steps"] for d in done), seconds, sum(d["cpu"] for d in done), [])

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                assert p.stdin is not None
                p.stdin.close()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    steps = sizes.conc_steps
    top = max(sizes.conc_levels)
    with psycopg.connect(bdb.url, autocommit=True) as conn:
        conn.execute("create table bench_raw (run_id integer primary key, state jsonb not null)")
        conn.execute("insert into bench_raw select g, '{}' from generate_series(0, %s) as g",
                     (top - 1,))
    out: dict[str, Any] = {"steps_per_run": steps, "levels": list(sizes.conc_levels),
                           "latencies_ms": [1000 * x for x in sizes.conc_latencies],
                           "by_latency": {}}
    raw_db = await TicketIQ.connect(bdb.url, min_size=top + 1, max_size=top + 1)
    seq = 10_000_000
    try:
        payloads: list[Any] = []
        for latency in sizes.conc_latencies:
            by_c: dict[str, Any] = {}
            for c in sizes.conc_levels:
                pool = min(c + 2, 16)
                db = await TicketIQ.connect(bdb.url, min_size=pool, max_size=pool)
                model = SlowModel(latency)
                runner = make_runner(db, f"bench-conc-{c}", model)
                runner.leases.start()
                two: _TwoProcesses | None = None
                meters = {k: _Meter(bdb.url) for k in ("A", "B")}
                try:
                    warm = await ticketiq_round(runner, model, c, steps, seq)
                    seq += 1
                    if not payloads:
                        async with db.pool.connection() as conn:  # type: ignore[union-attr]
                            cur = await conn.execute(
                                "select body from ticketiq.checkpoints where run_id = %s"
                                " order by step", (warm.run_ids[0],))
                            payloads = [row[0] for row in await cur.fetchall()]
                    await raw_round(raw_db, c, payloads, latency)
                    rounds = rounds_for(c, steps, sizes.conc_budget_steps)
                    if c == 128 and sizes.conc_two_processes:
                        two = _TwoProcesses(bdb.url, c // 2, 1, steps, latency)
                        await two.round()  # warm-up
                    arms: dict[str, list[_Round]] = {"A": [], "B": [], "A2": []}
                    meters["A"].refresh()
                    for _ in range(rounds):
                        arms["A"].append(await ticketiq_round(runner, model, c, steps, seq,
                                                              meter=meters["A"]))
                        seq += 1
                        arms["B"].append(await meters["B"].around(
                            raw_round(raw_db, c, payloads, latency)))
                        if two is not None:
                            arms["A2"].append(await two.round())
                finally:
                    for meter in meters.values():
                        meter.done()
                    if two is not None:
                        two.close()
                    await runner.leases.stop()
                    await db.close()
                fig = _figures(arms, meters, rounds, pool)
                by_c[str(c)] = fig
                log(f"  concurrency L={1000 * latency:g} ms c={c}: ticketiq "
                    f"{fig['ticketiq_steps_per_s']:,.0f} steps/s, raw UPDATE "
                    f"{fig['raw_update_steps_per_s']:,.0f}/s, ratio {fig['ratio']:.2f}"
                    + (f"; 2 processes {fig['two_processes_steps_per_s']:,.0f}/s "
                       f"(ratio {fig['two_processes_ratio']:.2f})" if "two_processes_ratio"
                       in fig else "")
                    + (f"; server CPU per step {fig['server_cpu_us_per_step']['ticketiq']:.0f} "
                       f"vs {fig['server_cpu_us_per_step']['raw_update']:.0f} us "
                       f"(x{fig['server_cpu_x']:.2f})" if fig.get("server_cpu_x") else ""))
            out["by_latency"][f"{1000 * latency:g}"] = by_c
    finally:
        await raw_db.close()
    return out


def _figures(arms: dict[str, list[_Round]], meters: dict[str, _Meter], rounds: int,
             pool: int) -> dict[str, Any]:
    a, b = _rate(arms["A"]), _rate(arms["B"])
    steps = {k: sum(r.steps for r in v) for k, v in arms.items()}
    fig: dict[str, Any] = {
        "rounds": rounds, "ticketiq_pool": pool,
        "ticketiq_steps_per_s": a, "raw_update_steps_per_s": b,
        "ratio": a / b if b else None,
        "client_cpu_us_per_step": {
            "ticketiq": 1e6 * sum(r.cpu for r in arms["A"]) / steps["A"],
            "raw_update": 1e6 * sum(r.cpu for r in arms["B"]) / steps["B"],
        },
        "wal_bytes_per_step": {"ticketiq": meters["A"].wal / steps["A"],
                               "raw_update": meters["B"].wal / steps["B"]},
    }
    if meters["A"].cpu_ok and meters["B"].cpu_ok:
        cpu_a = 1e6 * meters["A"].cpu / steps["A"]
        cpu_b = 1e6 * meters["B"].cpu / steps["B"]
        fig["server_cpu_us_per_step"] = {"ticketiq": cpu_a, "raw_update": cpu_b}
        fig["server_cpu_x"] = cpu_a / cpu_b if cpu_b else None
    if arms["A2"]:
        a2 = _rate(arms["A2"])
        fig["two_processes_steps_per_s"] = a2
        fig["two_processes_ratio"] = a2 / b if b else None
    return fig


__all__ = ["RAW_UPDATE", "run"]
