"""The event log lines (``ticketiq_pg.observe.logs``) of grouped statements.

* a ``record_resumes`` statement logs ``call.settled`` for the settlements it recorded,
  each with its own run's id, and none for the items it left out (they log when they
  go alone);
* a line logged in a run's task carries the run's id from the task's name, before any
  statement of its own set it; a grouped statement's task carries no caller's id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import pytest
from psycopg.types.json import Jsonb

from ticketiq_pg.db.group_commit import Grouped
from ticketiq_pg.observe import logs


def test_a_grouped_settlement_statement_logs_what_it_recorded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    left_out, recorded = uuid.uuid4(), uuid.uuid4()
    with caplog.at_level(logging.INFO, logger="ticketiq_pg.events"):
        logs.on_statement(
            "record_resumes",
            ([left_out, recorded], [3, 3], Jsonb([[{"call_id": "a", "settlement": "redone"}],
                                                  [{"call_id": "b", "settlement": "unknown"}]])),
            0.001, [{"item": 2, "run_id": recorded}], None)
    settled = [r for r in caplog.records if getattr(r, "event", None) == "call.settled"]
    assert [(r.run_id, r.call_id, r.settlement) for r in settled] == [  # type: ignore[attr-defined]
        (str(recorded), "b", "unknown")]


async def test_a_run_tasks_lines_carry_its_id_and_a_groups_carry_none() -> None:
    formatter = logs.JsonFormatter()
    seen: dict[str, str | None] = {}

    def line(where: str) -> None:
        record = logging.LogRecord("ticketiq_pg.runtime", logging.INFO, __file__, 1, where,
                                   (), None)
        seen[where] = json.loads(formatter.format(record)).get("run_id")

    run = uuid.uuid4()

    async def together(items: list[str]) -> dict[int, str]:
        line("group")
        return {i: item for i, item in enumerate(items)}

    async def alone(item: str) -> str:
        await asyncio.sleep(0)  # in flight a moment: the others queue behind it
        return item

    grouped: Grouped[str, str] = Grouped(alone, together)

    async def a_run(n: int) -> str:
        if n == 0:
            line("run")
        logs.current_run.set(uuid.uuid4())  # as a run's own statement sets it
        return await grouped.write(f"item {n}")

    tasks = [asyncio.create_task(a_run(n), name=f"run:{run}" if n == 0 else f"other {n}")
             for n in range(3)]
    assert await asyncio.gather(*tasks) == ["item 0", "item 1", "item 2"]
    assert seen == {"run": str(run), "group": None}
