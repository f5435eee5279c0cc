"""15. Adopting runs beside many resume rows, with statistics taken before the burst.

``ticketiq.record_resume`` finds the one resume row of a run's epoch by (run, epoch,
event crash_resumed or resumed), and every resume calls it as it settles a call (before
the set-wide adoption, ``ticketiq.adopt_run`` called it too).  The audit table keeps
every resume row, and its statistics are taken before a takeover's burst of them.  With
the earlier unique index (crash_resumed rows only, before migration 16) the lookup could
not use it, and the planner ANDed the run's index with the event's: each lookup walked
every resume row.  The shipped index
holds both kinds, and the lookup is one probe.

Side by side in one database: ``lookup_runs`` (at most 1,000) claimed runs adopted
in one ``adopt_runs`` statement and each one's resume row found by ``record_resume`` (no
settlement: the lookup alone), rolled back, so each arm adopts the same runs; the audit
analyzed before ``lookup_rows`` resume rows of other runs were added (autovacuum off on
it, so the statistics stay so), under the shipped index and under the earlier one
(dropped and created inside the rolled-back transaction), alternating for
``lookup_rounds`` rounds, each arm on a new session.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import psycopg

from .common import BenchDB, Sizes
from .report import INFO, MISS, OK, _row

EARLIER_INDEX = """
drop index ticketiq.audit_one_resume_per_epoch_idx;
create unique index audit_one_resume_per_epoch_idx on ticketiq.audit (run_id, epoch)
where event = 'agent.run.crash_resumed'
"""


def _setup(conn: psycopg.Connection[Any], runs: int, rows: int) -> int:
    conn.execute("alter table ticketiq.audit set (autovacuum_enabled = off)")
    conn.execute("""
        select count(*) from (
            select ticketiq.start_run(
                p_holder => 'gone', p_owner => 'bench', p_run_as => 'bench',
                p_channel => 'bench', p_entry_point => 'bench', p_may_wait => false,
                p_ttl_seconds => 0.01, p_input => '{}')
            from generate_series(1, %s)) as s
    """, (runs,))
    time.sleep(0.05)
    claimed = 0
    while claimed < runs:
        found = conn.execute("select count(*) from ticketiq.sweep_lapsed('bench')").fetchone()
        if not found or not found[0]:
            break
        claimed += int(found[0])
    conn.execute("analyze ticketiq.audit")
    conn.execute("""
        insert into ticketiq.audit (at, event, run_id, epoch, actor)
        select ticketiq.now(), 'agent.run.crash_resumed', gen_random_uuid(), 3, 'earlier'
        from generate_series(1, %s)
    """, (rows,))
    return claimed


def _adopt(url: str, earlier: bool, runs: int) -> tuple[float, int]:
    with psycopg.connect(url) as conn:  # a transaction, rolled back on leaving
        if earlier:
            conn.execute(EARLIER_INDEX)
        t0 = time.perf_counter()
        # an hour's leases: the earlier index's lookups take 13 s, past an 8 s lease
        adopted = conn.execute(
            "select a.run_id, a.epoch from ticketiq.adopt_runs('bench-adopter', 3600, %s) as a",
            (runs,)).fetchall()
        conn.execute(
            "select count(*) from unnest(%s::uuid[], %s::bigint[]) as u (run_id, epoch) "
            "cross join lateral ticketiq.record_resume(u.run_id, u.epoch, '[]')",
            ([r[0] for r in adopted], [r[1] for r in adopted]))
        seconds = time.perf_counter() - t0
        conn.rollback()
    return seconds, len(adopted)


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    with bdb.connect() as conn:
        claimed = _setup(conn, sizes.lookup_runs, sizes.lookup_rows)
    arms: dict[str, list[float]] = {"shipped": [], "earlier": []}
    adopted: dict[str, int] = {}
    for r in range(sizes.lookup_rounds):
        for arm in (("shipped", "earlier") if r % 2 == 0 else ("earlier", "shipped")):
            seconds, n = _adopt(bdb.url, arm == "earlier", sizes.lookup_runs)
            arms[arm].append(seconds)
            adopted[arm] = n
    out: dict[str, Any] = {"runs_claimed": claimed, "resume_rows": sizes.lookup_rows,
                           "rounds": sizes.lookup_rounds, "adopted": adopted}
    for arm, times in arms.items():
        out[arm] = {"seconds": times, "median_s": statistics.median(times),
                    "ms_per_run": 1000 * statistics.median(times) / max(1, adopted[arm])}
    out["earlier_over_shipped"] = out["earlier"]["median_s"] / out["shipped"]["median_s"]
    log(f"  adopting {claimed} runs beside {sizes.lookup_rows} resume rows: "
        f"{out['shipped']['median_s']:.2f} s (shipped index), "
        f"{out['earlier']['median_s']:.2f} s (the earlier one), "
        f"x{out['earlier_over_shipped']:.1f}")
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    shipped, earlier = res["shipped"], res["earlier"]
    # both arms adopt every claimed run: the same work, under either index
    fine = all(n == res["runs_claimed"] for n in res["adopted"].values())
    return [
        _row("15", f"adopt {res['runs_claimed']} runs beside {res['resume_rows']:,} resume rows "
             "(statistics from before them)",
             f"{shipped['ms_per_run']:.2f} ms a run", f"earlier index {earlier['ms_per_run']:.2f}"
             f" ms (x{res['earlier_over_shipped']:.1f})", "every run adopted in both",
             OK if fine else MISS, "resume_lookup.shipped.ms_per_run", shipped["ms_per_run"]),
        _row("15", "  the earlier index's cost over the shipped one",
             f"x{res['earlier_over_shipped']:.1f}", "", "", INFO,
             "resume_lookup.earlier_over_shipped", res["earlier_over_shipped"]),
    ]
