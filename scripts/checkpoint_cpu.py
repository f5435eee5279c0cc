#!/usr/bin/env python3
"""What a checkpoint costs the server's CPU, and what schema 8 took out of it.

    scripts/checkpoint_cpu.py [--clients N] [--seconds S] [--rounds R] [--perf SECONDS]

On TICKETIQ_TEST_DATABASE_URL's server (a superuser URL; the local one by
default), in a database of its own that it drops at the end: ``pgbench``
sends ``ticketiq.write_checkpoint`` (a 2 KB body, each client its own run,
steps from a sequence) and, beside it, a raw ``UPDATE`` of the same body,
with ``synchronous_commit = off`` in that database so that the figures are
CPU, not the disk's flush.  Then it puts back, one at a time, what
migration 8 (``0008_lean_steps``) took out of a checkpoint's way, and
measures again:

* ``+ column checks``: the ten one-column CHECK constraints of ``runs`` and
  the three of ``checkpoints`` that are domains now (PostgreSQL checks every
  CHECK constraint of a table on every UPDATE, reading each back from its
  text once per statement);
* ``+ pglz``: checkpoint bodies compressed with pglz instead of lz4.

Each arm runs ``--rounds`` times, rotating; the table gives the median
statements per second and the ratio to the current schema.  ``--perf S``
also records ``perf record -a -g`` for S seconds over one more run with
everything put back and one of the current schema, and prints the share of a
few backend functions in each (needs ``perf`` and the right to use it).
Needs ``pgbench`` (PostgreSQL's client tools).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from ticketiq_pg.db.migrate import install_sync  # noqa: E402
from ticketiq_pg.testing.postgres import temporary_database  # noqa: E402

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

RUNS_CHECKS = {
    "owner": "owner <> ''", "run_as": "run_as <> ''", "channel": "channel <> ''",
    "entry_point": "entry_point <> ''", "correlation_id": "correlation_id <> ''",
    "meta": "jsonb_typeof(meta) = 'object'",
    "status": "status in ('running', 'claimed', 'suspended', 'completed', 'failed', 'stopped')",
    "epoch": "epoch >= 1", "loss_count": "loss_count >= 0", "last_step": "last_step >= 0",
}
CHECKPOINT_CHECKS = {"step": "step >= 1", "seal": "seal <> ''", "seal_key_id": "seal_key_id <> ''"}

PERF_SYMBOLS = ("ExecConstraints", "stringToNode", "pglz_compress", "LZ4_compress_fast_extState",
                "ExecInitNode", "jsonb_in", "AfterTriggerEndQuery")


def body() -> dict:
    """About 2 KB: a conversation of three read steps and one read call."""
    hit = {"id": "KB-1042", "title": "Exports time out after plan upgrade",
           "snippet": "Raise the export window or split connectors."}
    conversation: list[dict] = [{"role": "user", "content": "x" * 400}]
    for n in range(1, 4):
        call_id = f"toolu_{n:024d}"
        conversation.append({"role": "assistant", "content": "", "tool_calls": [
            {"call_id": call_id, "tool": "kb.search",
             "arguments": {"query": "export timeout connector", "limit": 2}}]})
        conversation.append({"role": "tool", "call_id": call_id,
                             "content": {"query": "q", "hits": [hit]}})
    return {
        "conversation": conversation,
        "calls": [{"call_id": "toolu_9", "tool": "kb.search", "arguments": {"query": "q"},
                   "classification": "read", "step_key": "k" * 64}],
        "counters": {"model_steps": 4, "tool_calls": 4, "agent_loop": "main"},
        "history": [{"step": n, "calls": ["c"]} for n in range(1, 4)],
        "delegation_keys": {},
        "outcomes": {},
    }


def pgbench(url: str, script: str, clients: int, seconds: int) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            ["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
             "-T", str(seconds), "-f", f.name, url],
            capture_output=True, text=True, check=False,
        )
    finally:
        os.unlink(f.name)
    found = re.search(r"tps = ([\d.]+)", out.stdout)
    if out.returncode != 0 or not found:
        raise SystemExit(f"pgbench failed:\n{out.stdout}\n{out.stderr}")
    return float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--perf", type=int, default=0, metavar="SECONDS")
    args = parser.parse_args()
    if shutil.which("pgbench") is None:
        print("checkpoint_cpu: pgbench not found", file=sys.stderr)
        return 2
    admin = os.environ.get("TICKETIQ_TEST_DATABASE_URL", DEFAULT_URL)
    with temporary_database(admin, prefix="tiq_ckcpu") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            install_sync(conn)
            dbname = conn.info.dbname
            conn.execute(f'alter database "{dbname}" set synchronous_commit = off')
            conn.execute("create table bench_body (body text not null)")
            conn.execute("insert into bench_body values (%s)", [json.dumps(body())])
            conn.execute("create table bench_raw (id integer primary key, state jsonb not null)")
            conn.execute("create table bench_run (client integer primary key, run_id uuid,"
                         " epoch bigint)")
            conn.execute("insert into bench_raw select g, '{}' from generate_series(0, %s) as g",
                         [args.clients - 1])
            for client in range(args.clients):
                conn.execute(f"create sequence bench_step_{client}")

            def fresh_runs() -> None:
                conn.execute("delete from bench_run")
                for client in range(args.clients):
                    conn.execute(
                        "insert into bench_run select %s, s.run_id, s.epoch"
                        " from ticketiq.start_run('bench', 'o', 'r', 'c', 'e', false, 36000,"
                        " '{}'::jsonb) as s", [client])
                    conn.execute(f"alter sequence bench_step_{client} restart")

            checkpoint = (
                "select * from ticketiq.write_checkpoint("
                "(select r.run_id from bench_run as r where r.client = :client_id),"
                " (select r.epoch from bench_run as r where r.client = :client_id),"
                " nextval('bench_step_' || :client_id)::integer,"
                " (select b.body from bench_body as b)::jsonb, 'seal', 'key');\n"
            )
            raw = ("update bench_raw set state = (select b.body from bench_body as b)::jsonb"
                   " where id = :client_id;\n")
            arms: list[tuple[str, list[str]]] = [
                ("current schema (8)", []),
                ("+ column checks", [
                    *(f"alter table ticketiq.runs add constraint bench_{c}_check check ({e})"
                      for c, e in RUNS_CHECKS.items()),
                    *(f"alter table ticketiq.checkpoints add constraint bench_{c}_check"
                      f" check ({e})" for c, e in CHECKPOINT_CHECKS.items()),
                ]),
                ("+ pglz", ["alter table ticketiq.checkpoints alter column body"
                            " set compression pglz"]),
            ]
            rates: dict[str, list[float]] = {name: [] for name, _ in arms}
            raw_rates: list[float] = []
            for _ in range(args.rounds):
                raw_rates.append(pgbench(url, raw, args.clients, args.seconds))
            # Each arm adds to the one before: its statements run once, in order.
            for name, statements in arms:
                for sql in statements:
                    conn.execute(sql)
                for _ in range(args.rounds):
                    fresh_runs()
                    rates[name].append(pgbench(url, checkpoint, args.clients, args.seconds))
            base = statistics.median(rates[arms[0][0]])
            print(f"{args.clients} clients, {args.seconds:g} s x {args.rounds} rounds each,"
                  " synchronous_commit off (CPU, not the flush)")
            print(f"{'raw UPDATE of the same body':40s} {statistics.median(raw_rates):9,.0f}/s")
            for name, _ in arms:
                median = statistics.median(rates[name])
                runs = ", ".join(f"{r:,.0f}" for r in rates[name])
                print(f"{'write_checkpoint, ' + name:40s} {median:9,.0f}/s  x{median / base:.2f}"
                      f"  ({runs})")
            if args.perf > 0:
                profile(url, checkpoint, args, fresh_runs, "with the column checks and pglz back")
                conn.execute("alter table ticketiq.checkpoints alter column body"
                             " set compression lz4")
                for c in RUNS_CHECKS:
                    conn.execute(f"alter table ticketiq.runs drop constraint bench_{c}_check")
                for c in CHECKPOINT_CHECKS:
                    conn.execute(f"alter table ticketiq.checkpoints drop constraint"
                                 f" bench_{c}_check")
                profile(url, checkpoint, args, fresh_runs, "current schema")
    return 0


def profile(url: str, checkpoint: str, args: argparse.Namespace, fresh_runs,  # noqa: ANN001
            label: str) -> None:
    if shutil.which("perf") is None:
        print("perf not found: no profile")
        return
    data = Path(tempfile.mkdtemp()) / "perf.data"
    fresh_runs()
    perf = subprocess.Popen(["perf", "record", "-F", "2000", "-a", "-g", "-o", str(data), "--",
                             "sleep", str(args.perf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pgbench(url, checkpoint, args.clients, args.perf)
    perf.wait()
    report = subprocess.run(["perf", "report", "-i", str(data), "--children", "--sort", "symbol",
                             "--comm", "postgres", "-g", "none", "--stdio"],
                            capture_output=True, text=True, check=False).stdout
    print(f"perf, {label}: share of the postgres processes' samples ({args.perf:g} s)")
    for line in report.splitlines():
        for symbol in PERF_SYMBOLS:
            if line.rstrip().endswith(symbol) or f"] {symbol} " in line:
                print("   ", " ".join(line.split()[:1]), symbol)
    shutil.rmtree(data.parent, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
