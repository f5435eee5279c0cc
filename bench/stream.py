"""19. A run's event stream (issue 41): how soon a watcher sees the model's text, and what
the stream costs the database a step.

Latency: one run at a time through the real Runner, its model handing each step's text
to ``on_text`` a piece at a time (``PIECES`` pieces ``GAP`` s apart, a token stream of
about 100 pieces a second), each piece stamped with ``perf_counter_ns`` as it is handed
over; an :class:`~ticketiq_pg.db.events.EventFeed` on connections of its own (its own
pool and its own LISTEN session: what the other process's front reads for its SSE
clients) subscribes to the run, and each stamp in each ``text`` event it gets is one
sample, from the piece handed to the model's sink to the feed's watcher having it
(through the NOTIFY, PostgreSQL and the LISTEN session; the SSE write that follows on
the other process is not in it).  One process runs both, on separate connections, so the
stamps share a clock.  Arms: the text coalescing interval as shipped
(``TICKETIQ_LIVE_TEXT_INTERVAL`` 0.05 s) and 0 (every piece its own NOTIFY batch).

Cost, at 1 and at 128 runs at once (each ``steps`` steps of the same streamed text and a
read a step): ``TICKETIQ_LIVE_EVENTS=off`` (nothing sent live) against ``always`` (every
run's live events sent, as when every run is watched; a LISTEN session drains them), in
alternating rounds.  Per step: statements the driver sent (NOTIFY batches among them) and
WAL bytes (``pg_current_wal_lsn`` before and after, the whole server's).  The durable
events cannot be turned off (the SQL functions write them with each change): their cost
is ``ticketiq.run_events`` rows and bytes a step (``pg_total_relation_size``, table and
indexes, grown over the section's steps) and is the same in both arms.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import statistics
import time
import uuid
from typing import Any

import psycopg

from ticketiq_pg.agent import ModelStep, StepRequest
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.events import STREAM_CHANNEL, EventFeed
from ticketiq_pg.runtime.live import LiveEvents

from .common import BenchDB, Sizes, percentile
from .report import INFO, _f, _row
from .workload import BenchModel, make_runner, start_kwargs

PIECES = 24
GAP = 0.01
#: Sizes per bench size: latency runs x steps; cost levels, steps a run, rounds an arm.
SIZES = {"full": {"lat_runs": 10, "lat_steps": 5, "levels": (1, 128), "steps": 5,
                  "rounds": 3},
         "smoke": {"lat_runs": 1, "lat_steps": 2, "levels": (1, 8), "steps": 2,
                   "rounds": 1}}
STAMP = re.compile(r"<(\d{19})>")


class Streamer(BenchModel):
    """The bench model's steps, each with a text of ``PIECES`` stamped pieces handed to
    ``on_text`` ``gap`` seconds apart (the same text, unstamped, when nobody listens; it
    takes the same time either way, so both arms' steps/s compare)."""

    def __init__(self, gap: float = GAP) -> None:
        super().__init__()
        self.gap = gap

    async def step(self, request: StepRequest) -> ModelStep:
        made = await super().step(request)
        pieces = []
        for _ in range(PIECES):
            if self.gap:
                await asyncio.sleep(self.gap)
            if request.on_text is not None:
                piece = f"<{time.perf_counter_ns():019d}> "
                request.on_text(piece)
            else:
                piece = f"<{0:019d}> "
            pieces.append(piece)
        return ModelStep(text="".join(pieces), calls=made.calls)


async def _latency(url: str, interval: float, runs: int, steps: int) -> dict[str, Any]:
    db = await TicketIQ.connect(url, min_size=2, max_size=4, group_commit=False)
    reader = await TicketIQ.connect(url, min_size=1, max_size=2, group_commit=False)
    feed = EventFeed(reader, url, poll=0.25)
    runner = make_runner(db, f"bench-stream-{interval}", Streamer())
    runner.setup.live = LiveEvents(db, mode="always", interval=interval)
    samples: list[float] = []

    async def watch(run_id: uuid.UUID) -> None:
        async for event in feed.subscribe(run_id):
            if event.kind == "text":
                now = time.perf_counter_ns()
                samples.extend((now - int(s)) / 1e6
                               for s in STAMP.findall(str(event.body.get("text", ""))))
    try:
        for index in range(runs):
            state = await runner.start(**start_kwargs(index, "reads", steps))
            watcher = asyncio.create_task(watch(state.run_id))
            await asyncio.sleep(0.05)  # subscribed before the first step streams
            outcome = await runner.run(state)
            if outcome.status != "completed":
                raise RuntimeError(f"run ended {outcome.status}")
            await asyncio.wait_for(watcher, 30)
        expected = runs * (steps + 1) * PIECES  # its steps and its answer
        return {"interval_s": interval, "samples": len(samples), "pieces_streamed": expected,
                "p50_ms": percentile(samples, 50), "p99_ms": percentile(samples, 99),
                "max_ms": max(samples) if samples else None}
    finally:
        await runner.setup.live.close()
        await feed.close()
        await reader.close()
        await db.close()


def _wal(conn: psycopg.Connection[Any]) -> int:
    return int(conn.execute("select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")
               .fetchone()[0])


def _events_size(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    rows, size = conn.execute("select count(*), pg_total_relation_size('ticketiq.run_events')"
                              " from ticketiq.run_events").fetchone()
    return int(rows), int(size)


async def _cost_arm(url: str, admin: psycopg.Connection[Any], live: str, runs: int,
                    steps: int) -> dict[str, Any]:
    db = await TicketIQ.connect(url, min_size=2, max_size=16, group_commit=True)
    runner = make_runner(db, f"bench-stream-{live}-{runs}-{uuid.uuid4().hex[:6]}",
                         Streamer(gap=0.002))
    runner.setup.live = LiveEvents(db if live != "off" else None, mode=live)
    drained = 0
    listener = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await listener.execute(f"LISTEN {STREAM_CHANNEL}")

    async def drain() -> None:
        nonlocal drained
        async for _ in listener.notifies():
            drained += 1
    draining = asyncio.create_task(drain())
    try:
        sent_before = sum(db.statements.values())
        notify_before = db.statements.get("notify", 0)
        wal_before = _wal(admin)
        rows_before, size_before = _events_size(admin)
        began = time.perf_counter()
        outcomes = await asyncio.gather(*(
            runner.start_and_run(**start_kwargs(i, "reads", steps)) for i in range(runs)))
        await runner.setup.live.close()
        wall = time.perf_counter() - began
        await asyncio.sleep(0.2)  # the listener has what was sent
        if any(o.status != "completed" for o in outcomes):
            raise RuntimeError("a run did not complete")
        made = runs * (steps + 1)  # model steps: the checkpoints and the answer
        rows_after, size_after = _events_size(admin)
        return {"live": live, "runs_at_once": runs, "steps": made,
                "statements_per_step": (sum(db.statements.values()) - sent_before) / made,
                "notify_statements_per_step": (db.statements.get("notify", 0)
                                               - notify_before) / made,
                "wal_bytes_per_step": (_wal(admin) - wal_before) / made,
                "live_events_sent_per_step": runner.setup.live.sent / made,
                "live_events_received_per_step": drained / made,
                "run_events_rows_per_step": (rows_after - rows_before) / made,
                "run_events_bytes_per_step": (size_after - size_before) / made,
                "steps_per_s": made / wall}
    finally:
        draining.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await draining
        await listener.close()
        await db.close()


def _median(arms: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(arms[-1])
    for key, value in arms[-1].items():
        if isinstance(value, float):
            out[key] = statistics.median(a[key] for a in arms)
    return out


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    size = SIZES["smoke" if sizes.name == "smoke" else "full"]
    out: dict[str, Any] = {"latency": {}, "cost": {}, "pieces_a_step": PIECES,
                           "latency_setup": "one process: Runner and an EventFeed on "
                                            "separate connections (own pool, own LISTEN)"}
    for interval in (0.05, 0.0):
        out["latency"][str(interval)] = await _latency(
            bdb.url, interval, size["lat_runs"], size["lat_steps"])
    with psycopg.connect(bdb.url, autocommit=True) as admin:
        for runs in size["levels"]:
            arms: dict[str, list[dict[str, Any]]] = {"off": [], "always": []}
            for rnd in range(size["rounds"]):
                for live in (("off", "always") if rnd % 2 == 0 else ("always", "off")):
                    arms[live].append(await _cost_arm(bdb.url, admin, live, runs,
                                                      size["steps"]))
            level = {live: _median(found) for live, found in arms.items()}
            level["live_cost"] = {
                "statements_per_step": level["always"]["statements_per_step"]
                - level["off"]["statements_per_step"],
                "wal_bytes_per_step": level["always"]["wal_bytes_per_step"]
                - level["off"]["wal_bytes_per_step"]}
            out["cost"][str(runs)] = level
        # The durable events over every step of the section: a page's granularity
        # washes out over all of them, as it does not in one arm of one run.
        rows_all, size_all = _events_size(admin)
        made = sum(a["steps"] for level in out["cost"].values()
                   for a in (level["off"], level["always"])) * size["rounds"]
        made += sum(lat["pieces_streamed"] // PIECES for lat in out["latency"].values())
        out["durable"] = {"rows": rows_all, "bytes": size_all, "steps": made,
                          "rows_per_step": rows_all / made, "bytes_per_step": size_all / made,
                          "bytes_per_row": size_all / max(1, rows_all)}
    shipped = out["latency"]["0.05"]
    log(f"  model text piece to a watcher on other connections: p50 "
        f"{_f(shipped['p50_ms'], 1)} ms, p99 {_f(shipped['p99_ms'], 1)} ms "
        f"({shipped['samples']} pieces)")
    for runs, level in out["cost"].items():
        log(f"  {runs} at once: statements a step {level['off']['statements_per_step']:.2f}"
            f" off, {level['always']['statements_per_step']:.2f} always; WAL bytes a step "
            f"{level['off']['wal_bytes_per_step']:.0f} off, "
            f"{level['always']['wal_bytes_per_step']:.0f} always")
    durable = out["durable"]
    log(f"  run_events: {durable['rows_per_step']:.2f} rows, {durable['bytes_per_step']:.0f} "
        f"bytes a step (table and indexes, over {durable['steps']} steps)")
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    shipped, eager = res["latency"]["0.05"], res["latency"]["0.0"]
    out = [_row("19", "model text piece to a watcher on other connections, p50 / p99",
                f"{_f(shipped['p50_ms'], 1)} / {_f(shipped['p99_ms'], 1)} ms",
                f"interval 0: {_f(eager['p50_ms'], 1)} / {_f(eager['p99_ms'], 1)} ms",
                "", INFO, "stream.text_latency_p99_ms", shipped["p99_ms"])]
    for runs, level in res["cost"].items():
        off, always = level["off"], level["always"]
        out.append(_row(
            "19", f"statements / WAL bytes a step, {runs} at once, live off vs always",
            f"{off['statements_per_step']:.2f} / {off['wal_bytes_per_step']:.0f} off, "
            f"{always['statements_per_step']:.2f} / {always['wal_bytes_per_step']:.0f} always",
            f"NOTIFY statements {always['notify_statements_per_step']:.2f} a step", "", INFO,
            f"stream.wal_bytes_per_step_{runs}_always", always["wal_bytes_per_step"]))
    durable = res["durable"]
    out.append(_row("19", "durable events a step (ticketiq.run_events, table and indexes)",
                    f"{durable['rows_per_step']:.2f} rows, {durable['bytes_per_step']:.0f} B",
                    f"{durable['bytes_per_row']:.0f} B a row", "", INFO,
                    "stream.run_events_bytes_per_step", durable["bytes_per_step"]))
    return out
