"""1. Checkpoint step throughput against a raw single-statement UPDATE of the same payload.

A: C runs at once in this process, each run ``steps_per_run`` checkpointed
steps (one ``kb.search`` read per step) through the real Runner and
``ticketiq.write_checkpoint``.  The window opens when the C runs (already
started with ``start_run``) begin stepping and closes when every one of
them has asked the model for its final step, so it holds exactly C x steps
durable steps and nothing else (sealing and handing on the answers happens
after it).

B: C tasks at once, each sending ``steps_per_run`` single-statement
``UPDATE bench_raw SET state = $1 WHERE run_id = $2`` (a table with one
jsonb column, one row per run) with the very checkpoint bodies A wrote, in
the same order, through the same pool, each an autocommit statement.

C (to tell the SQL function's cost from the Python step loop's): the same
bodies, pre-sealed, through ``TicketIQ.write_checkpoint`` alone, C tasks at
once, no Runner.

A0 (not a target): A with group commit off (``TicketIQ(group_commit=False)``,
one ``write_checkpoint`` statement per step), to show what grouping the
checkpoints of runs that step together gives.  With one run at once the two
send the same statements.

N (not a target; the bound on A, see :func:`step_bound`): A's runs started with
``durable=False``, so the Runner takes the same steps with no seal and no
checkpoint: the step loop's own cost.

A, A0, B, C and N rotate (A/A0/B/C/N/A/A0/...) so machine noise hits all; steps/s
is the sum of steps over the sum of window time.  Client CPU per step comes from
``time.process_time`` over the windows; server time per statement from
pg_stat_statements.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.runner import RunState

from .common import BenchDB, Sizes, StatementSnapshot, hot_updates, percentile, summary
from .workload import Barrier, BenchModel, make_runner, start_kwargs

RAW_UPDATE = "update bench_raw set state = %s where run_id = %s"


class _Round:
    __slots__ = ("steps", "seconds", "cpu", "run_ids", "statements")

    def __init__(self, steps: int, seconds: float, cpu: float, run_ids: list[uuid.UUID],
                 statements: int = 0) -> None:
        self.steps = steps
        self.seconds = seconds
        self.cpu = cpu
        self.run_ids = run_ids
        #: checkpoint statements (write_checkpoint + write_checkpoints) sent in the window
        self.statements = statements


def _checkpoint_statements(db: TicketIQ) -> int:
    return db.statements["write_checkpoint"] + db.statements["write_checkpoints"]


async def ticketiq_round(runner: Any, model: BenchModel, c: int, steps: int, seq: int,
                         durable: bool = True, meter: Any = None) -> _Round:
    """C runs of ``steps`` steps through the Runner; ``durable=False``: arm N (no checkpoint).

    ``meter`` (section 10): its ``open()`` and ``close()`` are called as the window
    opens and closes, so what it measures leaves out the runs' starts and ends.
    """
    states: list[RunState] = []
    for i in range(c):
        state = await runner.start(**start_kwargs(seq * 100 + i, "reads", steps),
                                   durable=durable)
        assert isinstance(state, RunState)
        states.append(state)
    barrier = Barrier(c)
    model.barrier = barrier
    sent0 = _checkpoint_statements(runner.db)
    if meter is not None:
        meter.open()
    cpu0, t0 = time.process_time(), time.perf_counter()
    tasks = [asyncio.create_task(runner.run(s)) for s in states]
    waiter = asyncio.create_task(barrier.arrived.wait())
    done, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    if waiter not in done:  # a run ended before its final step: surface its error
        barrier.release()
        waiter.cancel()
        outcomes = await asyncio.gather(*tasks)
        raise RuntimeError(f"a run ended early: {outcomes}")
    t1, cpu1 = time.perf_counter(), time.process_time()
    if meter is not None:
        meter.close()
    sent = _checkpoint_statements(runner.db) - sent0
    barrier.release()
    model.barrier = None
    outcomes = await asyncio.gather(*tasks)
    bad = [o for o in outcomes if o.status != "completed"]
    if bad:
        raise RuntimeError(f"runs did not complete: {bad}")
    return _Round(c * steps, t1 - t0, cpu1 - cpu0, [s.run_id for s in states], sent)


async def raw_round(db: TicketIQ, c: int, payloads: list[Any], latency: float = 0.0) -> _Round:
    """B: C clients, each one UPDATE per step; ``latency``: after the model's wait, as A's."""
    assert db.pool is not None
    pool = db.pool

    async def one(row: int) -> None:
        for body in payloads:
            if latency:
                await asyncio.sleep(latency)
            async with pool.connection() as conn:
                await conn.execute(RAW_UPDATE, (Jsonb(body), row))

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(c)))
    t1, cpu1 = time.perf_counter(), time.process_time()
    return _Round(c * len(payloads), t1 - t0, cpu1 - cpu0, [])


async def checkpoint_round(db: TicketIQ, c: int, payloads: list[Any], seq: int) -> _Round:
    """C: the same bodies through ``db.write_checkpoint`` alone, no Runner (pre-sealed)."""
    from .workload import SEALER

    work = []
    for i in range(c):
        started = await db.start_run(holder="bench-c", ttl=60.0, may_wait=False,
                                     **start_kwargs(seq * 100 + i))
        assert started.epoch is not None
        seals = [SEALER.seal("checkpoint", started.run_id, step, body)
                 for step, body in enumerate(payloads, 1)]
        work.append((started.run_id, started.epoch, seals))

    async def one(run_id: uuid.UUID, epoch: int, seals: list[tuple[str, str]]) -> None:
        for step, (body, (seal, key_id)) in enumerate(zip(payloads, seals, strict=True), 1):
            await db.write_checkpoint(run_id, epoch, step, body, seal, key_id)

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(*w) for w in work))
    t1, cpu1 = time.perf_counter(), time.process_time()
    for run_id, epoch, _ in work:
        await db.fail_run(run_id, epoch, "bench: done")
    return _Round(c * len(payloads), t1 - t0, cpu1 - cpu0, [w[0] for w in work])


def _rate(rounds: list[_Round]) -> float:
    seconds = sum(r.seconds for r in rounds)
    return sum(r.steps for r in rounds) / seconds if seconds else 0.0


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    top = max(sizes.concurrency)
    with psycopg.connect(bdb.url, autocommit=True) as conn:
        conn.execute(
            "create table bench_raw (run_id integer primary key, state jsonb not null)"
        )
        conn.execute(
            "insert into bench_raw select g, '{}' from generate_series(0, %s) as g", (top - 1,)
        )
    db = await TicketIQ.connect(bdb.url, min_size=top + 2, max_size=top + 2)
    model = BenchModel()
    runner = make_runner(db, "bench-throughput", model)
    runner.leases.start()  # renews every 2 s, as in production; outside both windows' counts
    db0 = await TicketIQ.connect(bdb.url, min_size=top + 2, max_size=top + 2,
                                 group_commit=False)
    model0 = BenchModel()
    runner0 = make_runner(db0, "bench-throughput-ungrouped", model0)
    runner0.leases.start()
    out: dict[str, Any] = {"steps_per_run": sizes.steps_per_run, "pairs": sizes.pairs,
                           "by_concurrency": {}}
    try:
        # Warm up (prepared statements, caches) and take the payloads B replays.
        warm = await ticketiq_round(runner, model, 1, sizes.steps_per_run, 0)
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            cur = await conn.execute(
                "select body from ticketiq.checkpoints where run_id = %s order by step",
                (warm.run_ids[0],),
            )
            payloads = [row[0] for row in await cur.fetchall()]
        await raw_round(db, 1, payloads)
        seq = 1
        for c in sizes.concurrency:
            await ticketiq_round(runner, model, c, sizes.steps_per_run, seq)  # warm-up at c
            await ticketiq_round(runner0, model0, c, sizes.steps_per_run, seq + 1)
            await raw_round(db, c, payloads)
            await checkpoint_round(db, c, payloads, seq + 2)
            await ticketiq_round(runner, model, c, sizes.steps_per_run, seq + 3, durable=False)
            seq += 4
            a_rounds: list[_Round] = []
            a0_rounds: list[_Round] = []
            b_rounds: list[_Round] = []
            c_rounds: list[_Round] = []
            n_rounds: list[_Round] = []
            before = StatementSnapshot(bdb.url, bdb.pgss)
            for _ in range(sizes.pairs):
                a_rounds.append(await ticketiq_round(runner, model, c, sizes.steps_per_run, seq))
                a0_rounds.append(
                    await ticketiq_round(runner0, model0, c, sizes.steps_per_run, seq + 1))
                b_rounds.append(await raw_round(db, c, payloads))
                c_rounds.append(await checkpoint_round(db, c, payloads, seq + 2))
                n_rounds.append(await ticketiq_round(runner, model, c, sizes.steps_per_run,
                                                     seq + 3, durable=False))
                seq += 4
            after = StatementSnapshot(bdb.url, bdb.pgss)
            delta = after.diff(before)
            a_rate, b_rate, c_rate = _rate(a_rounds), _rate(b_rounds), _rate(c_rounds)
            a0_rate = _rate(a0_rounds)
            n_rate = _rate(n_rounds)
            a_steps = sum(r.steps for r in a_rounds)
            a0_steps = sum(r.steps for r in a0_rounds)
            b_steps = sum(r.steps for r in b_rounds)
            pair_ratios = [
                (a.steps / a.seconds) / (b.steps / b.seconds)
                for a, b in zip(a_rounds, b_rounds, strict=True)
            ]
            a_statements = sum(r.statements for r in a_rounds)
            figures: dict[str, Any] = {
                "ticketiq_steps_per_s": a_rate,
                "raw_update_steps_per_s": b_rate,
                "ratio": a_rate / b_rate if b_rate else None,
                "ratio_per_pair": summary(pair_ratios),
                "ungrouped_steps_per_s": a0_rate,
                "ungrouped_ratio": a0_rate / b_rate if b_rate else None,
                "group_commit_gain": a_rate / a0_rate if a0_rate else None,
                "write_checkpoint_alone_steps_per_s": c_rate,
                "write_checkpoint_alone_ratio": c_rate / b_rate if b_rate else None,
                "ticketiq_steps": a_steps,
                "raw_steps": b_steps,
                "ticketiq_step_ms": 1000.0 * c / a_rate if a_rate else None,
                "raw_update_ms": 1000.0 * c / b_rate if b_rate else None,
                # N: the same runs with no checkpoint (durable=False): the step loop alone
                "loop_alone_steps_per_s": n_rate,
                "loop_alone_ms": 1000.0 * c / n_rate if n_rate else None,
                "client_cpu_us_per_step": {
                    "ticketiq": 1e6 * sum(r.cpu for r in a_rounds) / a_steps,
                    "ungrouped": 1e6 * sum(r.cpu for r in a0_rounds) / a0_steps,
                    "raw_update": 1e6 * sum(r.cpu for r in b_rounds) / b_steps,
                    "write_checkpoint_alone": 1e6 * sum(r.cpu for r in c_rounds)
                    / sum(r.steps for r in c_rounds),
                    "loop_alone": 1e6 * sum(r.cpu for r in n_rounds)
                    / sum(r.steps for r in n_rounds),
                },
                # A's checkpoint statements in its windows: one per step when each run's
                # checkpoint goes alone, fewer when runs that step together share one
                "checkpoint_statements": a_statements,
                "checkpoints_per_statement": a_steps / a_statements if a_statements else None,
            }
            if bdb.pgss:
                # Server time per checkpoint, over every checkpoint of the section (arms A,
                # A0 and C): write_checkpoint writes one a call, write_checkpoints one a row.
                wc = delta.get("write_checkpoint", {})
                wcs = delta.get("write_checkpoints", {})
                raw = delta.get("raw_update", {})
                written = wc.get("calls", 0.0) + wcs.get("rows", 0.0)
                per_checkpoint = {  # both statement kinds, over the checkpoints they wrote
                    key: (wc.get(key, 0.0) + wcs.get(key, 0.0)) / written if written else None
                    for key in ("ms", "wal_bytes", "blocks")
                }

                figures["server"] = {
                    "checkpoints": written,
                    "write_checkpoint_mean_ms": per_checkpoint["ms"],
                    "write_checkpoint_statement_ms": wc.get("mean_ms"),
                    "write_checkpoints_statement_ms": wcs.get("mean_ms"),
                    "write_checkpoints_rows_per_statement": (
                        wcs["rows"] / wcs["calls"] if wcs else None),
                    "raw_update_mean_ms": raw.get("mean_ms"),
                    "write_checkpoint_wal_bytes": per_checkpoint["wal_bytes"],
                    "raw_update_wal_bytes": (raw["wal_bytes"] / raw["calls"]) if raw else None,
                    "write_checkpoint_blocks": per_checkpoint["blocks"],
                    "raw_update_blocks": (raw["blocks"] / raw["calls"]) if raw else None,
                    "statements": delta,
                }
            figures["bound"] = step_bound(figures)
            out["by_concurrency"][str(c)] = figures
            log(
                f"  throughput c={c}: ticketiq {a_rate:,.0f} steps/s, raw UPDATE "
                f"{b_rate:,.0f}/s, ratio {figures['ratio']:.2f} "
                f"(per pair p50 {percentile(pair_ratios, 50):.2f}); without group commit "
                f"{a0_rate:,.0f}/s; write_checkpoint alone {c_rate:,.0f}/s; the loop with no "
                f"checkpoint {n_rate:,.0f}/s"
            )
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            cur = await conn.execute(
                "select count(*), avg(octet_length(body::text)), min(octet_length(body::text)),"
                " max(octet_length(body::text)), avg(pg_column_size(body))"
                " from ticketiq.checkpoints"
            )
            n, avg_text, min_text, max_text, avg_stored = await cur.fetchone()  # type: ignore[misc]
        out["checkpoint_bytes"] = {
            "checkpoints": int(n),
            "mean_json": float(avg_text),
            "min_json": int(min_text),
            "max_json": int(max_text),
            "mean_stored": float(avg_stored),
        }
        out["raw_payload_bytes"] = {
            "mean_json": sum(len(_dumps(p)) for p in payloads) / len(payloads),
        }
        out["renewals_meanwhile"] = runner.leases.renewals
        out["python_profile_percent"] = await python_profile(
            runner, model, max(2, sizes.pairs // 5), sizes.steps_per_run)
    finally:
        await runner.leases.stop()
        await runner0.leases.stop()
        await db.close()
        await db0.close()
    # Where the time goes (outside the measured rounds).
    await asyncio.sleep(0.5)  # the closed sessions' statistics reach pg_stat_user_tables
    out["hot_updates"] = hot_updates(bdb.url)
    out["client_breakdown_us"] = client_breakdown(payloads)
    if bdb.pgss:
        out["server_breakdown"] = await server_breakdown(bdb, payloads, max(2, sizes.pairs // 10))
    return out


def step_bound(fig: dict[str, Any]) -> dict[str, Any]:
    """What the measured parts allow A / B to reach, from the same run's arms.

    A step is its loop (arm N: the model, planning, the gates, the call,
    carrying the result; no seal, no write), the seal, and its checkpoint
    write.  From arms measured side by side (ms per step and run slot),
    beside ``write_checkpoint_alone_ratio`` (C / B, the other bound: a step is
    never faster than its checkpoint write alone, which encodes the body
    itself as the seal does in A):

    * ``loop`` = B / (B + N): what a step would reach if its seal and write
      together cost exactly one raw UPDATE.  While they cost at least that,
      it bounds A / B from above with one run at once, where a run's loop,
      seal and write follow each other; with several at once one run's loop
      overlaps other runs' waits, so there it is a pessimistic estimate;
    * ``needed_write_ratio`` = B / W, where W = B / 0.8 - N is the time the
      seal and the write together may take for A / B to reach 0.8 with this
      loop: the rate they must reach as a ratio to the raw UPDATE's.  None
      when the loop alone leaves no room (N >= B / 0.8).

    Empty unless both arms were measured.
    """
    b_ms, n_ms = fig.get("raw_update_ms"), fig.get("loop_alone_ms")
    if not (b_ms and n_ms):
        return {}
    room = b_ms / 0.8 - n_ms
    return {
        "loop": b_ms / (b_ms + n_ms),
        "loop_share_of_raw": n_ms / b_ms,
        "needed_write_ratio": b_ms / room if room > 0 else None,
    }


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, separators=(", ", ": "))


# -- where the time goes ---------------------------------------------------------------------


def client_breakdown(payloads: list[Any], repeat: int = 200) -> dict[str, float]:
    """Microseconds of client CPU per step for the pure-Python parts of a step.

    Each measured alone on the very bodies the rounds wrote: the seal (HMAC
    over the canonical JSON, ``Sealer.seal``), the deep copy of the
    conversation handed to the model (``copy.deepcopy``), and the JSON text
    psycopg sends for the ``jsonb`` parameter (``json.dumps``).
    """
    import copy
    import json

    from .workload import SEALER

    run_id = uuid.uuid4()

    def per_call(fn: Any) -> float:
        t0 = time.process_time()
        for _ in range(repeat):
            for step, body in enumerate(payloads, 1):
                fn(step, body)
        return 1e6 * (time.process_time() - t0) / (repeat * len(payloads))

    return {
        "seal_us": per_call(lambda step, body: SEALER.seal("checkpoint", run_id, step, body)),
        "deepcopy_conversation_us": per_call(lambda step, body: copy.deepcopy(
            body["conversation"])),
        "json_dumps_us": per_call(lambda step, body: json.dumps(body)),
    }


NESTED_SQL = """
select s.queryid, s.query, s.calls, s.total_exec_time, s.wal_bytes::float8
from pg_stat_statements as s
where s.dbid = (select d.oid from pg_database as d where d.datname = current_database())
"""


async def server_breakdown(bdb: BenchDB, payloads: list[Any], runs: int) -> dict[str, Any]:
    """The statements inside ``write_checkpoint``, from pg_stat_statements.track = all.

    Runs are started through an ordinary connection; their checkpoints (the
    same bodies the rounds wrote) go through one connection on which
    ``pg_stat_statements.track = all``, so every nested statement counted
    there belongs to ``write_checkpoint``.  Tracking itself adds overhead,
    so read the shares, not the absolute times.
    """
    from .workload import SEALER, start_kwargs

    try:
        tracked = await psycopg.AsyncConnection.connect(
            bdb.url, autocommit=True, options="-c pg_stat_statements.track=all"
        )
    except psycopg.Error as exc:
        return {"skipped": f"cannot set pg_stat_statements.track: {str(exc).strip()}"}
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=1)

    async def snapshot() -> dict[int, tuple[str, float, float, float]]:
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            cur = await conn.execute(NESTED_SQL)
            return {row[0]: (row[1], row[2], row[3], row[4]) for row in await cur.fetchall()}

    try:
        before = await snapshot()
        for index in range(runs):
            started = await db.start_run(holder="bench-breakdown", ttl=60.0, may_wait=False,
                                         **start_kwargs(index))
            assert started.epoch is not None
            for step, body in enumerate(payloads, 1):
                seal, key_id = SEALER.seal("checkpoint", started.run_id, step, body)
                await db.write_checkpoint(started.run_id, started.epoch, step, body, seal, key_id,
                                          conn=tracked)
        after = await snapshot()
    finally:
        await tracked.close()
        await db.close()
    checkpoints = runs * len(payloads)
    top: dict[str, Any] = {}
    nested: list[dict[str, Any]] = []
    for queryid, (query, calls, ms, wal) in after.items():
        b_calls, b_ms, b_wal = before.get(queryid, (query, 0.0, 0.0, 0.0))[1:]
        d_calls, d_ms, d_wal = calls - b_calls, ms - b_ms, wal - b_wal
        if d_calls <= 0 or "pg_stat_statements" in query:
            continue
        label = " ".join(query.split())
        if "ticketiq.write_checkpoint(" in label:
            top = {"calls": d_calls, "mean_ms": d_ms / d_calls, "wal_bytes": d_wal / d_calls}
            continue
        if "ticketiq.start_run(" in label:  # on the untracked connection: top level only
            continue
        nested.append({"statement": label[:110], "per_checkpoint": d_calls / checkpoints,
                       "ms_per_checkpoint": d_ms / checkpoints,
                       "wal_bytes_per_checkpoint": d_wal / checkpoints})
    nested = [n for n in nested if n["per_checkpoint"] >= 0.5]
    nested.sort(key=lambda n: -n["ms_per_checkpoint"])
    return {"checkpoints": checkpoints, "write_checkpoint": top, "nested": nested}


_ENTRY_POINTS = (
    ("ticketiq_pg/seal.py", "seal_encoded", "seal: canonical JSON + HMAC (Sealer.seal_encoded)"),
    ("copy.py", "deepcopy", "deep copy of the conversation for the model"),
    ("ticketiq_pg/db/driver.py", "_rows", "statement: driver + psycopg + pool (TicketIQ._rows)"),
    ("ticketiq_pg/db/rows.py", "from_row", "row -> dataclass (models.from_row)"),
    ("bench/workload.py", "step", "the bench model"),
    ("bench/workload.py", "kb_search", "the bench tool"),
)


async def python_profile(runner: Any, model: BenchModel, rounds: int, steps: int) -> dict[str, Any]:
    """Shares of the client's Python time by where it is spent, from cProfile (c = 1).

    Inclusive time of a few entry points over the time of every function,
    time spent waiting in epoll (for the database) left out.  cProfile slows
    small calls most, so read the shares as rough.
    """
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for index in range(rounds):
        await ticketiq_round(runner, model, 1, steps, 50_000 + index)
    profiler.disable()
    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(tottime for (_f, _l, name), (_cc, _nc, tottime, _ct, _cl) in raw.items()
                if "select.epoll" not in name)
    shares: dict[str, float] = {}
    for needle, function, label in _ENTRY_POINTS:
        cum = sum(ct for (filename, _l, name), (_cc, _nc, _tt, ct, _cl) in raw.items()
                  if needle in filename and name == function)
        shares[label] = round(100.0 * cum / total, 1)
    shares["everything else (runner loop, asyncio, leases, keys, ...)"] = round(
        100.0 - sum(shares.values()), 1)
    return shares
