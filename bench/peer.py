"""2. Peers on the same server: DBOS Transact and Absurd (the optional ``peers`` extra).

The same work both ways: ``peer_runs`` runs of ``peer_steps`` steps, each
step one call of the in-process read tool, ``peer_levels`` runs at
once, whole runs timed (start, every step, the final answer):

* ours: the Runner; each step a sealed write-ahead checkpoint of the whole
  conversation so far (``ticketiq.write_checkpoint``), the answer sealed
  and handed on;
* DBOS: an async ``@DBOS.workflow`` of ``peer_steps`` ``@DBOS.step`` calls;
  DBOS records each step's output (and the workflow's status, input and
  output) in its system database, a database of its own on the same server.

* Absurd: a task of ``peer_steps`` ``ctx.step`` calls, on its own database
  (its schema as ``absurdctl init`` installs it), in its best configuration
  (:class:`_Absurd`).

* the floor, ``raw``: each run ``peer_steps`` single-statement ``UPDATE``s of the
  very checkpoint bodies ours wrote (on a database of its own), nothing else: no
  design that makes each step durable before its calls can beat it at one run at
  once (one commit a step), so it bounds what a ratio to a peer can reach.

At each of ``peer_levels`` runs at once, the runs go in ``peer_blocks``
blocks alternating ours/DBOS/Absurd/raw (A/B/C/D/A/B/C/D), ``peer_repeats``
times over: each rate and each ratio is the median of the repeats.  Statements per step
count every top-level statement each database ran (pg_stat_statements),
including per-run overhead and the peers' own pollers; transactions per
step, each database's commits and rollbacks (pg_stat_database).
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import time
from typing import Any

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.testing.postgres import create_database, drop_database

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


class _Absurd:
    """Absurd (``absurd-sdk``) on a database of its own: ``steps`` read steps a task.

    Its best configuration here: one worker per run at once, each an
    ``AsyncAbsurd`` on a connection of its own (``start_worker``, concurrency 1,
    polling every 10 ms when idle); the SDK's default, one client with
    ``concurrency=N`` on one connection, runs N tasks over that one connection.
    A block spawns its runs, then waits until all are completed, read every
    5 ms on a connection of the bench's (those reads are left out of its
    statement counts).

    The workers run only for Absurd's own blocks (:meth:`block` starts them,
    gives them :data:`CONNECT_S` to connect and poll before its clock starts,
    and stops them after): idle, eight of them poll 800 times a second, in this
    process and on this server, and so took client and server CPU from the
    other arms' blocks.
    """

    #: Time the workers have to connect and poll once before a block's clock starts.
    CONNECT_S = 0.1

    QUEUE = "bench"

    def __init__(self, admin_url: str, steps: int) -> None:
        import absurdctl
        import psycopg

        self.admin_url = admin_url
        self.url = create_database(admin_url, "tiq_bench_absurd")
        self.dbname = self.url.rsplit("/", 1)[-1]
        self.steps = steps
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(absurdctl.BUNDLED_SCHEMA_SQL)  # what `absurdctl init` applies
            conn.execute("select absurd.create_queue(%s)", (self.QUEUE,))
        self.workers: list[Any] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.polls = 0

    def _client(self) -> Any:
        from absurd_sdk import AsyncAbsurd

        client = AsyncAbsurd(self.url, queue_name=self.QUEUE)
        steps = self.steps

        @client.register_task("agent_run")
        async def agent_run(params: Any, ctx: Any) -> str:
            for step in range(1, steps + 1):
                async def read(step: int = step) -> Any:
                    return search_result(f"export timeout connector {step}")
                await ctx.step(f"read-{step}", read)
            return f"Known issue KB-1042; workaround sent ({steps} steps)."

        return client

    async def start(self, workers: int) -> None:
        import psycopg

        await self.stop()
        self.spawner = self._client()
        self.poller = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        for index in range(workers):
            client = self._client()
            self.workers.append(client)
            self.tasks.append(asyncio.create_task(client.start_worker(
                worker_id=f"bench-{index}", concurrency=1, poll_interval=0.01)))

    async def block(self, first: int, count: int, workers: int) -> float:
        """``count`` runs on ``workers`` workers started for this block alone."""
        await self.start(workers)
        try:
            await asyncio.sleep(self.CONNECT_S)
            return await self._timed(first, count)
        finally:
            await self.stop()

    async def _timed(self, first: int, count: int) -> float:
        t0 = time.perf_counter()
        ids = [(await self.spawner.spawn("agent_run", {"run": first + i}))["task_id"]
               for i in range(count)]
        while True:
            self.polls += 1
            cur = await self.poller.execute(
                f"select count(*) from absurd.t_{self.QUEUE} where state = 'completed'"
                " and task_id = any(%s)", (ids,))
            row = await cur.fetchone()
            if row is not None and row[0] == count:
                return time.perf_counter() - t0
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        for client in self.workers:
            client.stop_worker()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        for client in self.workers:
            await client.close()
        self.workers, self.tasks = [], []
        if getattr(self, "spawner", None) is not None:
            await self.spawner.close()
            await self.poller.close()
            self.spawner = None

    def close(self) -> None:
        drop_database(self.admin_url, self.url)


class _RawUpdate:
    """The floor: each step one ``UPDATE`` of a checkpoint body, on a database of its own."""

    def __init__(self, admin_url: str, rows: int) -> None:
        import psycopg

        self.admin_url = admin_url
        self.url = create_database(admin_url, "tiq_bench_raw")
        self.dbname = self.url.rsplit("/", 1)[-1]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("create table peer_raw (run_id integer primary key, state jsonb)")
            conn.execute("insert into peer_raw select g, '{}' from generate_series(0, %s) as g",
                         (rows - 1,))
        self.payloads: list[Any] = []
        self.pool: Any = None

    async def open(self, size: int, payloads: list[Any]) -> None:
        from psycopg_pool import AsyncConnectionPool

        self.payloads = payloads
        self.pool = AsyncConnectionPool(self.url, min_size=size, max_size=size, open=False,
                                        kwargs={"autocommit": True})
        await self.pool.open(wait=True)

    async def run_one(self, index: int, slots: int) -> None:
        from psycopg.types.json import Jsonb

        for body in self.payloads:
            async with self.pool.connection() as conn:
                await conn.execute("update peer_raw set state = %s where run_id = %s",
                                   (Jsonb(body), index % slots))

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()
        drop_database(self.admin_url, self.url)


def absurd_available() -> tuple[bool, str]:
    try:
        import absurd_sdk  # noqa: F401
        import absurdctl  # noqa: F401
    except ImportError:
        return False, "absurd-sdk / absurdctl are not installed: pip install -e '.[peers]'"
    return True, f"absurd-sdk {_version('absurd-sdk')}, absurdctl {_version('absurdctl')}"


async def _block(runner_one: Any, first: int, count: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            await runner_one(index)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(first + i) for i in range(count)))
    return time.perf_counter() - t0


def _xacts(url: str, dbname: str) -> float:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select xact_commit + xact_rollback from pg_stat_database"
                           " where datname = %s", (dbname,)).fetchone()
    return float(row[0]) if row else 0.0


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    ok, note = dbos_available()
    a_ok, a_note = absurd_available()
    if not ok:
        log(f"  peer: skipped: {note}")
        return {"skipped": note}
    try:
        peer = _Dbos(bdb.admin_url)
    except Exception as exc:  # noqa: BLE001 - report, do not fail the bench
        msg = f"DBOS could not start here: {type(exc).__name__}: {exc}"
        log(f"  peer: skipped: {msg}")
        return {"skipped": msg}
    steps = sizes.peer_steps
    absurd: _Absurd | None = None
    if a_ok:
        try:
            absurd = _Absurd(bdb.admin_url, steps)
        except Exception as exc:  # noqa: BLE001 - report why, measure the others
            a_ok, a_note = False, f"Absurd could not start here: {type(exc).__name__}: {exc}"
    top = max(sizes.peer_levels)
    db = await TicketIQ.connect(bdb.url, min_size=top + 1, max_size=top + 1)
    runner = make_runner(db, "bench-peer", BenchModel())
    runner.leases.start()

    async def ours(index: int) -> None:
        outcome = await runner.start_and_run(**start_kwargs(index, "reads", steps))
        if outcome.status != "completed":
            raise RuntimeError(f"peer run ended {outcome.status}: {outcome.reason}")

    async def theirs(index: int) -> None:
        await peer.run_one(index, steps)

    raw = _RawUpdate(bdb.admin_url, top)

    async def floor(index: int) -> None:
        await raw.run_one(index, top)

    per_block = max(1, sizes.peer_runs // sizes.peer_blocks)
    names = ["ticketiq", "dbos"] + (["absurd"] if absurd is not None else []) + ["raw"]
    dbnames = {"ticketiq": bdb.url.rsplit("/", 1)[-1], "dbos": peer.dbname,
               "raw": raw.dbname}
    if absurd is not None:
        dbnames["absurd"] = absurd.dbname
    out: dict[str, Any] = {"peer": note, "absurd": a_note if absurd is not None else None,
                           "absurd_skipped": None if absurd is not None else a_note,
                           "runs": per_block * sizes.peer_blocks, "steps_per_run": steps,
                           "blocks": sizes.peer_blocks, "by_concurrency": {}}
    seq = 0
    try:
        # The floor replays the checkpoints of one of ours: the bytes ours writes a step.
        sample = await runner.start_and_run(**start_kwargs(800_000, "reads", steps))
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            cur = await conn.execute("select body from ticketiq.checkpoints where run_id = %s"
                                     " order by step", (sample.run_id,))
            payloads = [row[0] for row in await cur.fetchall()]
        await raw.open(top, payloads or [{}] * steps)
        for c in sizes.peer_levels:
            async def block(name: str, first: int, c: int = c) -> float:
                if name == "ticketiq":
                    return await _block(ours, first, per_block, c)
                if name == "dbos":
                    return await _block(theirs, first, per_block, c)
                if name == "raw":
                    return await _block(floor, first, per_block, c)
                assert absurd is not None
                return await absurd.block(first, per_block, c)

            load_at_start = [round(x, 2) for x in os.getloadavg()]
            for name in names:  # warm-up, not counted
                await block(name, 900_000 + seq)
            seq += 1000
            before = {n: StatementSnapshot(bdb.url, bdb.pgss, dbnames[n]) for n in names}
            xacts = {n: _xacts(bdb.url, dbnames[n]) for n in names}
            polls = absurd.polls if absurd is not None else 0
            rep_steps = sizes.peer_blocks * per_block * steps
            rates: dict[str, list[float]] = {n: [] for n in names}
            for _rep in range(sizes.peer_repeats):  # medians of the repeats, each alternating
                times = dict.fromkeys(names, 0.0)
                for index in range(sizes.peer_blocks):
                    for name in names:  # alternating: A/B/C/A/B/C...
                        times[name] += await block(name, seq + index * per_block)
                seq += 10 * sizes.peer_blocks * per_block
                for name in names:
                    rates[name].append(rep_steps / times[name])
            after = {n: StatementSnapshot(bdb.url, bdb.pgss, dbnames[n]) for n in names}
            xacts = {n: _xacts(bdb.url, dbnames[n]) - xacts[n] for n in names}
            level: dict[str, Any] = {
                "repeats": sizes.peer_repeats, "load_average_at_start": load_at_start,
                "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
            total_steps = rep_steps * sizes.peer_repeats
            for name in names:
                fig: dict[str, Any] = {"steps_per_s": statistics.median(rates[name]),
                                       "steps_per_s_each": rates[name]}
                if bdb.pgss:
                    calls = after[name].calls_since(before[name])
                    if name == "absurd" and absurd is not None:
                        calls -= absurd.polls - polls  # the bench's own completion reads
                    fig["statements_per_step"] = calls / total_steps
                # each database's own, less the snapshots' reads of pg_stat_statements
                fig["transactions_per_step"] = xacts[name] / total_steps
                level[name] = fig
            # each ratio the median of the repeats' ratios (a repeat's arms ran side by side)
            ours_each = rates["ticketiq"]
            for name in names[1:]:
                each = [a / b for a, b in zip(ours_each, rates[name], strict=True)]
                level[f"ratio_{name}"] = statistics.median(each)
                level[f"ratio_{name}_each"] = each
            # The most any design with a durable statement a step could show against each
            # peer here: the floor's rate over the peer's.
            for name in ("absurd", "dbos"):
                if name in level:
                    level[f"floor_x_{name}"] = statistics.median(
                        [a / b for a, b in zip(rates["raw"], rates[name], strict=True)])
            out["by_concurrency"][str(c)] = level
            log(f"  peer c={c}: ours {level['ticketiq']['steps_per_s']:,.0f} steps/s, "
                + ", ".join(f"{n} {level[n]['steps_per_s']:,.0f} (x{level['ratio_' + n]:.2f})"
                            for n in names[1:]))
    finally:
        await runner.leases.stop()
        await db.close()
        peer.close()
        await raw.close()
        if absurd is not None:
            await absurd.stop()
            absurd.close()
    # the figures of the highest level where earlier readers (report, plots) look
    top_level = out["by_concurrency"][str(top)]
    out.update(concurrency=top, ticketiq=top_level["ticketiq"], dbos=top_level["dbos"],
               ratio_steps_per_s=top_level["ratio_dbos"])
    return out
