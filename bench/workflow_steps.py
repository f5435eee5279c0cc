"""12. A workflow step's cost beside an agent step's: statements and server time.

Both drivers share one step engine, so a step that makes one call costs the same
statements whichever decides it: the checkpoint, and for a write its in-doubt mark and
its outcome.  Measured through the real Runner, one run at a time, no lease keeper
ticking: an agent run whose model asks one call per step, and a workflow whose step
makes the same call and loops back to itself (``ticketiq_pg.workflow``), each with a read
(``kb.search``) and with a write (``ticket.comment``).  pg_stat_statements gives the
server's time per step (``ms`` of the step functions); the driver counts what it sent.
A workflow's checkpoint carries its state (step, steps executed, vars, results), so its
body is somewhat larger.
"""

from __future__ import annotations

from typing import Any

from ticketiq_pg.agent import ModelStep, StepRequest, ToolCall
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner, RunState
from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

from .common import BenchDB, Sizes, StatementSnapshot
from .report import _row
from .workload import RENEW_INTERVAL, SEALER, SELF_FENCE_MARGIN, TOOLS, _call_id, ticket

STEP_FUNCTIONS = ("write_checkpoint", "mark_in_doubt", "record_outcome")
CALLS = {"read": ("kb.search", {"query": "export timeout", "limit": 2}),
         "write": ("ticket.comment", {"ticket": "OPS-1", "text": "checked"})}


class OneCallModel:
    """An agent model whose every step asks one call of ``tool`` until ``steps``."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool, self.arguments = tool, arguments

    async def step(self, request: StepRequest) -> ModelStep:
        if request.step > int(request.input["steps"]):
            return ModelStep(text="done")
        call = ToolCall(_call_id(request.run_id, request.step, 0), self.tool, self.arguments)
        return ModelStep(calls=(call,))


def looping_flow(tool: str, arguments: dict[str, Any]) -> Workflow:
    """A workflow whose one step makes the call and loops back to itself ``steps`` times."""
    flow = Workflow(f"bench_{tool.replace('.', '_')}")

    @flow.step(first=True)
    def act(ctx: WorkflowContext) -> WorkflowNext:
        made = ctx.vars.get("made", 0)
        if made >= int(ctx.input["steps"]):
            return ctx.end({"made": made})
        ctx.vars["made"] = made + 1
        return ctx.call(tool, arguments, then="act")  # a loop back: a new key each time

    return flow


async def _scenario(bdb: BenchDB, db: TicketIQ, driver: str, kind: str,
                    sizes: Sizes) -> dict[str, Any]:
    tool, arguments = CALLS[kind]
    flow = looping_flow(tool, arguments)
    leases = LeaseKeeper(db, f"bench-wf-{driver}-{kind}", ttl=600.0,
                         renew_interval=RENEW_INTERVAL, margin=SELF_FENCE_MARGIN)
    runner = Runner(db, leases, SEALER, OneCallModel(tool, arguments), TOOLS, workflows=[flow])
    sent_before = db.statements.copy()
    before = StatementSnapshot(bdb.url, bdb.pgss)
    for index in range(sizes.rt_runs):
        state = await runner.start(owner="bench", run_as="bench", channel="bench",
                                   entry_point=flow.kind if driver == "workflow" else "bench",
                                   input={**ticket(index), "steps": sizes.rt_steps})
        assert isinstance(state, RunState)
        outcome = await runner.run(state)
        if outcome.status != "completed":
            raise RuntimeError(f"{driver} run ended {outcome.status}: {outcome.reason}")
    after = StatementSnapshot(bdb.url, bdb.pgss)
    steps = sizes.rt_runs * sizes.rt_steps
    sent = {k: v - sent_before.get(k, 0) for k, v in db.statements.items()}
    out: dict[str, Any] = {
        "steps": steps,
        "driver_per_step": sum(sent.get(f, 0) for f in STEP_FUNCTIONS) / steps,
    }
    if bdb.pgss:
        delta = after.diff(before)
        out["server_per_step"] = sum(delta.get(f, {}).get("calls", 0.0)
                                     for f in STEP_FUNCTIONS) / steps
        out["server_ms_per_step"] = sum(delta.get(f, {}).get("ms", 0.0)
                                        for f in STEP_FUNCTIONS) / steps
        out["wal_bytes_per_step"] = sum(delta.get(f, {}).get("wal_bytes", 0.0)
                                        for f in STEP_FUNCTIONS) / steps
    return out


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    db = await TicketIQ.connect(bdb.url, min_size=1, max_size=2, group_commit=False)
    out: dict[str, Any] = {}
    try:
        for kind in CALLS:
            for driver in ("agent", "workflow"):
                fig = await _scenario(bdb, db, driver, kind, sizes)
                out[f"{driver}_{kind}"] = fig
                log(f"  {driver} step with one {kind}: {fig['driver_per_step']:.2f} "
                    f"statements/step (driver), server "
                    f"{fig.get('server_ms_per_step', float('nan')):.3f} ms/step")
    finally:
        await db.close()
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    out = []
    for kind, expected in (("read", 1), ("write", 3)):
        agent, flow = res[f"agent_{kind}"], res[f"workflow_{kind}"]
        same = agent["driver_per_step"] == flow["driver_per_step"] == expected
        ms = (f"server {flow['server_ms_per_step']:.3f} ms/step vs agent "
              f"{agent['server_ms_per_step']:.3f}" if "server_ms_per_step" in flow else "")
        out.append(_row("12", f"statements per workflow step with one {kind} (agent step)",
                        f"{flow['driver_per_step']:.2f} ({agent['driver_per_step']:.2f})",
                        ms, f"{expected}", "ok" if same else "MISS",
                        f"workflow_steps.{kind}.per_step", flow["driver_per_step"]))
    return out
