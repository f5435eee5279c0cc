"""8. Long runs: what each step's checkpoint costs along a 100-step run (issue 25).

One run at a time through the real Runner: each step asks one read
(``doc.read``) that answers with 4 KB of text, 100 steps (``--smoke``: 10),
then a final answer.  The run's input is a 4 KB document too, so step 1's
checkpoint (the input and the first answer) carries as much new text as any
later one (a result and an answer): a flat cost means step N costs what
step 1 does.  ``wal_ratio_last_to_second`` is beside it, the ratio to the
first step that carries a tool result.  Around each step's ``write_checkpoint`` the bench reads
pg_stat_statements (the statement's WAL bytes and server execution time) and
the server's WAL insert position (WAL bytes, whoever wrote them; the
fallback where pg_stat_statements is not loaded).  The figure: step N's cost
over step 1's, the target at most 2x (each checkpoint holds only what its
step added, so the cost stays flat; before schema 12 it grew with the step).
Server time of one step is noisy, so its ratio is of the medians of the
first and the last ten steps (five for ``--smoke``) across the runs.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import psycopg

from ticketiq_pg.agent import CallContext, ModelStep, StepRequest, Tool, ToolCall, Tools
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner, RunState

from .common import BenchDB, Sizes, StatementSnapshot
from .report import _row
from .workload import SEALER, SELF_FENCE_MARGIN

RESULT_BYTES = 4096
TARGET_RATIO = 2.0
LONG_LEASE = 600.0


class DocModel:
    """Step k < steps reads document k; then the final answer."""

    async def step(self, request: StepRequest) -> ModelStep:
        if request.step >= int(request.input["steps"]):
            return ModelStep(text=f"read {request.step - 1} documents")
        return ModelStep(text=f"reading document {request.step}", calls=(
            ToolCall(f"read-{request.step}", "doc.read", {"doc": request.step}),))


def document(seed: Any) -> str:
    """4 KB of text, different for every document (letters: lz4 compresses them little)."""
    return "".join(random.Random(seed).choices("abcdefghijklmnopqrstuvwxyz ", k=RESULT_BYTES))


async def doc_read(ctx: CallContext) -> Any:
    return {"doc": ctx.arguments["doc"], "text": document(ctx.arguments["doc"])}


class Probe:
    """WAL and server time of each write_checkpoint the driver sends."""

    def __init__(self, bdb: BenchDB, db: TicketIQ) -> None:
        self.bdb = bdb
        self.steps: list[dict[str, float]] = []
        self._conn = psycopg.connect(bdb.url, autocommit=True)
        self._write = db.write_checkpoint_alone
        db.write_checkpoint_alone = self._measured  # type: ignore[method-assign]

    def _lsn(self) -> int:
        row = self._conn.execute(
            "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')").fetchone()
        assert row is not None
        return int(row[0])

    async def _measured(self, *args: Any, **kwargs: Any) -> Any:
        before, lsn = StatementSnapshot(self.bdb.url, self.bdb.pgss), self._lsn()
        started = time.perf_counter()
        written = await self._write(*args, **kwargs)
        elapsed = (time.perf_counter() - started) * 1000
        lsn_bytes = self._lsn() - lsn
        step: dict[str, float] = {"wal_lsn_bytes": lsn_bytes, "client_ms": elapsed}
        delta = StatementSnapshot(self.bdb.url, self.bdb.pgss).diff(before)
        if "write_checkpoint" in delta:
            step["wal_bytes"] = delta["write_checkpoint"]["wal_bytes"]
            step["server_ms"] = delta["write_checkpoint"]["ms"]
        self.steps.append(step)
        return written

    def close(self) -> None:
        self._conn.close()


def _median_per_step(runs: list[list[dict[str, float]]], key: str) -> list[float]:
    return [statistics.median(run[i][key] for run in runs) for i in range(len(runs[0]))]


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    smoke = sizes.name == "smoke"
    steps, rounds, window = (10, 1, 5) if smoke else (100, 3, 10)
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=2)
    probe = Probe(bdb, db)
    # no keeper ticks (nothing else talks to the database): a lease that outlasts the run
    leases = LeaseKeeper(db, "bench-long", ttl=LONG_LEASE, renew_interval=LONG_LEASE / 4,
                         margin=SELF_FENCE_MARGIN)
    runner = Runner(db, leases, SEALER, DocModel(), Tools([Tool("doc.read", "read", doc_read)]),
                    max_steps=steps + 1)
    runs: list[list[dict[str, float]]] = []
    try:
        for index in range(rounds):
            probe.steps = []
            state = await runner.start(owner="bench", run_as="bench", channel="bench",
                                       entry_point="bench", input={
                                           "steps": steps + 1, "round": index,
                                           "document": document(f"input-{index}")})
            assert isinstance(state, RunState)
            outcome = await runner.run(state)
            if outcome.status != "completed":
                raise RuntimeError(f"long run ended {outcome.status}: {outcome.reason}")
            runs.append(probe.steps)
    finally:
        probe.close()
        await db.close()
    key = "wal_bytes" if "wal_bytes" in runs[0][0] else "wal_lsn_bytes"
    wal = _median_per_step(runs, key)
    out: dict[str, Any] = {
        "steps": steps, "runs": rounds, "result_bytes": RESULT_BYTES, "wal_source": key,
        "wal_bytes_per_step": wal,
        "wal_lsn_bytes_per_step": _median_per_step(runs, "wal_lsn_bytes"),
        "wal_ratio_last_to_first": wal[-1] / wal[0],
        "wal_ratio_last_to_second": wal[-1] / wal[1],
        "target_ratio": TARGET_RATIO,
    }
    time_key = "server_ms" if "server_ms" in runs[0][0] else "client_ms"
    ms = _median_per_step(runs, time_key)
    out.update({
        "time_source": time_key, "ms_per_step": ms,
        "ms_ratio_last_to_first": (statistics.median(ms[-window:])
                                   / statistics.median(ms[:window])),
        "ms_window_steps": window,
    })
    log(f"  WAL bytes per checkpoint: step 1 {wal[0]:.0f}, step {steps} {wal[-1]:.0f} "
        f"({out['wal_ratio_last_to_first']:.2f}x); {time_key} first {window} "
        f"{statistics.median(ms[:window]):.3f}, last {window} "
        f"{statistics.median(ms[-window:]):.3f} ({out['ms_ratio_last_to_first']:.2f}x)")
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    steps = res["steps"]

    def verdict(ratio: float) -> str:
        return "ok" if ratio <= res["target_ratio"] else "MISS"

    return [
        _row("11", f"WAL bytes per checkpoint, step {steps} / step 1 ({res['wal_source']})",
             f"{res['wal_ratio_last_to_first']:.2f}x "
             f"({res['wal_bytes_per_step'][-1]:.0f} / {res['wal_bytes_per_step'][0]:.0f})",
             f"/ step 2: {res['wal_ratio_last_to_second']:.2f}x; {res['runs']} run(s)", "<= 2x",
             verdict(res["wal_ratio_last_to_first"]), "long_runs.wal_ratio",
             res["wal_ratio_last_to_first"]),
        _row("11", f"{res['time_source']} per checkpoint, last / first {res['ms_window_steps']}"
             " steps (medians)", f"{res['ms_ratio_last_to_first']:.2f}x", "", "<= 2x",
             verdict(res["ms_ratio_last_to_first"]),
             "long_runs.ms_ratio", res["ms_ratio_last_to_first"]),
    ]
