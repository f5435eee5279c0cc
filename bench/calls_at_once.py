"""16. A step's calls at once (issue 41, item 4): four reads in the time of one, one mark.

Through the real Runner, one run at a time, its model asking the same calls at every
step: a step of one read of 200 ms, of four such reads made at once (the default,
``calls_at_once`` 8) and of the four made one after another (``calls_at_once`` 1, the
engine before), alternating; then steps of one and of three writes, to count what a
step's writes cost in statements (the driver's count: the marks of a step's writes are
one statement, their outcomes one each).  The wall of a step is the median over its
steps, from the checkpoint of one step to the next's, so the model and the database
are in every arm alike.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from ticketiq_pg.agent import CallContext, ModelStep, StepRequest, ToolCall, Tools
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner, RunState

from .common import BenchDB, Sizes
from .report import MISS, OK, _row
from .workload import RENEW_INTERVAL, SEALER, SELF_FENCE_MARGIN, _call_id

READ_SECONDS = 0.2
#: A step of four reads at once takes at most this many times one read's step (issue 41).
TARGET_X = 1.15
MARKS = ("mark_in_doubt", "mark_calls_in_doubt")


def _tools() -> Tools:
    tools = Tools()

    @tools.read("slow.read")
    async def slow(call: CallContext) -> dict[str, Any]:
        await asyncio.sleep(READ_SECONDS)
        return {"read": call.call_id}

    @tools.write("quick.write")
    async def write(call: CallContext) -> dict[str, Any]:
        return {"written": call.call_id}

    return tools


class Asks:
    """A model whose every step asks ``width`` calls of ``tool`` until ``steps``, timing
    each step it is asked (the previous step's calls are done by then)."""

    def __init__(self, tool: str, width: int) -> None:
        self.tool, self.width = tool, width
        self.asked: list[float] = []

    async def step(self, request: StepRequest) -> ModelStep:
        self.asked.append(time.perf_counter())
        if request.step > int(request.input["steps"]):
            return ModelStep(text="done")
        return ModelStep(calls=tuple(
            ToolCall(_call_id(request.run_id, request.step, i), self.tool, {"i": i})
            for i in range(self.width)))


async def _arm(db: TicketIQ, tool: str, width: int, at_once: int, steps: int,
               runs: int) -> dict[str, Any]:
    model = Asks(tool, width)
    leases = LeaseKeeper(db, f"bench-at-once-{tool}-{width}-{at_once}", ttl=600.0,
                         renew_interval=RENEW_INTERVAL, margin=SELF_FENCE_MARGIN)
    runner = Runner(db, leases, SEALER, model, _tools(), calls_at_once=at_once)
    walls: list[float] = []
    sent_before = db.statements.copy()
    for _ in range(runs):
        model.asked = []
        state = await runner.start(owner="bench", run_as="bench", channel="bench",
                                   entry_point="bench", input={"steps": steps})
        assert isinstance(state, RunState)
        outcome = await runner.run(state)
        if outcome.status != "completed":
            raise RuntimeError(f"run ended {outcome.status}: {outcome.reason}")
        walls += [b - a for a, b in zip(model.asked, model.asked[1:], strict=False)]
    sent = {k: v - sent_before.get(k, 0) for k, v in db.statements.items()}
    made = runs * steps
    return {"step_wall_ms": statistics.median(walls) * 1e3, "steps": made,
            "marks_per_step": sum(sent.get(f, 0) for f in MARKS) / made,
            "outcomes_per_step": sent.get("record_outcome", 0) / made,
            "statements_per_step": sum(v for k, v in sent.items()
                                       if k not in ("start_run", "seal_answer",
                                                    "hand_on_answer")) / made}


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    db = await TicketIQ.connect(bdb.url, min_size=2, max_size=8, group_commit=False)
    steps, runs = sizes.rt_steps, max(1, sizes.rt_runs // 5)
    arms = {"one_read": ("slow.read", 1, 8), "four_reads_at_once": ("slow.read", 4, 8),
            "four_reads_in_turn": ("slow.read", 4, 1)}
    out: dict[str, Any] = {name: [] for name in arms}
    try:
        for rnd in range(3):
            order = list(arms) if rnd % 2 == 0 else list(reversed(arms))
            for name in order:
                tool, width, at_once = arms[name]
                out[name].append(await _arm(db, tool, width, at_once, steps, runs))
        for name in arms:
            rounds = out[name]
            out[name] = {**rounds[-1], "step_wall_ms": statistics.median(
                r["step_wall_ms"] for r in rounds)}
        for width in (1, 3):
            out[f"writes_{width}"] = await _arm(db, "quick.write", width, 8, steps, runs)
    finally:
        await db.close()
    one = out["one_read"]["step_wall_ms"]
    out["x_one_read"] = {name: out[name]["step_wall_ms"] / one
                         for name in ("four_reads_at_once", "four_reads_in_turn")}
    log(f"  a step of 4 reads of {READ_SECONDS * 1e3:.0f} ms: "
        f"{out['four_reads_at_once']['step_wall_ms']:.0f} ms at once, "
        f"{out['four_reads_in_turn']['step_wall_ms']:.0f} ms in turn, one read "
        f"{one:.0f} ms; marks a step with 1 and 3 writes: "
        f"{out['writes_1']['marks_per_step']:.2f}, {out['writes_3']['marks_per_step']:.2f}")
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    at_once, in_turn = res["x_one_read"]["four_reads_at_once"], \
        res["x_one_read"]["four_reads_in_turn"]
    w1, w3 = res["writes_1"], res["writes_3"]
    return [
        _row("16", "a step of 4 reads of 200 ms, x a step of one",
             f"{at_once:.2f}x", f"one after another {in_turn:.2f}x",
             f"<= {TARGET_X}x", OK if at_once <= TARGET_X else MISS,
             "calls_at_once.four_reads_x", at_once),
        _row("16", "mark statements a step, 1 write and 3 writes at once",
             f"{w1['marks_per_step']:.2f}, {w3['marks_per_step']:.2f}",
             f"outcomes {w1['outcomes_per_step']:.2f}, {w3['outcomes_per_step']:.2f}",
             "1 and 1", OK if w1["marks_per_step"] == w3["marks_per_step"] == 1 else MISS,
             "calls_at_once.marks_per_step_3_writes", w3["marks_per_step"]),
    ]
