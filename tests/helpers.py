"""Shared helpers for the driver, concurrency and migration tests.

Not fixtures (conftest.py belongs to someone else): plain functions the test modules import.

* :func:`fingerprint` / :func:`fingerprint_sync`: the contents of every table of schema
  ``ticketiq`` (row count and md5 of the sorted rows), to prove a rejected call changed
  nothing (invariant I15).
* :func:`body` / :func:`call`: well-formed checkpoint bodies.
* :func:`allow_fake_clock`, :func:`set_fake_now`: the tests' fake database clock.
* :func:`connect_many`: several autocommit connections at once.
* :func:`send_torn_request`: a POST whose client dies mid-body, as a SIGKILLed worker's.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.migrate import load_tree
from ticketiq_pg.db.rows import StartedRun

#: The schema version an install of this checkout's SQL tree arrives at.
NEWEST = max(load_tree().latest_migration, 1)

TABLES_SQL = """
select c.relname
from pg_catalog.pg_class as c
where c.relnamespace = 'ticketiq'::regnamespace and c.relkind in ('r', 'p')
order by 1
"""


def _table_sql(table: str) -> str:
    ident = sql.Identifier("ticketiq", table).as_string(None)
    return (
        f"select count(*), coalesce(md5(string_agg(t::text, E'\\n' order by t::text)), '')"
        f" from {ident} as t"
    )


async def fingerprint(conn: psycopg.AsyncConnection) -> dict[str, tuple[int, str]]:
    """{table: (rows, md5 of the sorted rows)} for every table of schema ticketiq."""
    result: dict[str, tuple[int, str]] = {}
    cur = await conn.execute(TABLES_SQL)
    tables = [row[0] for row in await cur.fetchall()]
    assert tables, "schema ticketiq has no tables"
    for table in tables:
        cur = await conn.execute(_table_sql(table))
        row = await cur.fetchone()
        assert row is not None
        result[table] = (int(row[0]), str(row[1]))
    return result


def fingerprint_sync(conn: psycopg.Connection) -> dict[str, tuple[int, str]]:
    result: dict[str, tuple[int, str]] = {}
    tables = [row[0] for row in conn.execute(TABLES_SQL).fetchall()]
    assert tables, "schema ticketiq has no tables"
    for table in tables:
        row = conn.execute(_table_sql(table)).fetchone()
        assert row is not None
        result[table] = (int(row[0]), str(row[1]))
    return result


def call(
    call_id: str,
    classification: str = "write",
    *,
    tool: str = "crm.update",
    arguments: dict[str, Any] | None = None,
    step_key: str | None = None,
) -> dict[str, Any]:
    return {
        "call_id": call_id,
        "tool": tool,
        "arguments": {"id": call_id} if arguments is None else arguments,
        "classification": classification,
        "step_key": step_key,
    }


def body(*calls: dict[str, Any], note: str = "", outcomes: dict[str, Any] | None = None) -> dict:
    """A well-formed checkpoint body with the given calls."""
    b: dict[str, Any] = {
        "conversation": [{"role": "user", "content": f"hello {note}".strip()}],
        "calls": list(calls),
        "counters": {"steps": 1},
        "history": [],
        "delegation_keys": {},
    }
    if outcomes is not None:
        b["outcomes"] = outcomes
    return b


async def allow_fake_clock(conn: psycopg.AsyncConnection) -> None:
    await conn.execute("update ticketiq.config set fake_clock_allowed = true")


async def set_fake_now(conn: psycopg.AsyncConnection, when: datetime | None) -> None:
    """Move this session's ticketiq.now() to ``when`` (None: back to the real clock)."""
    value = "" if when is None else when.isoformat()
    await conn.execute("select set_config('ticketiq.fake_now', %s, false)", (value,))


async def db_now(conn: psycopg.AsyncConnection) -> datetime:
    cur = await conn.execute("select ticketiq.now()")
    row = await cur.fetchone()
    assert row is not None
    return row[0]


async def connect_many(url: str, n: int) -> list[psycopg.AsyncConnection]:
    return list(
        await asyncio.gather(
            *(psycopg.AsyncConnection.connect(url, autocommit=True) for _ in range(n))
        )
    )


async def close_all(conns: list[psycopg.AsyncConnection]) -> None:
    await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)


async def start(
    tiq: TicketIQ,
    *,
    holder: str = "p1",
    ttl: float = 30.0,
    conn: psycopg.AsyncConnection | None = None,
    **kwargs: Any,
) -> StartedRun:
    """start_run with dull defaults for everything a test does not care about."""
    kwargs.setdefault("owner", "alice@example.com")
    kwargs.setdefault("run_as", "agent:helpdesk")
    kwargs.setdefault("channel", "teams")
    kwargs.setdefault("entry_point", "helpdesk.triage")
    kwargs.setdefault("may_wait", False)
    return await tiq.start_run(holder=holder, ttl=ttl, conn=conn, **kwargs)


async def scalar(conn: psycopg.AsyncConnection, query: str, params: Any = None) -> Any:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    return None if row is None else row[0]


async def rows(conn: psycopg.AsyncConnection, query: str, params: Any = None) -> list[tuple]:
    cur = await conn.execute(query, params)
    return await cur.fetchall()


def random_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def send_torn_request(base_url: str, path: str, body: bytes, sent: int,
                      headers: dict[str, str] | None = None) -> None:
    """POST ``body`` to ``path`` but send only its first ``sent`` bytes, then hang up:
    what a server sees of a worker SIGKILLed while its request was on the wire."""
    url = urlsplit(base_url)
    head = [f"POST {path} HTTP/1.1", f"Host: {url.netloc}", "Content-Type: application/json",
            f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body[:sent])
        sock.shutdown(socket.SHUT_WR)
        sock.recv(1024)  # the server's answer, if any, or its close


def run_example_test(folder: Any, test_file: str, server_url: str, basetemp: Any,
                     passed: int) -> None:
    """An example's own test file, run as an app author runs it: pytest from its folder,
    on a server URL (no other ``TICKETIQ_*`` setting); every test passed."""
    import os
    import re
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
    env["TICKETIQ_TEST_DATABASE_URL"] = server_url
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--basetemp", str(basetemp), test_file],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert re.search(rf"^{passed} passed", done.stdout.splitlines()[-1]), done.stdout[-2000:]


#: A run's start as the agent framework integrations' tests make it.
APP_START = {"owner": "alice", "run_as": "alice", "channel": "playground", "entry_point": "test"}


async def run_app(db_url: str, app: Any, input: Any, seal_keys: str) -> Any:
    """Start and run one run of ``app`` (its model, tools and step limit) in this process,
    on a :class:`Runner` with fast retries; its outcome."""
    from ticketiq_pg import RetryPolicy
    from ticketiq_pg.config import parse_seal_keys
    from ticketiq_pg.runtime.leases import LeaseKeeper
    from ticketiq_pg.runtime.runner import Runner
    from ticketiq_pg.seal import Sealer

    fast = RetryPolicy(attempts=2, first_delay=0.01, max_delay=0.05, timeout=10)
    async with await TicketIQ.connect(db_url) as db:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        runner = Runner(db, leases, Sealer(parse_seal_keys(seal_keys)), app.model, app.tools,
                        model_retry=fast, tool_retry=fast,
                        **({"max_steps": app.max_steps} if app.max_steps else {}))
        return await runner.start_and_run(**APP_START, input=input)
