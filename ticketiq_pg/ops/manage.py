"""The operator's acts on runs as a whole (issue 42): ``ticketiq-pg list-runs``,
``stop-runs``, ``restart`` and ``fork``, each one SQL function through the driver, as the
HTTP API's (``GET /runs``, ``POST /runs/stop``, ``/runs/{id}/restart``, ``/runs/{id}/fork``).

The operator is the schema's owner: the commands see every owner's runs (``--owner`` to
narrow).  ``fork`` seals the fork anew with ``TICKETIQ_SEAL_KEYS``, the keys the workers
verify with.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from ticketiq_pg.config import Environment, parse_seal_keys
from ticketiq_pg.db.manage import MAX_PAGE, MAX_STOPS, RunFilter
from ticketiq_pg.errors import ConfigError
from ticketiq_pg.ops.args import positive_int, run_id_arg, since_arg
from ticketiq_pg.printable import say
from ticketiq_pg.seal import Sealer

T = TypeVar("T")
STATUSES = ("running", "claimed", "suspended", "completed", "failed", "stopped")


def _driver(opts: argparse.Namespace, work: Callable[[Any], Awaitable[T]]) -> T:
    from ticketiq_pg.db.driver import TicketIQ

    url = opts.database_url or Environment.current().get(Environment.DATABASE_URL)
    if not url:
        raise SystemExit(f"pass --database-url or set {Environment.DATABASE_URL}")

    async def run() -> T:
        db = await TicketIQ.connect(url, min_size=1, max_size=1)
        try:
            return await work(db)
        finally:
            await db.close()

    return asyncio.run(run())


def _when(value: datetime | timedelta | None) -> datetime | None:
    if isinstance(value, timedelta):
        return datetime.now(UTC) - value
    return value


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, datetime) else str(v)
                if isinstance(v, uuid.UUID) else v) for k, v in row.items()}


def _filter(opts: argparse.Namespace) -> RunFilter:
    return RunFilter(owner=opts.owner, statuses=opts.status, kind=opts.kind,
                     workflow=opts.workflow, created_from=_when(opts.since),
                     created_to=_when(getattr(opts, "until", None)),
                     ended_from=_when(getattr(opts, "ended_since", None)),
                     failure=getattr(opts, "failure", None))


def cmd_list_runs(opts: argparse.Namespace) -> int:
    """A page of runs newest first (ticketiq.list_runs); --after the last row's cursor."""
    after = None
    if opts.after:
        at, _, run_id = opts.after.partition("/")
        after = (datetime.fromisoformat(at), uuid.UUID(run_id))
    rows = _driver(opts, lambda db: db.manage.list_runs(_filter(opts), after=after,
                                                         limit=opts.limit))
    items = [_jsonable(r) for r in rows]
    full = len(items) == opts.limit
    cursor = f"{items[-1]['created_at']}/{items[-1]['run_id']}" if full else None
    if opts.json:
        say(json.dumps({"runs": items, "next": cursor}))
        return 0
    for r in items:
        flow = f" {r['workflow']}@{r['workflow_version']}" if r["workflow"] else ""
        say(f"{r['run_id']}  {r['status']:9}  {r['kind']}{flow}  owner {r['owner']}  step "
            f"{r['last_step']}  losses {r['loss_count']}  {r['created_at']}"
            + (f"  ({r['failure_reason']})" if r["failure_reason"] else ""))
    if cursor:
        say(f"more: --after {cursor}")
    return 0


def cmd_stop_runs(opts: argparse.Namespace) -> int:
    """Ask every unfinished run the filters match to stop (ticketiq.stop_runs)."""
    where = _filter(opts)
    if not any((where.owner, where.statuses, where.kind, where.workflow, where.created_from,
                where.created_to)):
        raise SystemExit("stop-runs: name at least one filter (--status, --kind, --owner, "
                         "--workflow, --since, --until)")
    rows = _driver(opts, lambda db: db.manage.stop_runs(opts.actor, where, reason=opts.reason,
                                                         limit=opts.limit))
    if opts.json:
        say(json.dumps([_jsonable(r) for r in rows]))
    else:
        say(f"{len(rows)} runs asked to stop by {opts.actor}")
        for r in rows:
            say(f"{r['run_id']}  now {r['status']}")
    return 0


def cmd_restart(opts: argparse.Namespace) -> int:
    """Restart a failed or stopped run from its last written step (ticketiq.restart_run)."""
    row = _driver(opts, lambda db: db.manage.restart_run(opts.run_id, opts.actor, opts.reason))
    if opts.json:
        say(json.dumps(_jsonable(row)))
    else:
        say(f"run {row['run_id']} restarted by {opts.actor} from step {row['step']} (was "
            f"{row['previous_status']}; {row['losses_reset']} losses reset)")
    return 0


def _sealer() -> Sealer:
    raw = Environment.current().get("TICKETIQ_SEAL_KEYS")
    if not raw:
        raise ConfigError("TICKETIQ_SEAL_KEYS is not set: a fork is sealed with the keys the "
                          "workers verify with")
    return Sealer(parse_seal_keys(raw))


def cmd_fork(opts: argparse.Namespace) -> int:
    """Fork a run from a step it wrote into a new run (ticketiq.fork_source, fork_run)."""
    from ticketiq_pg.runtime.fork import fork_run

    sealer = _sealer()
    given = opts.input is not None
    value = json.loads(opts.input) if given else None
    if given and not isinstance(value, dict):
        raise SystemExit("fork: --input is a JSON object")
    row = _driver(opts, lambda db: fork_run(db, sealer, opts.run_id, opts.step, opts.actor,
                                            reason=opts.reason, input=value,
                                            input_given=given))
    if opts.json:
        say(json.dumps(_jsonable(row)))
    else:
        say(f"run {row['run_id']} forked from run {row['source_run_id']} at step "
            f"{row['step']} by {opts.actor} (now {row['status']})")
    return 0


def add_parsers(sub: Any) -> None:
    """The four commands, on the CLI's subparsers."""

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--database-url", help=f"default: ${Environment.DATABASE_URL}")
        p.add_argument("--json", action="store_true", help="JSON for scripts")

    def filters(p: argparse.ArgumentParser, statuses: tuple[str, ...]) -> None:
        p.add_argument("--status", action="append", choices=statuses,
                       help="only runs in this status (repeat for several)")
        p.add_argument("--kind", help="only runs of this entry kind")
        p.add_argument("--owner", help="only this owner's runs")
        p.add_argument("--workflow", help="only runs of this workflow")
        p.add_argument("--since", type=since_arg, metavar="WHEN",
                       help="only runs created since WHEN (15m, 2h, 3d or ISO timestamp)")
        p.add_argument("--until", type=since_arg, metavar="WHEN",
                       help="only runs created before WHEN")

    def person(p: argparse.ArgumentParser) -> None:
        p.add_argument("--actor", default=Environment.current().user,
                       help="who does it (default: $USER)")
        p.add_argument("--reason", help="why (audited)")

    p = sub.add_parser("list-runs", help="runs newest first through ticketiq.list_runs "
                       "(the API's filters and cursor)")
    common(p)
    filters(p, STATUSES)
    p.add_argument("--ended-since", type=since_arg, metavar="WHEN",
                   help="only runs that ended since WHEN")
    p.add_argument("--failure", help="only runs whose failure reason holds this text")
    p.add_argument("--after", metavar="CURSOR", help="the page after this cursor (printed "
                   "as 'more: --after ...')")
    p.add_argument("--limit", type=positive_int, default=50,
                   help=f"at most this many runs (default 50, at most {MAX_PAGE})")
    p.set_defaults(func=cmd_list_runs)

    p = sub.add_parser("stop-runs", help="ask every unfinished run the filters match to stop")
    common(p)
    filters(p, STATUSES[:3])
    person(p)
    p.add_argument("--limit", type=positive_int, default=100,
                   help=f"at most this many runs (default 100, at most {MAX_STOPS})")
    p.set_defaults(func=cmd_stop_runs)

    p = sub.add_parser("restart", help="restart a failed or stopped run from its last "
                       "written step")
    common(p)
    p.add_argument("run_id", type=run_id_arg, metavar="RUN_ID")
    person(p)
    p.set_defaults(func=cmd_restart)

    p = sub.add_parser("fork", help="fork a run from a step it wrote into a new run")
    common(p)
    p.add_argument("run_id", type=run_id_arg, metavar="RUN_ID")
    p.add_argument("--step", type=positive_int, required=True, help="a step the run wrote")
    p.add_argument("--input", help="the fork's input, a JSON object (default: the run's)")
    person(p)
    p.set_defaults(func=cmd_fork)
