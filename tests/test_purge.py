"""Retention: ``TicketIQ.purge_history`` and ``ticketiq-pg purge`` (the SQL is proven by pgTAP).

A finished run old enough goes with its checkpoints and audit rows; a running run and a
run still holding a sealed answer stay; the CLI reports the counts it deleted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import psycopg

from ticketiq_pg.db.driver import TicketIQ

BODY = {"conversation": [{"role": "user", "content": "help"}], "calls": [],
        "counters": {"model_steps": 1}, "history": [], "delegation_keys": {}}


async def _runs(db: TicketIQ) -> tuple:  # type: ignore[type-arg]
    finished = await db.start_run(holder="p", owner="o", run_as="o", channel="c",
                                  entry_point="e", may_wait=False, ttl=60)
    await db.write_checkpoint(finished.run_id, finished.epoch, 1,
                              BODY, "seal", "k1")
    await db.fail_run(finished.run_id, finished.epoch, "done with it")
    running = await db.start_run(holder="p", owner="o", run_as="o", channel="c",
                                 entry_point="e", may_wait=False, ttl=60)
    return finished.run_id, running.run_id


def _count(url: str, sql: str, *params: object) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchone()[0]  # type: ignore[index]


async def test_purge_history_deletes_only_old_finished_runs(db_url: str) -> None:
    db = await TicketIQ.connect(db_url)
    try:
        finished, running = await _runs(db)
        assert (await db.processes.purge_history(3600))["runs_purged"] == 0  # not old enough
        await asyncio.sleep(0.05)
        counts = await db.processes.purge_history(0.01)
        assert counts["runs_purged"] == 1 and counts["checkpoints_purged"] == 1, counts
        assert counts["audit_purged"] >= 1, counts
        assert _count(db_url, "select count(*) from ticketiq.runs where run_id = %s",
                      finished) == 0
        assert _count(db_url, "select count(*) from ticketiq.audit where run_id = %s",
                      finished) == 0
        assert (await db.get_run(running)).status == "running"
        assert not any((await db.processes.purge_history(0.01)).values())
    finally:
        await db.close()


def test_purge_cli_reports_what_it_deleted(db_url: str) -> None:
    async def setup() -> None:
        db = await TicketIQ.connect(db_url)
        try:
            await _runs(db)
        finally:
            await db.close()

    asyncio.run(setup())
    time.sleep(1.1)
    out = subprocess.run(
        [sys.executable, "-m", "ticketiq_pg.ops.cli", "purge", "--older-than", "1s", "--json",
         "--database-url", db_url], capture_output=True, text=True, check=True).stdout
    totals = json.loads(out)
    assert (totals["answers_purged"], totals["runs_purged"], totals["checkpoints_purged"]) == (
        0, 1, 1), totals
    bad = subprocess.run(
        [sys.executable, "-m", "ticketiq_pg.ops.cli", "purge", "--older-than", "soon",
         "--database-url", db_url], capture_output=True, text=True)
    assert bad.returncode == 2 and "older-than" in bad.stderr
