"""2. A peer on the same server: DBOS Transact (the optional ``peers`` extra).

The same work both ways: ``peer_runs`` runs of ``peer_steps`` steps, each
step one call of the in-process read tool, ``peer_concurrency`` runs at
once, whole runs timed (start, every step, the final answer):

* ours: the Runner; each step a sealed write-ahead checkpoint of the whole
  conversation so far (``ticketiq.write_checkpoint``), the answer sealed
  and handed on;
* DBOS: an async ``@DBOS.workflow`` of ``peer_steps`` ``@DBOS.step`` calls;
  DBOS records each step's output (and the workflow's status, input and
  output) in its system database, a database of its own on the same server.

The runs go in ``peer_blocks`` blocks alternating ours/DBOS (A/B/A/B).
Statements per step count every top-level statement each database ran
(pg_stat_statements), including per-run overhead and DBOS's own pollers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.testing.cluster import create_database, drop_database

from .common import BenchDB, Sizes, StatementSnapshot
from .workload import BenchModel, make_runner, search_result, start_kwargs


def dbos_available() -> tuple[bool, str]:
    try:
        import dbos
    except ImportError:
        return False, "dbos is not installed: pip install -e '.[peers]' (make bench does)"
    return True, f"dbos {getattr(dbos, '__version__', None) or _version('dbos')}"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


class _Dbos:
    """DBOS launched on a database of its own; the workflow of ``steps`` read steps."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.url = create_database(admin_url, "tiq_bench_dbos")
        self.dbname = self.url.rsplit("/", 1)[-1]
        from dbos import DBOS

        self.DBOS = DBOS
        DBOS(config={"name": "ticketiq-bench", "system_database_url": self.url,
                     "log_level": "WARNING"})

        @DBOS.step()
        async def read_tool(run: int, step: int) -> dict[str, Any]:
            return search_result(f"export timeout connector {step}")

        @DBOS.workflow()
        async def agent_run(run: int, steps: int) -> str:
            for step in range(1, steps + 1):
                await read_tool(run, step)
            return f"Known issue KB-1042; workaround sent ({steps} steps)."

        self.workflow = agent_run
        DBOS.launch()
        for name in ("dbos", "sqlalchemy"):
            logging.getLogger(name).setLevel(logging.WARNING)

    async def run_one(self, index: int, steps: int) -> None:
        handle = await self.DBOS.start_workflow_async(self.workflow, index, steps)
        await handle.get_result()

    def close(self) -> None:
        try:
            self.DBOS.destroy(destroy_registry=True)
        finally:
            drop_database(self.admin_url, self.url)


async def _block(runner_one: Any, first: int, count: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            await runner_one(index)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(first + i) for i in range(count)))
    return time.perf_counter() - t0


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    ok, note = dbos_available()
    if not ok:
        log(f"  peer: skipped: {note}")
        return {"skipped": note}
    try:
        peer = _Dbos(bdb.admin_url)
    except Exception as exc:  # noqa: BLE001 - report, do not fail the bench
        msg = f"DBOS could not start here: {type(exc).__name__}: {exc}"
        log(f"  peer: skipped: {msg}")
        return {"skipped": msg}
    db = await TicketIQ.connect(bdb.url, min_size=sizes.peer_concurrency + 1,
                                max_size=sizes.peer_concurrency + 1)
    runner = make_runner(db, "bench-peer", BenchModel())
    runner.leases.start()
    steps = sizes.peer_steps

    async def ours(index: int) -> None:
        outcome = await runner.start_and_run(**start_kwargs(index, "reads", steps))
        if outcome.status != "completed":
            raise RuntimeError(f"peer run ended {outcome.status}: {outcome.reason}")

    async def theirs(index: int) -> None:
        await peer.run_one(index, steps)

    per_block = max(1, sizes.peer_runs // sizes.peer_blocks)
    times = {"ticketiq": 0.0, "dbos": 0.0}
    runs = {"ticketiq": 0, "dbos": 0}
    try:
        # Warm-up (not counted): a few runs each.
        await _block(ours, 900_000, sizes.peer_concurrency, sizes.peer_concurrency)
        await _block(theirs, 900_000, sizes.peer_concurrency, sizes.peer_concurrency)
        ours_before = StatementSnapshot(bdb.url, bdb.pgss)
        theirs_before = StatementSnapshot(bdb.url, bdb.pgss, peer.dbname)
        for block in range(sizes.peer_blocks):
            first = block * per_block
            times["ticketiq"] += await _block(ours, first, per_block, sizes.peer_concurrency)
            runs["ticketiq"] += per_block
            times["dbos"] += await _block(theirs, first, per_block, sizes.peer_concurrency)
            runs["dbos"] += per_block
        ours_after = StatementSnapshot(bdb.url, bdb.pgss)
        theirs_after = StatementSnapshot(bdb.url, bdb.pgss, peer.dbname)
    finally:
        await runner.leases.stop()
        await db.close()
        peer.close()
    out: dict[str, Any] = {"peer": note, "runs": runs["ticketiq"], "steps_per_run": steps,
                           "concurrency": sizes.peer_concurrency, "blocks": sizes.peer_blocks}
    for name in ("ticketiq", "dbos"):
        out[name] = {
            "seconds": times[name],
            "runs_per_s": runs[name] / times[name],
            "steps_per_s": runs[name] * steps / times[name],
        }
    out["ratio_steps_per_s"] = out["ticketiq"]["steps_per_s"] / out["dbos"]["steps_per_s"]
    if bdb.pgss:
        total_steps = runs["ticketiq"] * steps
        out["ticketiq"]["statements_per_step"] = ours_after.calls_since(ours_before) / total_steps
        out["dbos"]["statements_per_step"] = (
            theirs_after.calls_since(theirs_before) / (runs["dbos"] * steps))
    log(f"  peer: ours {out['ticketiq']['steps_per_s']:,.0f} steps/s, DBOS "
        f"{out['dbos']['steps_per_s']:,.0f} steps/s, ratio {out['ratio_steps_per_s']:.2f}")
    return out
