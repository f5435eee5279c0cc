"""4. Lease renewal at scale: many runs, one renewal statement per process per tick.

``lease_runs`` running runs are written set-based (bench only, as the table
owner) with their leases split over ``lease_processes`` holders.  Each
holder is a real :class:`ticketiq_pg.runtime.leases.LeaseKeeper` on its own driver
and connection (standing in for one app process each); every tick all of
them call ``renew_once`` at once, which is what ``LeaseKeeper.run_forever``
does each ``renew_interval``.  pg_stat_statements counts the renewal
statements and the database time each took; the client times each call.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper

from .common import BenchDB, Sizes, StatementSnapshot, hot_updates, summary
from .workload import LEASE_TTL, SELF_FENCE_MARGIN

INSERT_HELD = """
insert into ticketiq.runs (
    run_id, owner, run_as, channel, entry_point, correlation_id, status, epoch,
    lease_holder, lease_expires_at, created_at, updated_at
)
select gen_random_uuid(), 'bench', 'bench', 'bench', 'bench', 'bench-lease-' || g,
       'running', 1, 'bench-holder-' || (g %% %(procs)s), now() + interval '1 hour', now(), now()
from generate_series(1, %(runs)s) as g
returning run_id, lease_holder
"""


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    procs = sizes.lease_processes
    with psycopg.connect(bdb.url, autocommit=True) as conn:
        rows = conn.execute(INSERT_HELD, {"procs": procs, "runs": sizes.lease_runs}).fetchall()
        conn.execute("analyze ticketiq.runs")
    dbs = [await TicketIQ.connect(bdb.url, min_size=1, max_size=1) for _ in range(procs)]
    keepers = [
        LeaseKeeper(db, f"bench-holder-{i}", ttl=LEASE_TTL, renew_interval=sizes.lease_interval,
                    margin=SELF_FENCE_MARGIN)
        for i, db in enumerate(dbs)
    ]
    by_holder = {k.holder: k for k in keepers}
    for run_id, holder in rows:
        keeper = by_holder[holder]
        keeper.hold(run_id, 1, keeper.sent_at())
    latencies: list[float] = []
    lost = 0

    async def renew(keeper: LeaseKeeper) -> None:
        nonlocal lost
        t0 = time.perf_counter()
        lost += len(await keeper.renew_once())
        latencies.append(time.perf_counter() - t0)

    try:
        await asyncio.gather(*(renew(k) for k in keepers))  # warm-up tick (plans, caches)
        latencies.clear()
        hot_before = hot_updates(bdb.url)
        before = StatementSnapshot(bdb.url, bdb.pgss)
        sent_before = sum(db.statements["renew_leases"] for db in dbs)
        renewals_before = sum(k.renewals for k in keepers)
        started = time.perf_counter()
        for tick in range(sizes.lease_ticks):
            due = started + tick * sizes.lease_interval
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            await asyncio.gather(*(renew(k) for k in keepers))
        window = time.perf_counter() - started
        after = StatementSnapshot(bdb.url, bdb.pgss)
        sent = sum(db.statements["renew_leases"] for db in dbs) - sent_before
        ticks = sizes.lease_ticks
        out: dict[str, Any] = {
            "runs": sizes.lease_runs,
            "processes": procs,
            "leases_per_process": sizes.lease_runs // procs,
            "ticks": ticks,
            "renew_interval_s": sizes.lease_interval,
            "window_s": window,
            "driver_statements": sent,
            "driver_statements_per_tick": sent / ticks,
            "renewals_per_tick": (sum(k.renewals for k in keepers) - renewals_before) / ticks,
            "leases_lost": lost,
            "client_ms": summary(latencies, 1000.0),
        }
        if bdb.pgss:
            renewal = after.diff(before).get("renew_leases", {})
            calls = renewal.get("calls", 0.0)
            out["pg_stat_statements"] = {
                "statements": calls,
                "statements_per_tick": calls / ticks,
                "statements_per_s": calls / (ticks * sizes.lease_interval),
                "db_ms_per_renewal": renewal.get("mean_ms"),
                "rows_per_renewal": renewal["rows"] / calls if calls else None,
                "wal_bytes_per_renewal": renewal["wal_bytes"] / calls if calls else None,
                "db_ms_per_lease": (renewal["ms"] / renewal["rows"]) if calls else None,
            }
    finally:
        for db in dbs:
            await db.close()
        await asyncio.sleep(0.5)  # the closed sessions' statistics reach pg_stat_user_tables
        hot_after = hot_updates(bdb.url)
        with psycopg.connect(bdb.url, autocommit=True) as conn:
            # Hand the runs back so later sections see only their own running runs.
            conn.execute(
                "update ticketiq.runs set status = 'completed', lease_holder = null,"
                " lease_expires_at = null, finished_at = now()"
                " where lease_holder like 'bench-holder-%'"
            )
    runs_before = hot_before.get("runs", {"updates": 0, "hot_updates": 0})
    runs_after = hot_after.get("runs", {"updates": 0, "hot_updates": 0})
    out["runs_row_updates"] = {
        k: runs_after[k] - runs_before[k] for k in ("updates", "hot_updates")
    }
    pg = out.get("pg_stat_statements", {})
    log(f"  leases: {sizes.lease_runs} runs / {procs} processes: "
        f"{pg.get('statements_per_tick', out['driver_statements_per_tick']):.1f} statements/tick, "
        f"{pg.get('db_ms_per_renewal') or 0:.1f} ms database time per renewal of "
        f"{out['leases_per_process']} leases (client p50 {out['client_ms']['p50']:.1f} ms)")
    return out
