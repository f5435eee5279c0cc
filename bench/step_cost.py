"""13. Where a step's time goes, and the floor as the database gives it.

Part 1, one run at once: ours (one run through the Runner, a read a step, no model
wait) against the floor (one single-statement ``UPDATE`` a step of the very bodies
ours wrote, on one connection), in alternating rounds.  Per arm: wall and client CPU
a step; the server's statement time (pg_stat_statements), CPU (``/proc``) and WAL
bytes a step; what is left of the wall (the commit's flush, the network, wake-ups).
Ours' server time is split with ``pg_stat_statements.track = all`` into the
function's main statement (the fenced update with the insert), the foreign-key
check and the rest of the function (the body's checks, PL/pgSQL); its client CPU by
a ``cProfile`` pass on CPU time, each function's own time put in a bucket by module
(a builtin's by its caller's), scaled to the unprofiled CPU.

Part 2, at each C of ``cost_levels``: C runs at once in this process (group commit,
no model wait) against the floor from C connections spread over ``min(C, 8)``
processes (``bench.floor_child``), so no one process's client bounds it: steps/s and
client + server CPU a step.  At 32 and 128, a third arm runs the C runs over two
worker processes (``bench.concurrency_child``), as production runs two app processes.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from ticketiq_pg.db.driver import TicketIQ

from .common import BenchDB, Sizes, StatementSnapshot
from .concurrency import _Meter, _TwoProcesses
from .report import INFO, MISS, OK, _f, _row
from .throughput import ticketiq_round
from .workload import BenchModel, make_runner, start_kwargs

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {1: 0.5, 8: 0.5, 32: 0.85, 128: 0.85}  # ours / the floor (issue 45)
CPU_TARGET_X = 2.0  # client + server CPU a step at 8 at once, ours / the floor's
#: Issue 45: server CPU a step at most 2x the floor's at 1 and 8 at once, client CPU
#: at 1 at once; at 128, steps/s per primary core and WAL bytes a step (scaling.md).
SERVER_X_LEVELS = (1, 8)
CLIENT_X_LEVELS = (1,)
CAPACITY_LEVEL = 128
#: Levels where ours also runs over two worker processes, as production runs two app
#: processes (``bench.concurrency_child``): one process's client bounds it there.
TWO_PROCESS_LEVELS = (32, 128)
BUCKETS = (  # first match wins
    ("seal, canonical JSON", ("ticketiq_pg/seal.py", "/json/", "hmac.py")),
    ("db layer", ("ticketiq_pg/db/",)),
    ("psycopg, pool", ("/psycopg/", "/psycopg_pool/")),
    ("asyncio", ("/asyncio/", "selectors.py")),
    ("model, tools (bench)", ("/bench/",)),
    ("step loop", ("ticketiq_pg/",)),
)


def bucket_of(filename: str) -> str:
    for name, marks in BUCKETS:
        if any(m in filename for m in marks):
            return name
    return "other"


def split_profile(stats: dict[Any, Any]) -> dict[str, float]:
    """Own CPU seconds by bucket; a builtin's (``~``) goes to its callers' buckets."""
    out: dict[str, float] = {}
    for (filename, _line, _name), (_cc, _nc, tt, _ct, callers) in stats.items():
        if filename != "~" or not callers:
            key = bucket_of(filename) if filename != "~" else "other"
            out[key] = out.get(key, 0.0) + tt
            continue
        for (cfile, _cl, _cn), edge in callers.items():
            key = bucket_of(cfile) if cfile != "~" else "other"
            out[key] = out.get(key, 0.0) + edge[2]
    return out


def _db_name(url: str) -> str:
    return url.rsplit("/", 1)[-1]


async def _floor_conn_round(conn: psycopg.AsyncConnection, bodies: list[Any],
                            repeat: int) -> tuple[int, float, float]:
    cpu0, t0 = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        for body in bodies:
            await conn.execute("update bench_raw_floor set state = %s where run_id = 0",
                               (Jsonb(body),), prepare=True)
    return len(bodies) * repeat, time.perf_counter() - t0, time.process_time() - cpu0


def _exec_ms(snap1: StatementSnapshot, snap0: StatementSnapshot, kind: str) -> tuple[float, float]:
    d = snap1.diff(snap0).get(kind, {})
    return d.get("ms", 0.0), d.get("calls", 0.0)


def _nested(url: str) -> dict[str, float]:
    """ms by nested statement of the step (track = all), since the last reset."""
    sql = ("select query, calls, total_exec_time from pg_stat_statements where dbid ="
           " (select oid from pg_database where datname = current_database())")
    out = {"function": 0.0, "main statement": 0.0, "foreign key check": 0.0, "calls": 0.0}
    with psycopg.connect(url, autocommit=True) as conn:
        for query, calls, ms in conn.execute(sql).fetchall():
            q = " ".join(query.split()).lower()
            if "ticketiq.write_checkpoint(" in q and q.startswith("select * from"):
                out["function"] += ms
                out["calls"] += calls
            elif q.startswith("with fenced as ( update ticketiq.runs"):
                out["main statement"] += ms
            elif q.startswith('select 1 from only "ticketiq"."runs"'):
                out["foreign key check"] += ms
    return out


class _FloorProcesses:
    """The floor from ``conns`` connections over ``procs`` processes, started on one signal."""

    def __init__(self, url: str, conns: int, procs: int, bodies_file: str, repeat: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        per = [conns // procs + (1 if i < conns % procs else 0) for i in range(procs)]
        firsts = [sum(per[:i]) for i in range(procs)]
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "bench.floor_child", "--url", url, "--conns", str(n),
             "--first", str(first), "--bodies", bodies_file, "--repeat", str(repeat)],
            env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for n, first in zip(per, firsts, strict=True)]
        for p in self.procs:
            assert p.stdout is not None
            if json.loads(p.stdout.readline()).get("event") != "ready":
                raise RuntimeError("a floor child did not start")

    async def round(self) -> tuple[int, float, float]:
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        lines = await asyncio.gather(*(asyncio.to_thread(p.stdout.readline)  # type: ignore[union-attr]
                                       for p in self.procs))
        done = [json.loads(line) for line in lines]
        return (sum(d["steps"] for d in done), max(d["seconds"] for d in done),
                sum(d["cpu"] for d in done))

    def close(self) -> None:
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.close()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


async def _one_at_once(bdb: BenchDB, sizes: Sizes, bodies: list[Any], log: Any) -> dict[str, Any]:
    db = await TicketIQ.connect(bdb.url, min_size=2, max_size=2)
    model = BenchModel()
    runner = make_runner(db, "bench-cost", model)
    runner.leases.start()
    floor = await psycopg.AsyncConnection.connect(bdb.url, autocommit=True)
    meters = {"ours": _Meter(bdb.url), "floor": _Meter(bdb.url)}
    acc = {arm: {"steps": 0, "seconds": 0.0, "cpu": 0.0, "exec_ms": 0.0} for arm in meters}
    steps = len(bodies)
    try:
        await ticketiq_round(runner, model, 1, steps, 1)  # warm: prepared statements
        await _floor_conn_round(floor, bodies, 1)
        for rnd in range(sizes.cost_rounds):
            for arm in ("ours", "floor") if rnd % 2 == 0 else ("floor", "ours"):
                meter = meters[arm]
                meter.refresh()
                snap0 = StatementSnapshot(bdb.url, bdb.pgss)
                if arm == "ours":
                    meter.open()
                    n, sec, cpu = 0, 0.0, 0.0
                    for i in range(sizes.cost_runs):
                        r = await ticketiq_round(runner, model, 1, steps, 10 + rnd * 10_000 + i)
                        n, sec, cpu = n + r.steps, sec + r.seconds, cpu + r.cpu
                    meter.close()
                    kind = "write_checkpoint"
                else:
                    meter.open()
                    n, sec, cpu = await _floor_conn_round(floor, bodies, sizes.cost_runs)
                    meter.close()
                    kind = "raw_update"
                ms, _calls = _exec_ms(StatementSnapshot(bdb.url, bdb.pgss), snap0, kind)
                a = acc[arm]
                a["steps"] += n
                a["seconds"] += sec
                a["cpu"] += cpu
                a["exec_ms"] += ms
        out: dict[str, Any] = {}
        for arm, a in acc.items():
            n = a["steps"]
            wall, cpu, exe = a["seconds"] / n * 1e6, a["cpu"] / n * 1e6, a["exec_ms"] * 1e3 / n
            out[arm] = {
                "steps": n, "steps_per_s": n / a["seconds"], "wall_us": wall,
                "client_cpu_us": cpu, "server_exec_us": exe,
                "server_cpu_us": meters[arm].cpu / n * 1e6 if meters[arm].cpu_ok else None,
                "wal_bytes": meters[arm].wal / n,
                "rest_us": wall - cpu - exe,  # the commit's flush, the network, wake-ups
            }
        out["ratio"] = out["ours"]["steps_per_s"] / out["floor"]["steps_per_s"]
        out["server_split_us"] = await _server_split(bdb, runner, model, steps, sizes)
        out["client_split_us"] = await _client_split(runner, model, steps, sizes,
                                                     out["ours"]["client_cpu_us"])
        o, f = out["ours"], out["floor"]
        log(f"  1 at once: ours {o['wall_us']:.0f} us a step (client {o['client_cpu_us']:.0f},"
            f" server {o['server_exec_us']:.0f}, rest {o['rest_us']:.0f}); floor "
            f"{f['wall_us']:.0f} (client {f['client_cpu_us']:.0f}, server "
            f"{f['server_exec_us']:.0f}, rest {f['rest_us']:.0f})")
        return out
    finally:
        for m in meters.values():
            m.done()
        await floor.close()
        await runner.leases.stop()
        await db.close()


async def _server_split(bdb: BenchDB, runner: Any, model: BenchModel, steps: int,
                        sizes: Sizes) -> dict[str, float]:
    """The function's time split by its nested statements (track = all, own connections)."""
    if not bdb.pgss:
        return {}
    tracked = make_conninfo(bdb.url, options="-c pg_stat_statements.track=all")
    db = await TicketIQ.connect(tracked, min_size=1, max_size=1)
    split_runner = make_runner(db, "bench-cost-split", model)
    split_runner.leases.start()
    try:
        await ticketiq_round(split_runner, model, 1, steps, 3)
        with psycopg.connect(bdb.url, autocommit=True) as conn:
            conn.execute("select pg_stat_statements_reset()")
        for i in range(max(2, sizes.cost_runs // 2)):
            await ticketiq_round(split_runner, model, 1, steps, 20_000 + i)
        ms = _nested(bdb.url)
    finally:
        await split_runner.leases.stop()
        await db.close()
    n = ms.pop("calls") or 1.0
    total = ms["function"]
    return {"function": total * 1e3 / n, "main statement": ms["main statement"] * 1e3 / n,
            "foreign key check": ms["foreign key check"] * 1e3 / n,
            "rest of the function (checks, PL/pgSQL)":
                (total - ms["main statement"] - ms["foreign key check"]) * 1e3 / n}


async def _client_split(runner: Any, model: BenchModel, steps: int, sizes: Sizes,
                        cpu_us: float) -> dict[str, float]:
    """Ours' client CPU a step by bucket: shares of a CPU-time profile, scaled to ``cpu_us``."""
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for i in range(max(2, sizes.cost_runs // 2)):
        await ticketiq_round(runner, model, 1, steps, 30_000 + i)
    prof.disable()
    by = split_profile(pstats.Stats(prof).stats)  # type: ignore[attr-defined]
    total = sum(by.values()) or 1.0
    return {k: v / total * cpu_us for k, v in sorted(by.items(), key=lambda kv: -kv[1])}


async def _levels(bdb: BenchDB, sizes: Sizes, bodies: list[Any], log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    top = max(sizes.cost_levels)
    with psycopg.connect(bdb.url, autocommit=True) as conn:
        conn.execute("insert into bench_raw_floor select g, '{}' from generate_series(1, %s) as g"
                     " on conflict do nothing", (top,))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(bodies, fh)
    try:
        for c in sizes.cost_levels:
            out[str(c)] = await _level(bdb, sizes, c, len(bodies), fh.name, log)
    finally:
        os.unlink(fh.name)
    return out


async def _level(bdb: BenchDB, sizes: Sizes, c: int, steps: int, bodies_file: str,
                 log: Any) -> dict[str, Any]:
    """C at once, ours against the floor in alternating rounds.

    Every figure is the median of the rounds' (each ratio of a round's pair, the two
    arms side by side); the sums over all rounds are kept beside them (``pooled``).
    Ours' server CPU is read over the window the steps and the client's CPU are
    timed in (``server_cpu_us``), and over its whole runs, the starts, final steps,
    seals and hand-ons included, per step of the window (``server_cpu_run_us``):
    the floor has no runs to start, so the first is its like; the second is what a
    primary carries a step of a 20-step run (capacity, WAL).
    """
    size = max(2, min(c + 2, 16))
    db = await TicketIQ.connect(bdb.url, min_size=size, max_size=size)
    model = BenchModel()
    runner = make_runner(db, f"bench-cost-{c}", model)
    runner.leases.start()
    # a round of at least ~32 runs' steps: at 1 at once a single run's window is too short
    repeat = max(1, 32 // c)
    floor = _FloorProcesses(bdb.url, c, min(c, 8), bodies_file, repeat)
    meters = {"ours": _Meter(bdb.url), "floor": _Meter(bdb.url)}
    two = (_TwoProcesses(bdb.url, c // 2, 1, steps, 0.0)
           if c in TWO_PROCESS_LEVELS and c >= 2 else None)
    if two is not None:
        meters["ours_2_processes"] = _Meter(bdb.url)
    arms = list(meters)
    whole = _Meter(bdb.url)  # ours' whole runs
    each: dict[str, list[dict[str, float]]] = {arm: [] for arm in meters}
    rounds = max(sizes.cost_level_rounds, 1)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    try:
        await ticketiq_round(runner, model, c, steps, 40_000 + c)
        await floor.round()
        if two is not None:
            await two.round()
        for rnd in range(rounds):
            for arm in arms if rnd % 2 == 0 else arms[::-1]:
                meter = meters[arm]
                meter.refresh()
                cpu0, wal0 = meter.cpu, meter.wal
                if arm == "ours":
                    whole.refresh()
                    run0, run_wal0 = whole.cpu, whole.wal
                    whole.open()
                    got = (0, 0.0, 0.0)
                    for i in range(repeat):
                        r = await ticketiq_round(runner, model, c, steps,
                                                 50_000 + c * 1000 + rnd * 40 + i, meter=meter)
                        got = (got[0] + r.steps, got[1] + r.seconds, got[2] + r.cpu)
                    whole.close()
                    run_cpu, run_wal = whole.cpu - run0, whole.wal - run_wal0
                elif arm == "floor":
                    meter.open()
                    got = await floor.round()
                    meter.close()
                    run_cpu, run_wal = meter.cpu - cpu0, meter.wal - wal0
                else:  # two processes: their windows timed, the server over whole runs
                    assert two is not None
                    meter.open()
                    r2 = await two.round()
                    meter.close()
                    got = (r2.steps, r2.seconds, r2.cpu)
                    run_cpu, run_wal = meter.cpu - cpu0, meter.wal - wal0
                n, sec, cpu = got
                server = meter.cpu - cpu0
                each[arm].append({
                    "steps": n, "seconds": sec, "steps_per_s": n / sec,
                    "client_cpu_us": cpu / n * 1e6, "server_cpu_us": server / n * 1e6,
                    "server_cpu_run_us": run_cpu / n * 1e6, "wal_bytes": run_wal / n,
                    "cpu_us": (cpu + server) / n * 1e6})
    finally:
        floor.close()
        if two is not None:
            two.close()
        for m in (*meters.values(), whole):
            m.done()
        await runner.leases.stop()
        await db.close()
    cpu_ok = all(m.cpu_ok for m in (*meters.values(), whole))
    fig: dict[str, Any] = {"floor_processes": min(c, 8), "rounds": rounds, "repeat": repeat,
                           "load_average_at_start": load_at_start,
                           "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    for arm, rs in each.items():
        arm_fig: dict[str, Any] = {k: statistics.median(r[k] for r in rs) for k in rs[0]
                                   if k not in ("steps", "seconds")}
        n = sum(r["steps"] for r in rs)
        arm_fig["pooled"] = {
            "steps_per_s": n / sum(r["seconds"] for r in rs),
            **{k: sum(r[k] * r["steps"] for r in rs) / n
               for k in ("client_cpu_us", "server_cpu_us", "server_cpu_run_us", "wal_bytes")}}
        arm_fig["rounds"] = rs
        if not cpu_ok:
            for k in ("server_cpu_us", "server_cpu_run_us"):
                arm_fig[k] = None
        # what one core of the primary carries at this CPU a step (whole runs)
        run_us = arm_fig["server_cpu_run_us"]
        arm_fig["steps_per_server_core_s"] = 1e6 / run_us if run_us else None
        fig[arm] = arm_fig

    def paired(key: str, arm: str = "ours") -> float | None:
        """The median of the rounds' ours / floor, each round beside its pair."""
        pairs = [(o[key], f[key]) for o, f in zip(each[arm], each["floor"], strict=True)]
        if not cpu_ok and "server" in key:
            return None
        return statistics.median(o / f for o, f in pairs if f)

    fig["ratio"] = paired("steps_per_s")
    fig["cpu_x"] = paired("cpu_us")
    fig["client_x"] = paired("client_cpu_us")
    fig["server_x"] = paired("server_cpu_us")
    # whole runs against the floor's steps: what a primary carries, not a step's own work
    fig["server_run_x"] = (fig["ours"]["server_cpu_run_us"] / fig["floor"]["server_cpu_us"]
                           if cpu_ok else None)
    if two is not None:
        # the server over whole runs: a child's round starts and ends its runs
        fig["ratio_2_processes"] = paired("steps_per_s", "ours_2_processes")
        fig["cpu_x_2_processes"] = paired("cpu_us", "ours_2_processes")
    log(f"  {c} at once: ours {fig['ours']['steps_per_s']:,.0f} steps/s, floor "
        f"{fig['floor']['steps_per_s']:,.0f} ({fig['ratio']:.2f}); CPU a step "
        f"{fig['ours']['cpu_us']:.0f} vs {fig['floor']['cpu_us']:.0f} us (x{fig['cpu_x']:.2f});"
        + (f" over 2 processes {fig['ours_2_processes']['steps_per_s']:,.0f} steps/s"
           f" ({fig['ratio_2_processes']:.2f});" if two is not None else "")
        + f" load {fig['load_average_at_start'][0]}-{fig['load_average_at_end'][0]}")
    return fig


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=1)
    runner = make_runner(db, "bench-cost-sample", BenchModel())
    try:
        sample = await runner.start_and_run(**start_kwargs(900_000, "reads", sizes.cost_steps))
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            cur = await conn.execute("select body from ticketiq.checkpoints where run_id = %s"
                                     " order by step", (sample.run_id,))
            bodies = [row[0] for row in await cur.fetchall()]
    finally:
        await db.close()
    with psycopg.connect(bdb.url, autocommit=True) as conn:
        conn.execute("create table bench_raw_floor (run_id integer primary key, state jsonb)")
        conn.execute("insert into bench_raw_floor values (0, '{}')")
    out = {"steps_per_run": len(bodies),
           "body_bytes": sum(len(json.dumps(b)) for b in bodies) / len(bodies)}
    out["one_at_once"] = await _one_at_once(bdb, sizes, bodies, log)
    out["by_concurrency"] = await _levels(bdb, sizes, bodies, log)
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    one = res["one_at_once"]
    ours, floor = one["ours"], one["floor"]
    out = [_row("13", "a step at 1 at once: wall, client CPU, server, the rest (us)",
                f"{ours['wall_us']:.0f} = {ours['client_cpu_us']:.0f} + "
                f"{ours['server_exec_us']:.0f} + {ours['rest_us']:.0f}",
                f"floor {floor['wall_us']:.0f} = {floor['client_cpu_us']:.0f} + "
                f"{floor['server_exec_us']:.0f} + {floor['rest_us']:.0f}",
                key="step_cost.one_at_once.ours.wall_us", value=ours["wall_us"])]
    for name, us in one.get("client_split_us", {}).items():
        out.append(_row("13", f"  client CPU: {name}", f"{us:.0f} us a step"))
    for name, us in one.get("server_split_us", {}).items():
        out.append(_row("13", f"  server: {name}", f"{us:.0f} us a step"))
    for c, fig in res["by_concurrency"].items():
        target = TARGETS.get(int(c))
        ratio = fig["ratio"]
        out.append(_row(
            "13", f"ours / the floor ({fig['floor_processes']} processes), {c} at once",
            f"{_f(fig['ours']['steps_per_s'], 0)} steps/s ({_f(ratio)})",
            f"floor {_f(fig['floor']['steps_per_s'], 0)} steps/s",
            f">= {target}" if target else "",
            (OK if ratio >= target else MISS) if target else INFO,
            f"step_cost.by_concurrency.{c}.ratio", ratio))
        if "ratio_2_processes" in fig:
            r2 = fig["ratio_2_processes"]
            out.append(_row(
                "13", f"  ours over 2 processes (production's two), {c} at once",
                f"{_f(fig['ours_2_processes']['steps_per_s'], 0)} steps/s ({_f(r2)})",
                f"floor {_f(fig['floor']['steps_per_s'], 0)} steps/s",
                f">= {target}" if target else "",
                (OK if r2 >= target else MISS) if target else INFO,
                f"step_cost.by_concurrency.{c}.ratio_2_processes", r2))
        cpu_target = int(c) == 8
        out.append(_row(
            "13", f"  CPU a step, client + server, {c} at once",
            f"{fig['ours']['cpu_us']:.0f} us (x{fig['cpu_x']:.2f})",
            f"floor {fig['floor']['cpu_us']:.0f} us",
            f"<= {CPU_TARGET_X}x" if cpu_target else "",
            (OK if fig["cpu_x"] <= CPU_TARGET_X else MISS) if cpu_target else INFO,
            f"step_cost.by_concurrency.{c}.cpu_x", fig["cpu_x"]))
        server_x = fig.get("server_x")
        if int(c) in SERVER_X_LEVELS and server_x is not None:
            run = fig["ours"].get("server_cpu_run_us")
            whole = (f"; whole runs {run:.0f} us (x{fig['server_run_x']:.2f})"
                     if run and fig.get("server_run_x") else "")
            out.append(_row(
                "13", f"  server CPU a step, {c} at once (issue 45)",
                f"{fig['ours']['server_cpu_us']:.0f} us (x{server_x:.2f}){whole}",
                f"floor {fig['floor']['server_cpu_us']:.0f} us", "<= 2.0x",
                OK if server_x <= 2.0 else MISS,
                f"step_cost.by_concurrency.{c}.server_x", server_x))
        if int(c) in CLIENT_X_LEVELS and "client_x" in fig:
            out.append(_row(
                "13", f"  client CPU a step, {c} at once (issue 45)",
                f"{fig['ours']['client_cpu_us']:.0f} us (x{fig['client_x']:.2f})",
                f"floor {fig['floor']['client_cpu_us']:.0f} us", "<= 2.0x",
                OK if fig["client_x"] <= 2.0 else MISS,
                f"step_cost.by_concurrency.{c}.client_x", fig["client_x"]))
        per_core = fig["ours"].get("steps_per_server_core_s")
        if int(c) == CAPACITY_LEVEL and per_core:
            out.append(_row(
                "13", f"  capacity: steps/s per primary core, WAL a step, {c} at once",
                f"{per_core:,.0f} steps/s, {fig['ours']['wal_bytes']:,.0f} B",
                f"floor {fig['floor']['steps_per_server_core_s']:,.0f} steps/s, "
                f"{fig['floor']['wal_bytes']:,.0f} B", "", INFO,
                f"step_cost.by_concurrency.{c}.ours.steps_per_server_core_s", per_core))
    return out
