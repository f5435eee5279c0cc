#!/usr/bin/env python3
"""The floor under bench section 1: what a checkpoint with history costs the database alone.

    scripts/checkpoint_floor.py [--seconds S] [--rounds R]

Bench section 1 compares a checkpointed step with a raw single-statement
UPDATE of the same body, both sent from Python.  This script takes Python
out: ``pgbench`` sends each statement below (prepared, the same 2 KB body,
each client its own run and row), on TICKETIQ_TEST_DATABASE_URL's server (a
superuser URL; the local one by default), in a database of its own that it
drops at the end.  Every arm reads its inputs the same way (run id, epoch,
next step and body, through one CTE), so the arms differ only in what they
write:

* ``raw UPDATE``: the bench's raw arm, ``UPDATE bench_raw SET state = body``;
* ``INSERT, keyed``: the body into a table keyed by (run, step), no
  foreign key: the cheapest way to keep every step's checkpoint;
* ``INSERT into checkpoints``: the same into ``ticketiq.checkpoints``, with
  its foreign key to ``runs``;
* ``UPDATE run + INSERT``: the two rows any fenced checkpoint with a
  history writes: the run's row (epoch, lease and step order checked in its
  WHERE, its step moved on) and the checkpoint, in one statement, no function;
* ``INSERT, run row locked``: what an insert-only design would write instead:
  the checkpoint alone, fenced by a share lock on the run's row (a takeover's
  update waits for it, or it sees the new epoch) and ordered by the previous
  step's key, the run's row unchanged;
* ``write_checkpoint``: the whole function (validation, seal, fence, answer
  check, the two rows, the calls decision).

Three settings, each arm ``--rounds`` times, rotating: 2 clients with
``synchronous_commit = off`` (the server's CPU), and 1 and 8 clients with durable commits (the
latency a step waits for).  The table gives the median transactions per
second and the ratio to the raw UPDATE of the same setting.  Each arm starts
from emptied tables with ``runs`` analysed, and the script exits non-zero
unless every fenced arm wrote one row per transaction.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from checkpoint_cpu import DEFAULT_URL, body, pgbench  # noqa: E402

from ticketiq_pg.db.migrate import install_sync  # noqa: E402
from ticketiq_pg.testing.postgres import temporary_database  # noqa: E402

INPUTS = (
    "with i as (select r.run_id, r.epoch, nextval('bench_step_' || :client_id)::integer as step,"
    " (select b.body from bench_body as b)::jsonb as body"
    " from bench_run as r where r.client = :client_id) "
)

ARMS: dict[str, str] = {
    "raw UPDATE": "update bench_raw as t set state = i.body from i where t.id = :client_id",
    "INSERT, keyed": "insert into bench_keyed select i.run_id, i.step, i.body from i",
    "INSERT into checkpoints": (
        "insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id,"
        " written_at) select i.run_id, i.step, i.epoch, i.body, 'seal', 'key', now() from i"
    ),
    # the run found by its key, as write_checkpoint finds it (a join with i could
    # be planned as a scan of runs)
    "UPDATE run + INSERT": (
        ", f as (update ticketiq.runs as r set last_step = (select i.step from i)"
        " where r.run_id = (select i.run_id from i) and r.epoch = (select i.epoch from i)"
        " and r.status = 'running' and r.lease_expires_at > now()"
        " and r.last_step = (select i.step from i) - 1"
        " returning r.run_id, r.epoch, r.last_step)"
        " insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id,"
        " written_at) select f.run_id, f.last_step, f.epoch, (select i.body from i), 'seal',"
        " 'key', now() from f"
    ),
    # what an insert-only design would write: the checkpoint alone, fenced by a
    # share lock on the run's row (a takeover's update waits for it, or it sees the
    # new epoch) and ordered by the previous step's key, the run's row unchanged
    "INSERT, run row locked": (
        "insert into bench_locked (run_id, step, epoch, body) select r.run_id,"
        " (select i.step from i), r.epoch, (select i.body from i) from ticketiq.runs as r"
        " where r.run_id = (select i.run_id from i) and r.epoch = (select i.epoch from i)"
        " and r.status = 'running' and r.lease_expires_at > now()"
        " and coalesce((select max(k.step) from bench_locked as k where k.run_id = r.run_id),"
        " 0) = (select i.step from i) - 1 for share of r"
    ),
    "write_checkpoint": (
        "select w.* from i cross join lateral ticketiq.write_checkpoint("
        "i.run_id, i.epoch, i.step, i.body, 'seal', 'key') as w"
    ),
}

#: The table each arm writes its rows to (the raw UPDATE has no fence to miss).
WRITES = {
    "INSERT, keyed": "bench_keyed",
    "INSERT into checkpoints": "ticketiq.checkpoints",
    "UPDATE run + INSERT": "ticketiq.checkpoints",
    "INSERT, run row locked": "bench_locked",
    "write_checkpoint": "ticketiq.checkpoints",
}

SETTINGS = (  # (label, clients, synchronous_commit)
    ("2 clients, synchronous_commit off (CPU)", 2, "off"),
    ("1 client, durable commits (latency)", 1, "on"),
    ("8 clients, durable commits", 8, "on"),
)


def statement(arm: str) -> str:
    sql = ARMS[arm]
    # the two-row arm continues the WITH list; the others follow it
    return (INPUTS.rstrip() + sql if sql.startswith(",") else INPUTS + sql) + ";\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settings", default="cpu,1,8",
                        help="which settings, of cpu (2 clients, no flush), 1 and 8 (clients)")
    args = parser.parse_args()
    chosen = [setting for setting, key in zip(SETTINGS, ("cpu", "1", "8"), strict=True)
              if key in args.settings.split(",")]
    if shutil.which("pgbench") is None:
        print("checkpoint_floor: pgbench not found", file=sys.stderr)
        return 2
    admin = os.environ.get("TICKETIQ_TEST_DATABASE_URL", DEFAULT_URL)
    top = max(clients for _, clients, _ in chosen)
    with temporary_database(admin, prefix="tiq_floor") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            install_sync(conn)
            conn.execute("create table bench_body (body text not null)")
            conn.execute("insert into bench_body values (%s)", [json.dumps(body())])
            conn.execute("create table bench_raw (id integer primary key, state jsonb not null)")
            conn.execute("insert into bench_raw select g, '{}' from generate_series(0, %s) as g",
                         [top - 1])
            conn.execute("create table bench_keyed (run_id uuid, step integer, body jsonb not null,"
                         " primary key (run_id, step))")
            conn.execute("create table bench_locked (run_id uuid, step integer, epoch bigint,"
                         " body jsonb not null, primary key (run_id, step))")
            conn.execute("create table bench_run (client integer primary key, run_id uuid,"
                         " epoch bigint)")
            for client in range(top):
                conn.execute(f"create sequence bench_step_{client}")

            def fresh_runs() -> None:
                # The last arm's runs end (out of the partial indexes on running runs),
                # the tables it wrote are emptied, new runs (last step 0) start and steps
                # count from 1 again; then ANALYZE the runs, so that no arm is planned
                # on stale statistics (without them the fenced update can be planned on
                # an index of running runs instead of the run's key).
                conn.execute("select ticketiq.fail_run(b.run_id, b.epoch, 'bench: next arm')"
                             " from bench_run as b")
                conn.execute("delete from bench_run")
                conn.execute("truncate bench_keyed, bench_locked, ticketiq.checkpoints cascade")
                for client in range(top):
                    conn.execute(
                        "insert into bench_run select %s, s.run_id, s.epoch"
                        " from ticketiq.start_run('bench', 'o', 'r', 'c', 'e', false, 36000,"
                        " '{}'::jsonb) as s", [client])
                    conn.execute(f"alter sequence bench_step_{client} restart")
                # (the emptied tables are left unanalysed: statistics of an empty table
                # would plan the lookup of a run's last step as a scan of all of it)
                conn.execute("analyze ticketiq.runs, bench_run, bench_raw")

            def check_written(arm: str) -> None:
                # Every transaction took one step number; every arm but the raw UPDATE
                # (which has no fence) must have written one row for each: an arm
                # whose fence matched nothing would measure a no-op.
                sent = sum(conn.execute(
                    f"select case when is_called then last_value else 0 end"
                    f" from bench_step_{client}").fetchone()[0] for client in range(top))
                table = WRITES.get(arm)
                if table is None:
                    return
                written = conn.execute(f"select count(*) from {table}").fetchone()[0]
                if written != sent or sent == 0:
                    raise SystemExit(f"checkpoint_floor: {arm} wrote {written} rows"
                                     f" for {sent} transactions")

            print(f"pgbench -M prepared, {args.seconds} s x {args.rounds} rounds per arm,"
                  " rotating; median tps (ratio to the raw UPDATE)")
            for label, clients, sync in chosen:
                conn.execute(f'alter database "{conn.info.dbname}"'
                             f" set synchronous_commit = {sync}")
                rates: dict[str, list[float]] = {arm: [] for arm in ARMS}
                for _ in range(args.rounds):
                    for arm in ARMS:
                        fresh_runs()
                        rates[arm].append(pgbench(url, statement(arm), clients, args.seconds))
                        check_written(arm)
                raw = statistics.median(rates["raw UPDATE"])
                print(label + ": every fenced arm wrote one row per transaction")
                for arm, found in rates.items():
                    median = statistics.median(found)
                    runs = ", ".join(f"{r:,.0f}" for r in found)
                    print(f"    {arm:26s} {median:9,.0f}/s  {median / raw:5.2f}  ({runs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
