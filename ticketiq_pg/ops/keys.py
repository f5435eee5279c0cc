"""``ticketiq-pg api-key create|list|revoke``: the front's API keys.

A key's text (``tiq_<key id>_<secret>``) is printed once, at creation; the database
keeps only the SHA-256 of its secret, so a lost key is revoked and replaced.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from typing import Any

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.printable import say


async def with_db(url: str, work: Callable[[TicketIQ], Any]) -> Any:
    db = await TicketIQ.connect(url, group_commit=False)
    try:
        return await work(db)
    finally:
        await db.close()


def cmd_api_key(opts: argparse.Namespace, url: str) -> int:
    if opts.key_command == "create":
        text, key = asyncio.run(with_db(url, lambda db: create_api_key(
            db, opts.identity, opts.run_as or (), opts.scope or ())))
        say(json.dumps({"key": text, "key_id": key.key_id, "identity": key.identity,
                          "run_as": key.run_as, "scopes": key.scopes}) if opts.json else
              f"{text}\n(key id {key.key_id} for {key.identity}: shown once, store it now)")
        return 0
    if opts.key_command == "list":
        keys = asyncio.run(with_db(url, lambda db: db.keys.list_api_keys()))
        rows = [{"key_id": k.key_id, "identity": k.identity, "run_as": k.run_as,
                 "scopes": k.scopes, "created_at": k.created_at.isoformat(),
                 "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
                 "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None}
                for k in keys]
        if opts.json:
            say(json.dumps(rows))
        else:
            for r in rows:
                state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "live"
                say(f"{r['key_id']}  {r['identity']}  run-as={','.join(r['run_as']) or '-'}"
                      f"  scopes={','.join(r['scopes']) or '-'}  {state}"
                      f"  last used {r['last_used_at'] or 'never'}")
        return 0
    revoked = asyncio.run(with_db(url, lambda db: db.keys.revoke_api_key(opts.key_id)))
    say(json.dumps({"key_id": opts.key_id, "revoked": revoked}) if opts.json else
          (f"revoked {opts.key_id}" if revoked else f"{opts.key_id}: unknown or revoked already"))
    return 0 if revoked else 1


def add_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("api-key", help="create, list or revoke the HTTP front's API keys")
    keys = p.add_subparsers(dest="key_command", required=True)
    create = keys.add_parser("create", help="make a key (its text is printed once)")
    create.add_argument("--identity", required=True, help="who the key proves (run owner)")
    create.add_argument("--run-as", action="append", metavar="NAME",
                        help="a name the identity may run as (repeat; * for any)")
    create.add_argument("--scope", action="append", metavar="SCOPE",
                        help="a scope (repeat); admin sees and stops every run")
    keys.add_parser("list", help="every key, newest first, with its last use (never a "
                    "secret)")
    revoke = keys.add_parser("revoke", help="revoke a key; it verifies no more")
    revoke.add_argument("key_id", metavar="KEY_ID")
    for q in keys.choices.values():
        common(q)
        q.add_argument("--json", action="store_true", help="JSON for scripts")
