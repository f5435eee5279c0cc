"""Hardening of the SQL API against a caller that attacks it directly.

* A liveness token is released only by the session that holds it; a release from any
  other session changes nothing (I13: liveness stays a hint nobody else can switch off).
"""

from __future__ import annotations

import psycopg
from helpers import fingerprint, rows

from ticketiq_pg.db.driver import TicketIQ

# -- 1. release_liveness ------------------------------------------------------------


async def test_release_liveness_from_another_session_changes_nothing(db_url: str) -> None:
    """Finding 1: session X releasing the victim's token gets false and changes nothing;
    the victim stays watched and still sees its own token held."""
    tiq = TicketIQ()
    victim = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    other = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    admin = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await tiq.register_process("victim", conn=victim)
        await tiq.hold_liveness("victim", conn=victim)
        before = await fingerprint(admin)

        assert await tiq.release_liveness("victim", conn=other) is False
        assert await fingerprint(admin) == before
        assert await rows(admin, "select stopped_at, ended_reason from ticketiq.processes"
                                 " where process_id = 'victim'") == [(None, None)]
        watched = await rows(victim, "select process_id, alive, session is not null"
                                     " from ticketiq.watch_processes('victim')")
        assert watched == [("victim", True, True)]
        # its own session still releases it
        assert await tiq.release_liveness("victim", conn=victim) is True
    finally:
        for conn in (victim, other, admin):
            await conn.close()
