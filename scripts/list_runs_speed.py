"""How fast ``ticketiq.list_runs`` pages with many runs kept: each filter and a cursor page, timed.

    scripts/with_test_server.py -- .venv/bin/python scripts/list_runs_speed.py [--runs 100000]

In a fresh database on TICKETIQ_TEST_DATABASE_URL's server (dropped at the end): N runs
of 50 owners and 4 kinds, started by ``ticketiq.start_run`` in set-based statements of
10,000 (the project's own function, one call a row); a 10th (by a hash of the run id) failed by
``ticketiq.fail_run`` (reason "vendor 503 after N tries"), a 20th given a first
checkpoint naming workflow "escalation" by ``ticketiq.write_checkpoint``; then ANALYZE.
Each case is a page of 50 (``list_runs``, one connection, a local socket): 5 calls to warm
up (past PL/pgSQL's five custom plans), then ``--calls`` timed; prints the median and p95
wall in ms and the rows. Then, on a second connection warmed the same way, one more call
of each case under auto_explain (nested statements, the plan as a NOTICE): the index its
query read, and how many entries of it the page read (the scan's actual rows and the
rows its filter removed). The cases a filter rejects most rows
of read more rows a page: the list reads the keyset index newest first and filters.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import ENV_URL, temporary_database

OWNERS = 50
KINDS = ("triage", "escalation", "refund", "summary")
BATCH = 10_000
PAGE = 50
BODY = {"chain": "link", "conversation": [], "calls": [], "history": [], "delegation_keys": {},
        "counters": {"model_steps": 1, "workflow": {"name": "escalation", "version": "2"}}}

START = """
select ticketiq.start_run('bench', 'owner-' || (i %% {owners}), 'ra', 'web',
    (%(kinds)s::text[])[1 + i %% {kinds}], false, 86400, '{{}}')
from generate_series(%(first)s::integer, %(last)s::integer) as i
"""
FAIL = """
select ticketiq.fail_run(r.run_id, r.epoch, 'vendor 503 after ' || (r.n %% 7 + 3) || ' tries')
from (select r.run_id, r.epoch, abs(hashtext(r.run_id::text)) as n from ticketiq.runs as r) as r
where r.n %% 10 = 0
"""
CHECKPOINT = """
select ticketiq.write_checkpoint(r.run_id, r.epoch, 1, %(body)s, 's', 'k')
from (select r.run_id, r.epoch, abs(hashtext(r.run_id::text)) as n from ticketiq.runs as r) as r
where r.n %% 20 = 5
"""


def cases(conn: psycopg.Connection[Any], runs: int) -> dict[str, dict[str, Any]]:
    """The filters of list_runs, one case each, with values from the data made."""
    times = conn.execute(
        "select created_at from ticketiq.runs order by created_at, run_id "
        "offset %s limit 1", (runs // 2,)).fetchone()
    middle = times[0]
    low, high = conn.execute(
        "select min(created_at), max(created_at) from (select created_at from ticketiq.runs "
        "order by created_at offset %s limit %s) as t", (runs * 2 // 5, runs // 5)).fetchone()
    ended_low, ended_high = conn.execute(
        "select min(finished_at), max(finished_at) from (select finished_at from ticketiq.runs "
        "where finished_at is not null order by finished_at offset %s limit %s) as t",
        (runs // 40, runs // 50)).fetchone()
    mid_id = conn.execute("select run_id from ticketiq.runs where created_at = %s limit 1",
                          (middle,)).fetchone()[0]
    first = conn.execute(
        "select created_at, run_id from ticketiq.list_runs(p_owner => 'owner-7', p_limit => %s)",
        (PAGE,)).fetchall()[-1]
    return {
        "every owner, first page": {},
        "every owner, cursor at the middle": {"p_after_created": middle, "p_after_run_id": mid_id},
        "one owner, first page": {"p_owner": "owner-7"},
        "one owner, second page (cursor)": {"p_owner": "owner-7", "p_after_created": first[0],
                                            "p_after_run_id": first[1]},
        "status failed (1 in 10)": {"p_statuses": ["failed"]},
        "kind refund (1 in 4)": {"p_kind": "refund"},
        "workflow escalation (1 in 20)": {"p_workflow": "escalation"},
        "created in the middle fifth": {"p_created_from": low, "p_created_to": high},
        "ended in a 1/50 window": {"p_ended_from": ended_low, "p_ended_to": ended_high},
        "failure text '9 tries' (1 in 70)": {"p_failure": "9 tries"},
        "one owner, status failed": {"p_owner": "owner-7", "p_statuses": ["failed"]},
        "failure text no run has (worst)": {"p_failure": "no such text"},
    }


def call(conn: psycopg.Connection[Any], args: dict[str, Any]) -> int:
    named = ", ".join(f"{k} => %({k})s" for k in args)
    sql = f"select * from ticketiq.list_runs({named}{', ' if named else ''}p_limit => {PAGE})"
    return len(conn.execute(sql, args).fetchall())


def plan_of(conn: psycopg.Connection[Any], args: dict[str, Any]) -> str:
    """The index the function's page query read and the rows its scan returned."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("set auto_explain.log_min_duration = 0")
    call(conn, args)
    conn.execute("set auto_explain.log_min_duration = -1")
    conn._notice_handlers.clear()  # noqa: SLF001 - psycopg has no remove-all
    text = next((n for n in notices if "from ticketiq.runs as r" in n), "")
    node_re = r"((?:Index(?: Only)? Scan(?: Backward)?|Bitmap Heap Scan|Seq Scan)(?: using \w+)?)"
    scan = re.search(node_re + r" on runs r .*?\(actual rows=(\d+) loops=(\d+)\)[^\n]*\n"
                     r"((?:(?!\s*->)[^\n]*\n)*)", text + "\n")
    if not scan:
        return "no scan of runs found"
    node, rows, loops, details = scan.groups()
    removed = re.search(r"Rows Removed by (?:Filter|Index Recheck): (\d+)", details)
    read = (int(rows) + (int(removed.group(1)) if removed else 0)) * int(loops)
    bitmap = re.search(r"Bitmap Index Scan on (\w+)", text[scan.end():])
    via = f" of {bitmap.group(1)}" if node == "Bitmap Heap Scan" and bitmap else ""
    then = ", then sorted" if re.search(r"\bSort\b", text[:scan.start()]) else ""
    looped = f" ({loops} loops)" if loops != "1" else ""
    return f"{node}{via}: {read:,} runs read{then}{looped}"


def make_runs(conn: psycopg.Connection[Any], runs: int) -> None:
    started = time.perf_counter()
    for first in range(1, runs + 1, BATCH):
        conn.execute(START.format(owners=OWNERS, kinds=len(KINDS)),
                     {"kinds": list(KINDS), "first": first, "last": min(first + BATCH - 1, runs)})
    made = time.perf_counter() - started
    conn.execute(FAIL, {})
    conn.execute(CHECKPOINT, {"body": Jsonb(BODY)})
    conn.execute("analyze ticketiq.runs")
    conn.execute("analyze ticketiq.checkpoints")
    print(f"{runs:,} runs started in {made:.1f} s ({runs / made:,.0f} a second), {OWNERS} owners; "
          f"the data made in {time.perf_counter() - started:.1f} s")


def time_cases(conn: psycopg.Connection[Any], found: dict[str, dict[str, Any]],
               calls: int) -> dict[str, tuple[float, float, int]]:
    results = {}
    for label, args in found.items():
        for _ in range(5):
            call(conn, args)
        walls = []
        for _ in range(calls):
            t0 = time.perf_counter()
            rows = call(conn, args)
            walls.append((time.perf_counter() - t0) * 1e3)
        walls.sort()
        results[label] = (statistics.median(walls), walls[int(len(walls) * 0.95) - 1], rows)
    return results


def explain_cases(db_url: str, found: dict[str, dict[str, Any]],
                  results: dict[str, tuple[float, float, int]]) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("load 'auto_explain'")
        for setting in ("log_nested_statements = on", "log_analyze = on", "log_timing = off",
                        "log_level = notice", "log_min_duration = -1"):
            conn.execute(f"set auto_explain.{setting}")
        print(f"{'case (a page of 50)':36} {'median ms':>9} {'p95 ms':>7} {'rows':>5}  plan")
        for label, args in found.items():
            for _ in range(5):
                call(conn, args)
            median, p95, rows = results[label]
            print(f"{label:36} {median:9.2f} {p95:7.2f} {rows:5}  {plan_of(conn, args)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=30)
    opts = parser.parse_args()
    with temporary_database(os.environ[ENV_URL], "list_runs") as db_url:
        with psycopg.connect(db_url, autocommit=True) as conn:
            install_sync(conn)
            make_runs(conn, opts.runs)
            found = cases(conn, opts.runs)
            results = time_cases(conn, found, opts.calls)
        explain_cases(db_url, found, results)

if __name__ == "__main__":
    main()
