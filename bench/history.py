"""5. Sweep and adopt cost versus history: 0, 100,000 and 1,000,000 finished runs kept.

History is written set-based (bench only, as the table owner): finished
(completed) runs in ``ticketiq.runs``, the table the sweep and adoption
read.  Their checkpoints and calls are not written: those tables are only
ever reached by primary key (run id, step), so they cost a B-tree descent.
At every level there are also ``live_runs`` running runs with live leases.
After each bulk load: VACUUM ANALYZE (as autovacuum would) and a CHECKPOINT,
so the load's own writes do not land in the timings.

At each level, through the driver, each call timed by the client (so it
includes the round trip and the durable commit):

* ``sweep_lapsed`` with nothing lapsed, ``idle_sweeps`` times;
* ``lapse_cycles`` times: ``lapsed`` runs whose process "died" after a first
  checkpoint lapse (0.1 s leases), one ``sweep_lapsed`` claims them all,
  then ``adopt_run`` adopts each (and, apart, once when nothing is left).

pg_stat_statements gives the database's own mean time for each (no round
trip, no commit), which is where a growing history would show first.

The plans the functions really ran come from auto_explain (ANALYZE, BUFFERS,
nested statements) on one extra call of each, sent to the client as
NOTICEs; where auto_explain cannot be loaded, EXPLAIN (ANALYZE, BUFFERS) of
the function's query stands in.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import psycopg

from ticketiq_pg.db.driver import TicketIQ

from .common import BenchDB, Sizes, StatementSnapshot, summary
from .workload import start_lapsing_run

INSERT_HISTORY = """
insert into ticketiq.runs (run_id, owner, run_as, channel, entry_point, correlation_id, input,
    status, epoch, last_step, created_at, updated_at, finished_at)
select gen_random_uuid(), 'history', 'history', 'playground', 'a2a', 'history-' || g,
       '{"ticket": "OPS-1"}', 'completed', 1, 5, t, t, t
from generate_series(%s::bigint, %s::bigint) as g,
     lateral (select now() - interval '30 days' + g * interval '1 second') as s (t)
"""

INSERT_LIVE = """
insert into ticketiq.runs (run_id, owner, run_as, channel, entry_point, correlation_id, status,
    epoch, lease_holder, lease_expires_at, created_at, updated_at)
select gen_random_uuid(), 'bench', 'bench', 'bench', 'bench', 'live-' || g, 'running', 1,
       'bench-live', now() + interval '1 day', now(), now()
from generate_series(1, %s) as g
"""

AUTO_EXPLAIN = (
    "load 'auto_explain'",
    "set auto_explain.log_min_duration = 0",
    "set auto_explain.log_analyze = on",
    "set auto_explain.log_buffers = on",
    "set auto_explain.log_timing = on",
    "set auto_explain.log_nested_statements = on",
    "set auto_explain.log_level = notice",
    "set client_min_messages = notice",
)

# What the functions run, for EXPLAIN when auto_explain is not available.
FALLBACK = {
    "sweep": "select r.run_id from ticketiq.runs as r where r.status = 'running'"
    " and r.lease_expires_at <= now() order by r.lease_expires_at limit 1000",
    "adopt": "select r.run_id from ticketiq.runs as r where r.status = 'claimed'"
    " order by r.updated_at limit 1",
}

_INDEX_RE = re.compile(
    r"(?:Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? using (\w+)"
)
_SEQ_RE = re.compile(r"Seq Scan on (\w+)")
_BUFFERS_RE = re.compile(r"Buffers: shared (?:hit=(\d+))?\s*(?:read=(\d+))?")


def _plan_facts(text: str) -> dict[str, Any]:
    hit = read = 0
    for h, r in _BUFFERS_RE.findall(text):
        hit += int(h or 0)
        read += int(r or 0)
    return {
        "indexes": sorted(set(_INDEX_RE.findall(text))),
        "seq_scans": sorted(set(_SEQ_RE.findall(text))),
        "buffers_hit": hit,
        "buffers_read": read,
    }


class Explainer:
    """A connection whose statements' nested plans come back as NOTICEs (auto_explain)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], auto: bool, note: str) -> None:
        self.conn = conn
        self.auto = auto
        self.note = note
        self.notices: list[str] = []
        conn.add_notice_handler(lambda diag: self.notices.append(diag.message_primary or ""))

    @classmethod
    async def open(cls, url: str) -> Explainer:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            for statement in AUTO_EXPLAIN:
                await conn.execute(statement)
        except psycopg.Error as exc:
            await conn.close()
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            return cls(conn, False, f"auto_explain unavailable ({str(exc).strip()}): "
                                    "EXPLAIN of the function's query instead")
        return cls(conn, True, "auto_explain (ANALYZE, BUFFERS) of the statement nested "
                               "in the function")

    async def plan(self, kind: str, call: Any) -> dict[str, Any]:
        """Run ``call(conn)`` and return the plan of the function's runs query."""
        self.notices.clear()
        await call(self.conn)
        needle = "lease_expires_at <= v_now" if kind == "sweep" else "'claimed'"
        text = next((n for n in self.notices if "ticketiq.runs" in n and needle in n), None)
        if text is None or not self.auto:
            cur = await self.conn.execute(
                "explain (analyze, buffers) " + FALLBACK[kind]  # type: ignore[arg-type]
            )
            text = "\n".join(row[0] for row in await cur.fetchall())
        return {"plan": text, **_plan_facts(text)}

    async def close(self) -> None:
        await self.conn.close()


async def _timed(coro: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = await coro
    return time.perf_counter() - t0, result


async def _lapse(db: TicketIQ, sizes: Sizes, seq: int) -> None:
    for i in range(sizes.lapsed):
        await start_lapsing_run(db, seq * 100 + i, ttl=0.1)
    await asyncio.sleep(0.15)


async def _level(
    bdb: BenchDB, db: TicketIQ, explainer: Explainer, sizes: Sizes, level: int, seq: int
) -> dict[str, Any]:
    idle: list[float] = []
    s0 = StatementSnapshot(bdb.url, bdb.pgss)
    for _ in range(sizes.idle_sweeps):
        seconds, swept = await _timed(db.processes.sweep_lapsed("bench-sweeper"))
        if swept:
            raise RuntimeError(f"an idle sweep claimed {len(swept)} runs")
        idle.append(seconds)
    s1 = StatementSnapshot(bdb.url, bdb.pgss)
    lapsed: list[float] = []
    adopt: list[float] = []
    adopt_none: list[float] = []
    for cycle in range(sizes.lapse_cycles):
        await _lapse(db, sizes, seq + cycle)
        seconds, swept = await _timed(db.processes.sweep_lapsed("bench-sweeper"))
        if len(swept) != sizes.lapsed:
            raise RuntimeError(f"sweep claimed {len(swept)} runs, expected {sizes.lapsed}")
        lapsed.append(seconds)
        for _ in swept:
            seconds, adopted = await _timed(db.adopt_run("bench-adopter", 8.0))
            if adopted is None:
                raise RuntimeError("adopt_run found nothing to adopt")
            adopt.append(seconds)
            await db.fail_run(adopted.run_id, adopted.epoch, "bench: done")
    s2 = StatementSnapshot(bdb.url, bdb.pgss)
    for _ in range(sizes.lapse_cycles):
        seconds, nothing = await _timed(db.adopt_run("bench-adopter", 8.0))
        assert nothing is None
        adopt_none.append(seconds)
    idle_db = s1.diff(s0).get("sweep_lapsed", {})
    cycle_db = s2.diff(s1)
    db_ms = {
        "sweep_idle": idle_db.get("mean_ms"),
        "sweep_lapsed": cycle_db.get("sweep_lapsed", {}).get("mean_ms"),
        "adopt": cycle_db.get("adopt_run", {}).get("mean_ms"),
    }
    # The plans, on one more cycle (not timed).
    plans = {"sweep_idle": await explainer.plan(
        "sweep", lambda c: db.processes.sweep_lapsed("bench-explain", conn=c))}
    await _lapse(db, sizes, seq + sizes.lapse_cycles)
    plans["sweep_lapsed"] = await explainer.plan(
        "sweep", lambda c: db.processes.sweep_lapsed("bench-explain", conn=c))
    adopted_runs: list[Any] = []

    async def adopt_one(conn: Any) -> None:
        adopted_runs.append(await db.adopt_run("bench-explain", 8.0, conn=conn))

    plans["adopt"] = await explainer.plan("adopt", adopt_one)
    while True:
        for adopted in adopted_runs:
            if adopted is not None:
                await db.fail_run(adopted.run_id, adopted.epoch, "bench: done")
        adopted_runs = [await db.adopt_run("bench-explain", 8.0)]
        if adopted_runs[0] is None:
            break
    return {
        "finished_runs": level,
        "sweep_idle_ms": summary(idle, 1000.0),
        "sweep_lapsed_ms": summary(lapsed, 1000.0),
        "adopt_ms": summary(adopt, 1000.0),
        "adopt_none_ms": summary(adopt_none, 1000.0),
        "db_mean_ms": db_ms if bdb.pgss else None,
        "plans": plans,
    }


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    with psycopg.connect(bdb.url, autocommit=True) as conn:
        conn.execute(INSERT_LIVE, (sizes.live_runs,))
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=2)
    explainer = await Explainer.open(bdb.url)
    levels: list[dict[str, Any]] = []
    kept = 0
    try:
        # Warm-up, not timed: the first calls of a session plan the functions' statements.
        await _lapse(db, sizes, 1)
        for _ in await db.processes.sweep_lapsed("bench-sweeper"):
            adopted = await db.adopt_run("bench-adopter", 8.0)
            assert adopted is not None
            await db.fail_run(adopted.run_id, adopted.epoch, "bench: done")
        for index, level in enumerate(sorted(sizes.history)):
            inserted = 0.0
            if level > kept:
                t0 = time.perf_counter()
                with psycopg.connect(bdb.url, autocommit=True) as conn:
                    conn.execute(INSERT_HISTORY, (kept + 1, level))
                    conn.execute("vacuum analyze ticketiq.runs")
                    try:  # flush the bulk load now, not in the middle of the timings
                        conn.execute("checkpoint")
                    except psycopg.Error:
                        pass
                inserted = time.perf_counter() - t0
                kept = level
            figures = await _level(bdb, db, explainer, sizes, level, 1000 * (index + 1))
            figures["insert_and_vacuum_s"] = inserted
            levels.append(figures)
            log(f"  history {level:>9,}: sweep idle p50 {figures['sweep_idle_ms']['p50']:.2f} ms, "
                f"sweep {sizes.lapsed} lapsed p50 {figures['sweep_lapsed_ms']['p50']:.2f} ms, "
                f"adopt p50 {figures['adopt_ms']['p50']:.2f} ms; indexes "
                f"{figures['plans']['sweep_idle']['indexes']} / "
                f"{figures['plans']['adopt']['indexes']}")
    finally:
        await explainer.close()
        await db.close()
    first, last = levels[0], levels[-1]

    def growth(key: str) -> float | None:
        a, b = first[key]["p50"], last[key]["p50"]
        return b / a if a and b else None

    return {
        "levels": levels,
        "explain_source": explainer.note,
        "growth_p50": {
            "sweep_idle": growth("sweep_idle_ms"),
            "sweep_lapsed": growth("sweep_lapsed_ms"),
            "adopt": growth("adopt_ms"),
        },
        "lapsed_per_sweep": sizes.lapsed,
        "live_runs": sizes.live_runs,
    }
