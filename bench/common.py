"""What every section shares: sizes, the server and database, statistics, pg_stat_statements."""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import PrivateCluster, create_database, drop_database

ENV_BENCH_URL = "TICKETIQ_BENCH_DATABASE_URL"
ENV_TEST_URL = "TICKETIQ_TEST_DATABASE_URL"


@dataclass(frozen=True)
class Sizes:
    """How big each section is: ``FULL`` for ``make bench``, ``SMOKE`` for CI."""

    name: str
    # 1. throughput: rounds of A/B pairs per concurrency, steps per run
    concurrency: tuple[int, ...]
    pairs: int
    steps_per_run: int
    # 2. peer: runs x steps, run at ``peer_concurrency`` at once, in ``peer_blocks`` A/B blocks
    peer_runs: int
    peer_steps: int
    peer_concurrency: int
    peer_blocks: int
    # 3. round trips: runs x steps per scenario
    rt_runs: int
    rt_steps: int
    # 4. lease renewal: runs held by ``lease_processes`` holders, ticks of ``lease_interval`` s
    lease_runs: int
    lease_processes: int
    lease_ticks: int
    lease_interval: float
    # 5. history: finished runs kept, sweeps per level, lapse cycles of ``lapsed`` runs
    history: tuple[int, ...]
    idle_sweeps: int
    lapse_cycles: int
    lapsed: int
    live_runs: int
    # 6. wake-up: trials through NOTIFY, through the poll (LISTEN off)
    notify_trials: int
    poll_trials: int
    poll_interval: float
    # 8. takeover: runs a killed process held (TICKETIQ_BENCH_LONG=1: the long size);
    # 9. memory: runs in flight whose worker's memory is measured
    takeover_runs: int = 1000
    takeover_runs_long: int = 10_000
    memory_runs: tuple[int, ...] = (1000, 10_000)
    # 10. concurrency: runs at once, model latencies (s), steps per run, steps per arm
    # and level (fewer rounds where more run at once), 128 over 2 processes too
    conc_levels: tuple[int, ...] = (1, 8, 32, 128)
    conc_latencies: tuple[float, ...] = (0.0, 0.02)
    conc_steps: int = 5
    conc_budget_steps: int = 1500
    conc_two_processes: bool = True
    # 2. peers: runs at once, each level's blocks alternating the three
    peer_levels: tuple[int, ...] = (1, 8)
    peer_repeats: int = 5  # each level's alternating blocks, repeated: medians of these
    # 13. a step's cost: runs (of ``cost_steps``) a round at 1 at once, rounds; the
    # levels of ours against the floor from processes, and their rounds
    cost_runs: int = 40
    cost_steps: int = 20
    cost_rounds: int = 6
    cost_levels: tuple[int, ...] = (1, 8, 32, 128)
    cost_level_rounds: int = 8
    # 14. capacity: runs per process, model wait (s), window (s), worker processes per arm
    cap_runs: int = 2000
    cap_latency: float = 1.0
    cap_window: float = 20.0
    cap_processes: tuple[int, ...] = (1, 2)
    # 15. adoption beside resume rows: claimed runs, resume rows of other runs, rounds
    lookup_runs: int = 1000
    lookup_rows: int = 100_000
    lookup_rounds: int = 2
    # 21. a step's server work split: calls an arm and round, rounds
    split_calls: int = 200
    split_rounds: int = 15


FULL = Sizes(
    name="full",
    concurrency=(1, 8),
    pairs=150,
    steps_per_run=5,
    peer_runs=200,
    peer_steps=20,
    peer_concurrency=8,
    peer_blocks=4,
    rt_runs=10,
    rt_steps=5,
    lease_runs=10_000,
    lease_processes=4,
    lease_ticks=5,
    lease_interval=2.0,
    history=(0, 100_000, 1_000_000),
    idle_sweeps=300,
    lapse_cycles=16,
    lapsed=5,
    live_runs=100,
    notify_trials=40,
    poll_trials=20,
    poll_interval=1.0,
)

SMOKE = Sizes(
    name="smoke",
    concurrency=(1, 8),
    pairs=2,
    steps_per_run=3,
    peer_runs=8,
    peer_steps=3,
    peer_concurrency=4,
    peer_blocks=2,
    rt_runs=2,
    rt_steps=2,
    lease_runs=200,
    lease_processes=4,
    lease_ticks=2,
    lease_interval=0.1,
    history=(0, 1_000),
    idle_sweeps=5,
    lapse_cycles=1,
    lapsed=2,
    live_runs=10,
    notify_trials=2,
    poll_trials=2,
    poll_interval=0.2,
    takeover_runs=20,
    takeover_runs_long=200,
    memory_runs=(20,),
    conc_levels=(1, 8),
    conc_latencies=(0.0, 0.02),
    conc_steps=3,
    conc_budget_steps=30,
    conc_two_processes=False,
    peer_levels=(1, 4),
    peer_repeats=2,
    cost_runs=2,
    cost_steps=3,
    cost_rounds=2,
    cost_levels=(1, 4),
    cost_level_rounds=2,
    cap_runs=100,
    cap_latency=0.2,
    cap_window=1.0,
    lookup_runs=20,
    lookup_rows=2_000,
    lookup_rounds=1,
    split_calls=20,
    split_rounds=1,
)


# -- statistics -------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear between closest ranks; None when empty."""
    data = sorted(values)
    if not data:
        return None
    if len(data) == 1:
        return data[0]
    rank = (len(data) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (rank - low)


def summary(values: list[float], scale: float = 1.0) -> dict[str, Any]:
    """n, p50, p95, max and mean of ``values`` times ``scale`` (e.g. 1000 for ms)."""
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None, "mean": None}
    scaled = [v * scale for v in values]
    return {
        "n": len(scaled),
        "p50": percentile(scaled, 50),
        "p95": percentile(scaled, 95),
        "max": max(scaled),
        "mean": statistics.fmean(scaled),
    }


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as t: ...`` then ``t[0]`` is the elapsed seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


# -- the server and the bench database ----------------------------------------------------


@dataclass
class Server:
    admin_url: str
    cluster: PrivateCluster | None
    source: str  # private cluster | $TICKETIQ_BENCH_DATABASE_URL | $TICKETIQ_TEST_DATABASE_URL

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()


def open_server() -> Server:
    """The server to measure on: the env URL if set, else a private durable cluster."""
    for env in (ENV_BENCH_URL, ENV_TEST_URL):
        url = os.environ.get(env)
        if url:
            return Server(url, None, f"${env}")
    cluster = PrivateCluster(fast=False).start()
    return Server(cluster.admin_url, cluster, "private cluster (fast=False: durable commits)")


@dataclass
class BenchDB:
    """A database of our own on the server, with the schema installed; dropped at the end."""

    admin_url: str
    url: str
    pgss: bool  # pg_stat_statements readable in this database
    pgss_note: str

    @classmethod
    def create(cls, admin_url: str, prefix: str = "tiq_bench") -> BenchDB:
        url = create_database(admin_url, prefix)
        with psycopg.connect(url, autocommit=True) as conn:
            install_sync(conn)
            pgss, note = _enable_pgss(conn)
        return cls(admin_url, url, pgss, note)

    def drop(self) -> None:
        drop_database(self.admin_url, self.url)

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True)


@contextmanager
def bench_database() -> Iterator[BenchDB]:
    """A :class:`BenchDB` on :func:`open_server`'s server, both gone at the end (scripts)."""
    server = open_server()
    try:
        bdb = BenchDB.create(server.admin_url)
        try:
            yield bdb
        finally:
            bdb.drop()
    finally:
        server.stop()


def _enable_pgss(conn: psycopg.Connection[Any]) -> tuple[bool, str]:
    try:
        conn.execute("create extension if not exists pg_stat_statements")
        conn.execute("select count(*) from pg_stat_statements")
    except psycopg.Error as exc:
        return False, f"pg_stat_statements unavailable ({str(exc).strip()}): driver counts only"
    return True, "pg_stat_statements (preloaded by the private cluster)"


def machine(admin_url: str) -> dict[str, Any]:
    """The machine and server the figures come from."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "psycopg": psycopg.__version__,
    }
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    with psycopg.connect(admin_url, autocommit=True) as conn:
        info["postgres"] = conn.execute("show server_version").fetchone()[0]  # type: ignore[index]
        settings = {}
        for name in (
            "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes",
            "shared_buffers", "max_wal_size", "shared_preload_libraries",
        ):
            settings[name] = conn.execute(f"show {name}").fetchone()[0]  # type: ignore[index]
        info["postgres_settings"] = settings
    return info


# -- pg_stat_statements -------------------------------------------------------------------

_FUNCTION_RE = re.compile(r"\bticketiq\.(\w+)\s*\(", re.IGNORECASE)

PGSS_SQL = """
select s.query, s.calls, s.total_exec_time, s.rows, s.wal_bytes::float8 as wal_bytes,
       s.shared_blks_hit + s.shared_blks_read as blocks
from pg_stat_statements as s
where s.dbid = (select d.oid from pg_database as d where d.datname = %s)
  and s.toplevel
"""


def statement_kind(query: str) -> str | None:
    """Name a pg_stat_statements entry: the ticketiq function it calls, or a bench label."""
    m = _FUNCTION_RE.search(query)
    if m:
        return m.group(1).lower()
    lowered = query.lower()
    if "bench_raw" in lowered and lowered.lstrip().startswith("update"):
        return "raw_update"
    return None


def _pgss_rows(url: str, dbname: str | None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(PGSS_SQL, (dbname or conn.info.dbname,)).fetchall())


class StatementSnapshot:
    """pg_stat_statements of one database at one moment, summed per statement kind.

    Read through ``url`` (a database where the extension exists) about database
    ``dbname`` (default: that same database).  ``diff(before)`` gives {kind: {calls,
    ms, mean_ms, rows, wal_bytes, blocks}} for what ran in between; ``calls_since``
    counts every top-level statement (any kind).
    """

    def __init__(self, url: str, enabled: bool, dbname: str | None = None) -> None:
        self.enabled = enabled
        self.by_kind: dict[str, dict[str, float]] = {}
        self.total_calls = 0.0
        if not enabled:
            return
        for query, calls, ms, rows, wal, blocks in _pgss_rows(url, dbname):
            if "pg_stat_statements" in query:
                continue
            self.total_calls += calls
            kind = statement_kind(query)
            if kind is None:
                continue
            acc = self.by_kind.setdefault(
                kind, {"calls": 0.0, "ms": 0.0, "rows": 0.0, "wal_bytes": 0.0, "blocks": 0.0}
            )
            acc["calls"] += calls
            acc["ms"] += ms
            acc["rows"] += rows
            acc["wal_bytes"] += wal or 0.0
            acc["blocks"] += blocks

    def diff(self, before: StatementSnapshot) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for kind, now in self.by_kind.items():
            then = before.by_kind.get(kind, {})
            delta = {k: v - then.get(k, 0.0) for k, v in now.items()}
            if delta["calls"] <= 0:
                continue
            delta["mean_ms"] = delta["ms"] / delta["calls"]
            out[kind] = delta
        return out

    def calls_since(self, before: StatementSnapshot) -> float:
        return self.total_calls - before.total_calls


def as_dict(obj: Any) -> Any:
    return asdict(obj)


HOT_SQL = """
select relname, n_tup_upd, n_tup_hot_upd from pg_stat_user_tables
where schemaname = 'ticketiq' and relname in ('runs', 'calls', 'checkpoints') order by relname
"""


def hot_updates(url: str) -> dict[str, dict[str, int]]:
    """Updates and HOT updates per table (after the backends that did them have exited)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return {name: {"updates": int(upd), "hot_updates": int(hot)}
                for name, upd, hot in conn.execute(HOT_SQL).fetchall()}


# -- the server's CPU time, from /proc ---------------------------------------------------


def read_cpu(pids: list[int]) -> dict[int, float] | None:
    """CPU seconds so far of each of the server's processes ``pids``, by pid.

    From ``/proc/<pid>/schedstat`` (time on a CPU, in nanoseconds; ``stat``'s
    utime + stime count 10 ms ticks, too coarse for a round of short statements),
    so only when the server runs on this machine; None otherwise.  List the pids
    with ``select pid from pg_stat_activity``: every backend and background
    process (the WAL writer, the checkpointer...).
    """
    out: dict[int, float] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as fh:
                out[pid] = int(fh.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return out or None


def cpu_between(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
    """Server CPU seconds spent between two :func:`server_cpu` readings (new pids from 0)."""
    if before is None or after is None:
        return None
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


# -- A/B runs of an older build beside this one (bench.engine_ab, bench.takeover_ab) ----

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def revision_tree(rev: str) -> Iterator[Path]:
    """``rev`` checked out beside this tree (a detached git worktree), removed at the end."""
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        tree = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                           check=False, capture_output=True)


def run_in_tree(tree: Path, code: str, args: list[str], env: dict[str, str] | None = None
                ) -> Any:
    """``code`` run by this Python in a process of its own with ``tree`` first on its path
    (its children too), so it measures that tree's ``ticketiq_pg`` and SQL: the JSON it
    prints last."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=tree, env=full,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"arm {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def alternate(arms: dict[str, Any], rounds: int, digits: int = 1
              ) -> tuple[dict[str, list[dict[str, float]]], dict[str, dict[str, float]]]:
    """Each arm's figures (``arms[name]()``), ``rounds`` times, the order reversed every
    other round, with the load average beside each: (every round's, the medians)."""
    rows: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
    names = list(arms)
    for r in range(rounds):
        for arm in names if r % 2 == 0 else names[::-1]:
            got = arms[arm]()
            got["loadavg"] = os.getloadavg()[0]
            rows[arm].append(got)
            print(f"round {r + 1} {arm}: " + ", ".join(
                f"{k} {v:.{digits}f}" for k, v in got.items()), flush=True)
    medians = {arm: {k: statistics.median(row[k] for row in rs) for k in rs[0]}
               for arm, rs in rows.items()}
    return rows, medians
