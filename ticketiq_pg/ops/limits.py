"""``ticketiq-pg limits`` and ``ticketiq-pg limits set``: vendor limits, for every process.

``limits`` shows each vendor's limits (who set them: the app's start, or an operator) and
each bucket's figures: tokens now, calls in flight, until when the vendor asked every
process to wait, and the tokens taken, waits and slow-downs counted.  ``limits set``
changes a vendor's limits in the database: every process's next call to the vendor
takes them, with no restart, and an app's start no longer changes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from typing import Any

from ticketiq_pg.errors import InvalidPayload
from ticketiq_pg.ops.keys import with_db
from ticketiq_pg.printable import say


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def cmd_limits(opts: argparse.Namespace, url: str) -> int:
    if opts.limits_command == "set":
        try:
            row = asyncio.run(with_db(url, lambda db: db.set_vendor_limit(
                opts.vendor, opts.rate, opts.burst, opts.concurrency, opts.per, "operator")))
        except InvalidPayload as exc:
            say(f"refused: {exc}")
            return 2
        say(json.dumps(_plain(row)) if opts.json else
            f"{row['vendor']}: rate {row['rate'] or '-'}/s (burst {row['burst']}), "
            f"concurrency {row['concurrency'] or '-'}, per {row['per']} (set by operator)")
        return 0
    rows = [_plain(r) for r in asyncio.run(with_db(url, lambda db: db.vendor_limit_figures()))]
    if opts.json:
        say(json.dumps(rows))
        return 0
    if not rows:
        say("no vendor limits")
    for r in rows:
        scope = f" [{r['scope'] or 'all'}]" if r["scope"] is not None else ""
        slowed = f", waiting until {r['slowed_until']}" if r["slowed_until"] else ""
        say(f"{r['vendor']}{scope}: rate {r['rate'] or '-'}/s burst {r['burst']}, concurrency "
            f"{r['concurrency'] or '-'} (per {r['per']}, set by {r['set_by']}); tokens "
            f"{r['tokens']:.1f}, in flight {r['in_flight']}{slowed}; taken {r['taken']}, "
            f"waited {r['waited']}, slowed {r['slowed']}, suspended {r['suspended']}; runs "
            f"suspended now {r['waiting']}")
    return 0


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("limits", help="vendor limits shared by every process: show, set")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    common(p)
    limits = p.add_subparsers(dest="limits_command")
    q = limits.add_parser("set", help="set a vendor's limits for every process, now")
    q.add_argument("vendor", help="the vendor (Tool.vendor)")
    q.add_argument("--rate", type=float, default=None, help="calls a second (default: none)")
    q.add_argument("--burst", type=int, default=1, help="calls at once within the rate")
    q.add_argument("--concurrency", type=int, default=None, help="calls in flight at most")
    q.add_argument("--per", choices=("all", "owner"), default="all",
                   help="one bucket for all calls, or one per owner")
    q.add_argument("--json", action="store_true", help="JSON for scripts")
    common(q)
