"""3. Round trips per step, from pg_stat_statements and from the driver's own count.

Two scenarios through the real Runner, one run at a time, with no lease
keeper ticking (so nothing else talks to the database meanwhile):

* ``read_only``: each step asks one read (``kb.search``): the target is one
  statement per step, the checkpoint write;
* ``changing``: each step asks a read and two writes, made at once: one more
  statement for the step's writes together (``mark_calls_in_doubt`` just before
  they are sent) and one per write (``record_outcome`` as it returns), so four
  per step (five before a step's writes were marked together).

Per run there are also ``start_run``, ``seal_answer`` and ``hand_on_answer``
(reported apart, they are not steps).  pg_stat_statements counts every
top-level statement the database ran in the bench database; the driver
counts what it sent.
"""

from __future__ import annotations

from typing import Any

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.runner import RunState

from .common import BenchDB, Sizes, StatementSnapshot
from .workload import make_runner, start_kwargs

STEP_FUNCTIONS = ("write_checkpoint", "mark_in_doubt", "mark_calls_in_doubt", "record_outcome")
RUN_FUNCTIONS = ("start_run", "seal_answer", "hand_on_answer")


async def _scenario(
    bdb: BenchDB, db: TicketIQ, plan: str, changing_per_step: int, sizes: Sizes
) -> dict[str, Any]:
    runner = make_runner(db, f"bench-rt-{plan}")
    sent_before = db.statements.copy()
    before = StatementSnapshot(bdb.url, bdb.pgss)
    for index in range(sizes.rt_runs):
        state = await runner.start(**start_kwargs(index, plan, sizes.rt_steps))
        assert isinstance(state, RunState)
        outcome = await runner.run(state)
        if outcome.status != "completed":
            raise RuntimeError(f"round-trip run ended {outcome.status}: {outcome.reason}")
    after = StatementSnapshot(bdb.url, bdb.pgss)
    steps = sizes.rt_runs * sizes.rt_steps
    sent = {k: v - sent_before.get(k, 0) for k, v in db.statements.items()}
    sent = {k: v for k, v in sent.items() if v}
    figures: dict[str, Any] = {
        "runs": sizes.rt_runs,
        "steps": steps,
        # the checkpoint; one mark of the step's writes (one statement for one write or
        # for several made at once); one outcome each
        "expected_per_step": 1 + (1 if changing_per_step else 0) + changing_per_step,
        "driver": {
            "per_step": sum(sent.get(f, 0) for f in STEP_FUNCTIONS) / steps,
            "per_run_overhead": sum(sent.get(f, 0) for f in RUN_FUNCTIONS) / sizes.rt_runs,
            "by_function": sent,
        },
    }
    if bdb.pgss:
        delta = after.diff(before)
        calls = {k: int(v["calls"]) for k, v in delta.items()}
        figures["pg_stat_statements"] = {
            "per_step": sum(calls.get(f, 0) for f in STEP_FUNCTIONS) / steps,
            "per_run_overhead": sum(calls.get(f, 0) for f in RUN_FUNCTIONS) / sizes.rt_runs,
            "all_statements_per_step_incl_run_overhead": after.calls_since(before) / steps,
            "by_function": calls,
        }
    return figures


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=2)
    try:
        out = {
            "read_only": await _scenario(bdb, db, "reads", 0, sizes),
            "changing": await _scenario(bdb, db, "mixed", 2, sizes),
            "source": bdb.pgss_note,
        }
    finally:
        await db.close()
    for name, fig in out.items():
        if isinstance(fig, dict):
            pgss = fig.get("pg_stat_statements", {}).get("per_step")
            log(f"  round trips {name}: driver {fig['driver']['per_step']:.2f}/step, "
                f"pg_stat_statements {pgss if pgss is None else f'{pgss:.2f}'}/step "
                f"(expected {fig['expected_per_step']})")
    return out
