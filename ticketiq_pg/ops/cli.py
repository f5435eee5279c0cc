"""``ticketiq-pg`` command line: migrate, version, demo, worker, the operator's commands.

``ticketiq-pg worker --app module:function`` runs one app process's
:class:`~ticketiq_pg.runtime.worker.Worker` (lease keeper, leader election and sweep,
resume loop) until SIGTERM or SIGINT, then shuts it down gracefully: it
resigns leadership and releases each run it holds at its next step boundary,
so another process adopts it at once.  ``function`` returns the
:class:`~ticketiq_pg.runtime.worker.App` (the repository's ``harness.scripted:app`` is the
scripted one), found in the ``--app-dir`` folders, the current directory or the
installed packages; the settings come from the ``TICKETIQ_*`` variables
(:mod:`ticketiq_pg.config`).  It logs to stderr.  The operator's commands (status,
runs, show, audit, approvals, approve, reject, stop, inspect, purge, seal-key) are in
docs/operators.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from ticketiq_pg.config import Environment
from ticketiq_pg.db.inspect import (
    LAPSE_WITHIN,
    LIST_LIMIT,
    RUN_STATUSES,
    SEEN_WITHIN,
    STATUS_LIMIT,
    approvals_waiting,
    snapshot,
)
from ticketiq_pg.db.migrate import (
    InstallError,
    create_database_sync,
    install_sync,
    schema_version_sync,
)
from ticketiq_pg.errors import TicketIQError
from ticketiq_pg.ops import views as operator_view
from ticketiq_pg.ops.args import (
    age_arg,
    key_id_arg,
    positive_int,
    run_id_arg,
    seconds_arg,
    since_arg,
)
from ticketiq_pg.ops.inspect_cmd import add_parser as add_inspect_parser
from ticketiq_pg.ops.keys import add_parser as add_key_parser
from ticketiq_pg.ops.keys import cmd_api_key
from ticketiq_pg.ops.limits import add_parser as add_limits_parser
from ticketiq_pg.ops.limits import cmd_limits
from ticketiq_pg.ops.manage import add_parsers as add_manage_parsers
from ticketiq_pg.ops.serve import load_app, serve
from ticketiq_pg.printable import say

ENV_URL = Environment.DATABASE_URL
ENV_APP = Environment.APP
ENV_LOG_LEVEL = Environment.LOG_LEVEL


def _package_version() -> str:
    try:
        return metadata.version("ticketiq-pg")
    except metadata.PackageNotFoundError:
        return "unknown"


def _url(opts: argparse.Namespace, required: bool = True) -> str | None:
    url = opts.database_url or Environment.current().get(ENV_URL)
    if not url and required:
        raise SystemExit(f"ticketiq-pg: set {ENV_URL} or pass --database-url")
    return url


def _install(url: str, sql_dir: Path | None) -> int:
    with psycopg.connect(url) as conn:
        return install_sync(conn, sql_dir)


def cmd_migrate(opts: argparse.Namespace) -> int:
    url = _url(opts)
    assert url is not None
    if opts.create_database and create_database_sync(url):
        say("database created")
    say(f"schema installed at version {_install(url, opts.sql_dir)}")
    return 0


def cmd_version(opts: argparse.Namespace) -> int:
    say(f"ticketiq-pg {_package_version()}")
    url = _url(opts, required=False)
    if url:
        with psycopg.connect(url) as conn:
            version = schema_version_sync(conn)
        say(f"schema version: {version if version is not None else 'not installed'}")
    return 0


#: The demo is the repository's (``make demo``), not the package's: found by name, so an
#: install from the wheel says where it runs instead.
DEMO_MODULE = "harness.demo"


def cmd_demo(opts: argparse.Namespace) -> int:
    try:
        demo = importlib.import_module(DEMO_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in ("harness", DEMO_MODULE):
            raise
        raise SystemExit("ticketiq-pg demo runs from a checkout of the repository (make demo):"
                         " its harness is not part of the package") from None
    return int(demo.main(_url(opts, required=False), data_dir=opts.data_dir,
                         sql_dir=opts.sql_dir))


def cmd_worker(opts: argparse.Namespace) -> int:
    from ticketiq_pg.config import Settings

    env = Environment.current()
    level = (opts.log_level or env.get(ENV_LOG_LEVEL) or "INFO").upper()
    log_format = env.log_format
    from ticketiq_pg.observe.logs import handler, text_handler

    logging.basicConfig(level=level, handlers=[
        handler(sys.stderr) if log_format == "json" else text_handler(sys.stderr)])
    ref = opts.app or env.get(ENV_APP)
    if not ref:
        raise SystemExit(f"ticketiq-pg worker: pass --app module:function or set {ENV_APP}")
    port = opts.http_port if opts.http_port is not None else env.port(env.HTTP_PORT)
    settings = Settings.from_env()
    url = _url(opts)
    settings = dataclasses.replace(settings, database_url=url)
    settings.sealer()  # fail now, not at the first checkpoint, without seal keys
    app = load_app(ref, opts.app_dir or ())
    return asyncio.run(serve(settings, app, process_id=opts.process_id, max_runs=opts.max_runs,
                             http_port=port, drain_timeout=opts.drain_timeout,
                             http_host=opts.http_host,
                             metrics_port=(opts.metrics_port if opts.metrics_port is not None
                                           else env.port(env.METRICS_PORT, 0)),
                             metrics_host=opts.metrics_host or env.get(env.METRICS_HOST)))


# -- the operator's view (ticketiq_pg/ops/views.py, docs/operators.md) ------------------------


def cmd_status(opts: argparse.Namespace) -> int:
    say(operator_view.status_text(
        str(_url(opts)), opts.json, lapse_within=opts.lapse_within,
        seen_within=opts.seen_within, limit=opts.limit,
    ))
    return 0


def cmd_runs(opts: argparse.Namespace) -> int:
    say(operator_view.runs_text(
        str(_url(opts)), opts.json, statuses=opts.status, entry_point=opts.entry_point,
        holder=opts.holder, since=opts.since, limit=opts.limit,
    ))
    return 0


def cmd_show(opts: argparse.Namespace) -> int:
    say(operator_view.show_text(str(_url(opts)), opts.run_id, opts.json))
    return 0


def cmd_audit(opts: argparse.Namespace) -> int:
    say(operator_view.audit_text(
        str(_url(opts)), opts.json, events=opts.event, run_id=opts.run, since=opts.since,
        limit=opts.limit,
    ))
    return 0


T = TypeVar("T")


def _with_driver(opts: argparse.Namespace, work: Callable[[Any], Awaitable[T]]) -> T:
    """``work(driver)`` on a one-connection driver of the command's database, closed after."""
    from ticketiq_pg.db.driver import TicketIQ

    async def run() -> T:
        db = await TicketIQ.connect(str(_url(opts)), min_size=1, max_size=1)
        try:
            return await work(db)
        finally:
            await db.close()

    return asyncio.run(run())


def cmd_decide(opts: argparse.Namespace) -> int:
    """Approve or reject a write held for approval (ticketiq.decide_approval)."""
    decided = _with_driver(opts, lambda db: db.waits.decide_approval(
        opts.approval_id, opts.command == "approve", opts.actor, opts.reason))
    result = {"approval_id": str(decided.approval_id), "run_id": str(decided.run_id),
              "state": decided.state, "decided_by": decided.decided_by,
              "decided_at": decided.decided_at.isoformat() if decided.decided_at else None}
    if opts.json:
        say(json.dumps(result))
    else:
        say(f"approval {result['approval_id']} {result['state']} by {result['decided_by']} "
              f"(run {result['run_id']})")
    return 0


def cmd_stop(opts: argparse.Namespace) -> int:
    """Ask a run to stop at its next step boundary (ticketiq.request_stop)."""
    asked = _with_driver(opts, lambda db: db.request_stop(opts.run_id, opts.actor, opts.reason))
    if opts.json:
        say(json.dumps({"run_id": str(asked.run_id), "status": asked.status}))
    else:
        say(f"run {asked.run_id} asked to stop by {opts.actor} (now {asked.status})")
    return 0


def cmd_approvals(opts: argparse.Namespace) -> int:
    """The writes held for approval that nobody decided yet (view approvals_waiting)."""
    with snapshot(str(_url(opts))) as conn:
        rows = approvals_waiting(conn)
    items = [{"approval_id": str(r["approval_id"]), "run_id": str(r["run_id"]),
              "step": r["step"], "call_id": r["call_id"], "tool": r["tool"],
              "requested_at": r["requested_at"].isoformat()} for r in rows]
    if opts.json:
        say(json.dumps(items))
    elif not items:
        say("no approvals waiting")
    else:
        for item in items:
            say(f"{item['approval_id']}  {item['tool']:24}  run {item['run_id']} "
                  f"step {item['step']}  since {item['requested_at']}")
    return 0


# -- retention (ticketiq.purge_answers, ticketiq.purge_history; docs/operations.md) ------------

def cmd_purge(opts: argparse.Namespace) -> int:
    """Sealed answers past retain_until, then the history of runs finished --older-than ago."""
    async def purge(db: Any) -> dict[str, int]:
        totals: dict[str, int] = {"answers_purged": 0}
        while True:
            deleted = await db.processes.purge_answers(opts.limit)
            totals["answers_purged"] += deleted
            if opts.once or deleted < opts.limit:
                break
        while True:
            counts = await db.processes.purge_history(opts.older_than, opts.limit)
            for name, value in counts.items():
                totals[name] = totals.get(name, 0) + value
            if opts.once or not any(counts.values()):
                break
        return totals

    totals = _with_driver(opts, purge)
    if opts.json:
        say(json.dumps(totals))
    else:
        say(", ".join(f"{value} {name.removesuffix('_purged')}" for name, value in totals.items())
              + " purged")
    return 0


# -- seal keys (TICKETIQ_SEAL_KEYS, ticketiq_pg.config.parse_seal_keys) -----------------------


SEAL_KEY_HELP = """\
Print a fresh seal key as ID:BASE64KEY, one item of TICKETIQ_SEAL_KEYS
(export TICKETIQ_SEAL_KEYS=$(ticketiq-pg seal-key)).

The first key of TICKETIQ_SEAL_KEYS seals checkpoints and answers; every key listed
verifies them.  To rotate, in three steps:
  1. append the new key (old:...,new:...) on every process and restart them one by one:
     each now verifies what the new key will seal, and still seals with the old key;
  2. put the new key first (new:...,old:...) and restart them again: they seal with it;
  3. drop the old key once no run in flight or suspended has a checkpoint or answer
     sealed with it (docs/operators.md): a resume verifies the run's seals, and fails
     the run (agent.run.seal_failed) when a key is missing.
Skipping step 1, a process without the new key may adopt a run sealed with it.
"""


def cmd_seal_key(opts: argparse.Namespace) -> int:
    from ticketiq_pg.config import new_seal_key

    say(new_seal_key(opts.key_id))
    return 0


# What `ticketiq-pg --help` says: for a person at a terminal, so plain text, not reST.
HELP = """\
Durable agent runs on PostgreSQL: install the schema, run an app's worker, and look
at or act on runs.

  ticketiq-pg migrate --create-database    create the database if need be, install
                                           or upgrade the schema ($TICKETIQ_DATABASE_URL)
  ticketiq-pg worker --app app:app         run one app process until SIGTERM, which
                                           hands its runs over at their next step
  ticketiq-pg status | runs | show RUN_ID  what the processes and runs are doing

The worker finds the module of --app in the --app-dir folders, the current directory,
then the installed packages; it reads its settings from the TICKETIQ_* variables
(docs/guide.md, Configuration) and logs to stderr.  The operator's commands are in
docs/operators.md.  Each command has its own --help.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ticketiq-pg", description=HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--database-url", help=f"default: ${ENV_URL}")
        p.add_argument("--sql-dir", type=Path, help="SQL tree (default: the package's)")

    p = sub.add_parser("migrate", help=f"install or upgrade the schema in ${ENV_URL}")
    common(p)
    p.add_argument("--create-database", action="store_true",
                   help="create the database first if it does not exist (the role needs "
                   "CREATEDB; it connects to the server's postgres database to do so)")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("version", help="package version and the database's schema version")
    common(p)
    p.set_defaults(func=cmd_version)

    p = sub.add_parser("demo", help=f"run the demo (on ${ENV_URL} or an embedded server)")
    common(p)
    p.add_argument("--data-dir", type=Path, help="embedded server data (.ticketiq/embedded-pg)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "worker", help="run an app process's worker until SIGTERM (graceful hand-over)"
    )
    p.add_argument("--database-url", help=f"default: ${ENV_URL}")
    p.add_argument("--app", help=f"module:function returning the App (default: ${ENV_APP})")
    p.add_argument("--app-dir", action="append", metavar="DIR",
                   help="look for the app's module in DIR first (repeat for several); the "
                   "current directory is searched next")
    p.add_argument("--process-id", help="this process's id (default: host:pid:random)")
    p.add_argument("--max-runs", type=int, default=None,
                   help="runs driven at once (default TICKETIQ_MAX_RUNS, 10000)")
    p.add_argument("--drain-timeout", type=float, default=30.0,
                   help="seconds to wait at shutdown for runs to reach a step boundary")
    p.add_argument("--log-level", help=f"default: ${ENV_LOG_LEVEL} or INFO")
    p.add_argument("--http-port", type=int, default=None,
                   help="serve the HTTP front on PORT (0: any free port; "
                   "default: $TICKETIQ_HTTP_PORT, else no HTTP)")
    p.add_argument("--http-host", default=None,
                   help="the front's bind address (default: $TICKETIQ_HTTP_HOST or 127.0.0.1)")
    p.add_argument("--metrics-port", type=int, default=None,
                   help="serve /metrics on a port of its own, without a credential (0: any "
                   "free port; default: $TICKETIQ_METRICS_PORT, else none; the front serves "
                   "/metrics too)")
    p.add_argument("--metrics-host", default=None,
                   help="its bind address (default: $TICKETIQ_METRICS_HOST or 127.0.0.1)")
    p.set_defaults(func=cmd_worker)

    def operator_common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--database-url", help=f"default: ${ENV_URL}")
        p.add_argument("--json", action="store_true",
                       help="JSON for scripts (stable keys, ISO 8601 timestamps)")

    p = sub.add_parser("status", help="processes (and those that ended lately), the sweep "
                       "leader, leases about to lapse, runs in flight, workflow runs no "
                       "live worker can run, calls in doubt, approvals, entries and jobs open")
    operator_common(p)
    p.add_argument("--lapse-within", type=seconds_arg, default=LAPSE_WITHIN,
                   metavar="SECONDS", help="list leases expiring within SECONDS (default 3)")
    p.add_argument("--seen-within", type=seconds_arg, default=SEEN_WITHIN,
                   metavar="SECONDS", help="list processes seen within SECONDS, connected or "
                   "holding a lease, and those that ended within SECONDS, with how "
                   "(default 300; 0: every process)")
    p.add_argument("--limit", type=positive_int, default=STATUS_LIMIT,
                   help="rows per section (default 20; the counts are always complete)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("runs", help="runs, newest first (filterable)")
    operator_common(p)
    p.add_argument("--status", action="append", choices=RUN_STATUSES,
                   help="only runs in this status (repeat for several)")
    p.add_argument("--entry-point", help="only runs of this entry point")
    p.add_argument("--holder", help="only runs whose lease this process holds")
    p.add_argument("--since", type=since_arg, metavar="WHEN",
                   help="only runs started since WHEN: an age (15m, 2h, 3d) or ISO timestamp")
    p.add_argument("--limit", type=positive_int, default=LIST_LIMIT,
                   help="at most this many runs (default 50)")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("show", help="one run: checkpoints, calls, answer, transcript, audit")
    operator_common(p)
    p.add_argument("run_id", type=run_id_arg, metavar="RUN_ID")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("audit", help="audit rows, newest first (filterable)")
    operator_common(p)
    p.add_argument("--event", action="append",
                   help="only this event; * matches any text (agent.run.*); repeat for several")
    p.add_argument("--run", type=run_id_arg, metavar="RUN_ID", help="only this run's rows")
    p.add_argument("--since", type=since_arg, metavar="WHEN",
                   help="only rows since WHEN: an age (15m, 2h, 3d) or ISO timestamp")
    p.add_argument("--limit", type=positive_int, default=LIST_LIMIT,
                   help="at most this many rows (default 50)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("approvals", help="writes held for approval that nobody decided yet")
    p.add_argument("--database-url", help=f"default: ${ENV_URL}")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_approvals)
    # A person's act on one thing: approve, reject, stop.
    for name, what, subject, func in (
            ("approve", "approve a write held for approval", "approval_id", cmd_decide),
            ("reject", "reject a write held for approval", "approval_id", cmd_decide),
            ("stop", "ask a run to stop at its next step boundary", "run_id", cmd_stop)):
        p = sub.add_parser(name, help=what)
        p.add_argument(subject, type=run_id_arg, metavar=subject.upper())
        p.add_argument("--actor", default=Environment.current().user,
                       help="who does it (default: $USER)")
        p.add_argument("--reason", help="why")
        p.add_argument("--database-url", help=f"default: ${ENV_URL}")
        p.add_argument("--json", action="store_true", help="JSON for scripts")
        p.set_defaults(func=func)

    add_manage_parsers(sub)

    p = sub.add_parser("purge", help="retention: sealed answers past retain_until, then the "
                       "history of runs finished --older-than ago (audit rows that old too)")
    p.add_argument("--older-than", type=age_arg, required=True, metavar="AGE",
                   help="finished at least this long ago by the database clock: seconds or "
                   "90s, 15m, 2h, 30d, 1w")
    p.add_argument("--limit", type=positive_int, default=1000,
                   help="rows per statement (default 1000); each is its own transaction")
    p.add_argument("--once", action="store_true",
                   help="one statement of each instead of repeating until nothing is left")
    p.add_argument("--database-url", help=f"default: ${ENV_URL}")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_purge)

    add_inspect_parser(sub, run_id_arg)

    add_key_parser(sub, lambda q: q.add_argument("--database-url", help=f"default: ${ENV_URL}"))
    sub.choices["api-key"].set_defaults(func=lambda opts: cmd_api_key(opts, str(_url(opts))))
    add_limits_parser(sub, lambda q: q.add_argument("--database-url", help=f"default: ${ENV_URL}"))
    sub.choices["limits"].set_defaults(func=lambda opts: cmd_limits(opts, str(_url(opts))))

    p = sub.add_parser("seal-key", help="print a fresh seal key for TICKETIQ_SEAL_KEYS (and "
                       "how to rotate keys)", description=SEAL_KEY_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--key-id", type=key_id_arg, metavar="ID",
                   help="the key's id (default: k, today's UTC date and 4 random hex digits)")
    p.set_defaults(func=cmd_seal_key)
    return parser


def main(argv: list[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    try:
        return int(opts.func(opts))
    except KeyboardInterrupt:
        return 130
    except (InstallError, psycopg.OperationalError, TicketIQError) as exc:
        say(f"ticketiq-pg: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
