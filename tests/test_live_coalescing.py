"""A step's streamed text is coalesced: at most one NOTIFY an interval, however many
pieces the model hands over in it (ticketiq_pg/runtime/live.py).

The bound is counted against the time the stream really took, so a slow machine only
widens it: each statement follows a timer of ``interval`` armed while none was
pending.  It used to arm one timer a piece, which sent about one NOTIFY a piece.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.live import LiveEvents

INTERVAL = 0.2
PIECES = 50
GAP = 0.02


async def test_a_steps_text_goes_in_at_most_one_notify_an_interval(db_url: str) -> None:
    db = await TicketIQ.connect(db_url, min_size=1, max_size=2)
    live = LiveEvents(db, mode="always", interval=INTERVAL)
    run_id = uuid.uuid4()
    try:
        sink = live.text_sink(run_id, 1, 1)
        assert sink is not None
        began = time.monotonic()
        for i in range(PIECES):
            sink(f"w{i} ")
            await asyncio.sleep(GAP)
        live.text_done(run_id, 1, 1)
        await live.close()
        took = time.monotonic() - began
    finally:
        await db.close()
    assert live.failed == 0
    # every piece was sent (coalesced), in one statement an interval at most, plus the
    # one that sends what the step's end found held
    assert live.sent >= 1
    assert db.statements["notify"] == live.statements
    assert live.statements <= took / INTERVAL + 2, (live.statements, took)
