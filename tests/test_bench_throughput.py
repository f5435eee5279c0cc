"""Bench section 1's arms mean what docs/performance.md says they mean.

* Arm N (``ticketiq_round(..., durable=False)``) is the step loop with no
  checkpoint: the same Runner, model and tool, the runs completed, and not
  one seal or checkpoint written; arm A's round, on the same runner, writes
  one checkpoint per step.
* ``step_bound`` turns the arms' times into the loop's bound on A / B and
  the write the 0.8 target would need, by the sums its docstring gives.
* The smoke bench (``make bench-smoke``) writes arm N and the bounds into
  its JSON and its table.

Timings are not judged here (they are the bench's business), only what each
arm does and the arithmetic on what it measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bench.workload as workload
from bench.throughput import step_bound, ticketiq_round
from bench.workload import BenchModel, make_runner
from ticketiq_pg.db.driver import TicketIQ

STEPS = 3
ROOT = Path(__file__).resolve().parents[1]


async def _checkpoints(aconn, run_ids) -> int:  # type: ignore[no-untyped-def]
    cur = await aconn.execute(
        "select count(*) from ticketiq.checkpoints where run_id = any(%s)", (run_ids,)
    )
    (count,) = await cur.fetchone()
    return int(count)


async def test_arm_n_takes_the_steps_with_no_seal_and_no_checkpoint(
    db_url: str, aconn, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed: list[int] = []
    seal = workload.SEALER.seal_encoded

    def counting(kind, run_id, step, body, prev=None):  # type: ignore[no-untyped-def]
        if kind in ("checkpoint", "link"):
            sealed.append(step)
        return seal(kind, run_id, step, body, prev)

    monkeypatch.setattr(workload.SEALER, "seal_encoded", counting)
    db = await TicketIQ.connect(db_url, min_size=2, max_size=2)
    model = BenchModel()
    runner = make_runner(db, "bench-test", model)
    try:
        durable = await ticketiq_round(runner, model, 2, STEPS, 1)
        assert durable.steps == 2 * STEPS
        assert await _checkpoints(aconn, durable.run_ids) == 2 * STEPS
        assert len(sealed) == 2 * STEPS
        assert 1 <= durable.statements <= 2 * STEPS  # alone or grouped
        asked, sealed_before = model.asked, len(sealed)

        loop = await ticketiq_round(runner, model, 2, STEPS, 2, durable=False)
        assert loop.steps == 2 * STEPS
        # the same steps were asked of the model (and the final one), and the runs ended
        assert model.asked - asked == 2 * (STEPS + 1)
        assert await _checkpoints(aconn, loop.run_ids) == 0
        assert loop.statements == 0
        assert len(sealed) == sealed_before  # no checkpoint sealed (answers are, after it)
        cur = await aconn.execute(
            "select status, durable from ticketiq.runs where run_id = any(%s)", (loop.run_ids,)
        )
        assert await cur.fetchall() == [("completed", False)] * 2
    finally:
        await db.close()


def test_step_bound_sums_the_arms() -> None:
    # per run slot: raw UPDATE 1.0 ms, loop alone 0.25 ms
    bound = step_bound({"raw_update_ms": 1.0, "loop_alone_ms": 0.25})
    assert bound["loop"] == pytest.approx(0.8)  # a write as cheap as the UPDATE, plus the loop
    assert bound["loop_share_of_raw"] == pytest.approx(0.25)
    # 0.8 = 1.0 / (W + 0.25)  =>  W = 1.0 ms: the write must cost what the UPDATE costs
    assert bound["needed_write_ratio"] == pytest.approx(1.0)

    tight = step_bound({"raw_update_ms": 1.0, "loop_alone_ms": 0.1})
    assert tight["needed_write_ratio"] == pytest.approx(1.0 / 1.15)


def test_step_bound_when_the_loop_alone_leaves_no_room() -> None:
    # 0.8 = B / (W + N) leaves W > 0 only while N < B / 0.8
    just_room = step_bound({"raw_update_ms": 1.0, "loop_alone_ms": 1.2})
    assert just_room["needed_write_ratio"] == pytest.approx(20.0)  # W = 0.05 ms
    for loop in (1.25, 1.5):
        bound = step_bound({"raw_update_ms": 1.0, "loop_alone_ms": loop})
        assert bound["needed_write_ratio"] is None, loop
    assert bound["loop"] == pytest.approx(0.4)


def test_step_bound_needs_both_arms() -> None:
    assert step_bound({"raw_update_ms": 1.0, "loop_alone_ms": None}) == {}
    assert step_bound({"raw_update_ms": None, "loop_alone_ms": 0.25}) == {}


def test_the_smoke_bench_reports_arm_n_and_the_bounds(pg_server_url: str, tmp_path) -> None:
    """``python -m bench --smoke --only throughput``: the JSON and the table carry them."""
    out_json = tmp_path / "bench.json"
    env = dict(os.environ, TICKETIQ_BENCH_DATABASE_URL=pg_server_url)
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--only", "throughput", "--json",
         str(out_json)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out_json.read_text())["sections"]["throughput"]["by_concurrency"]
    assert set(figures) == {"1", "8"}
    for fig in figures.values():
        assert fig["loop_alone_steps_per_s"] > 0
        assert fig["client_cpu_us_per_step"]["loop_alone"] > 0
        assert set(fig["bound"]) == {"loop", "loop_share_of_raw", "needed_write_ratio"}
        assert fig["bound"]["loop"] == pytest.approx(
            fig["raw_update_ms"] / (fig["raw_update_ms"] + fig["loop_alone_ms"]))
    for c in ("1", "8"):
        assert f"the step loop with no checkpoint (N), {c} at once" in done.stdout
        assert f"bounds on A / B at {c}" in done.stdout
