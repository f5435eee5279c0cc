"""The measured agent: a trivial in-process scripted model and in-process tools.

What is measured is the durable step, not a model or a vendor: each model
step answers at once with one call of the read tool ``kb.search`` (or, for
the round-trip scenario, a read and two writes), the tool answers at once
with about 170 bytes, and the real :class:`ticketiq_pg.runtime.runner.Runner` does
everything else: deep-copies the conversation for the model, plans the
calls and their step keys, seals the checkpoint (HMAC over canonical JSON),
writes it with ``ticketiq.write_checkpoint`` through the driver, marks
changing calls in doubt, makes the calls and carries the results into the
next checkpoint.  The conversation grows by about 500 bytes a step, so
with 5 steps a run the checkpoints average about 2 KB of conversation and
calls (the bench measures and reports the actual sizes).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import uuid
from typing import Any

from ticketiq_pg.agent import (
    CallContext,
    ModelStep,
    StepRequest,
    Tool,
    ToolCall,
    Tools,
    user_message,
)
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.seal import Sealer

SEAL_KEY_ID = "bench-1"
SEAL_KEY = secrets.token_bytes(32)
SEALER = Sealer({SEAL_KEY_ID: SEAL_KEY})

LEASE_TTL = 8.0
RENEW_INTERVAL = 2.0
SELF_FENCE_MARGIN = 1.0

_TICKET_TEXT = (
    "Customer reports that the nightly export to the data warehouse has failed three "
    "nights in a row with a timeout after 30 minutes. They upgraded their plan last "
    "week and added two new connectors. Please find out whether this is a known issue "
    "and what the workaround is."
)


def ticket(index: int, plan: str = "reads", steps: int = 8) -> dict[str, Any]:
    """The run's input: a support ticket (about 400 bytes) and the script's knobs."""
    return {
        "ticket": f"OPS-{1000 + index}",
        "subject": "Nightly export times out",
        "body": _TICKET_TEXT,
        "requester": f"user{index}@example.com",
        "plan": plan,
        "steps": steps,
    }


def _call_id(run_id: uuid.UUID, step: int, n: int) -> str:
    # A provider-style tool-call id: an identity, not a position number.
    digest = hashlib.sha256(f"{run_id}:{step}:{n}".encode()).hexdigest()
    return "toolu_" + digest[:24]


class Barrier:
    """Ends a measured window: the final model step of each run waits here.

    ``arrived`` is set once every run of the round asked for its final step
    (every checkpointed step is done); the final steps go on after
    :meth:`release`, outside the window.
    """

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.count = 0
        self.arrived = asyncio.Event()
        self.released = asyncio.Event()

    async def wait(self) -> None:
        self.count += 1
        if self.count >= self.parties:
            self.arrived.set()
        await self.released.wait()

    def release(self) -> None:
        self.released.set()


class BenchModel:
    """Answers step k < steps with tool calls, then a final answer; never waits itself."""

    def __init__(self) -> None:
        self.barrier: Barrier | None = None
        self.asked = 0

    async def step(self, request: StepRequest) -> ModelStep:
        self.asked += 1
        spec = request.input if isinstance(request.input, dict) else {}
        steps = int(spec.get("steps", 8))
        if request.step > steps:
            if self.barrier is not None:
                await self.barrier.wait()
            done = request.step - 1
            return ModelStep(text=f"Known issue KB-1042; workaround sent ({done} steps).")
        query = f"export timeout connector {request.step}"
        calls = [ToolCall(_call_id(request.run_id, request.step, 0), "kb.search",
                          {"query": query, "limit": 2})]
        if spec.get("plan") == "mixed":
            calls.append(ToolCall(_call_id(request.run_id, request.step, 1), "ticket.update",
                                  {"ticket": spec.get("ticket"), "status": "investigating"}))
            calls.append(ToolCall(_call_id(request.run_id, request.step, 2), "ticket.comment",
                                  {"ticket": spec.get("ticket"), "text": f"checked {query}"}))
        return ModelStep(text="", calls=tuple(calls))


class SlowModel(BenchModel):
    """The bench model, answering after ``latency`` seconds (a model call's wait)."""

    def __init__(self, latency: float = 0.0) -> None:
        super().__init__()
        self.latency = latency

    async def step(self, request: StepRequest) -> ModelStep:
        spec = request.input if isinstance(request.input, dict) else {}
        # not before the final answer: a measured window ends when it is asked for
        if self.latency and request.step <= int(spec.get("steps", 8)):
            await asyncio.sleep(self.latency)
        return await super().step(request)


async def kb_search(ctx: CallContext) -> Any:
    """The read tool: about 170 bytes of search hits, in process."""
    return search_result(str(ctx.arguments.get("query", "")))


def search_result(query: str) -> dict[str, Any]:
    return {
        "query": query,
        "hits": [
            {"id": "KB-1042", "title": "Exports time out after plan upgrade",
             "snippet": "Raise the export window or split connectors."},
        ],
    }


async def ticket_write(ctx: CallContext) -> Any:
    return {"ok": True, "ticket": ctx.arguments.get("ticket"), "key": ctx.step_key}


TOOLS = Tools([
    Tool("kb.search", "read", kb_search),
    Tool("ticket.update", "write", ticket_write),
    Tool("ticket.comment", "write", ticket_write),
])


def make_runner(db: TicketIQ, holder: str, model: BenchModel | None = None) -> Runner:
    """A Runner with the defaults' lease settings (its keeper is not started)."""
    leases = LeaseKeeper(
        db, holder, ttl=LEASE_TTL, renew_interval=RENEW_INTERVAL, margin=SELF_FENCE_MARGIN
    )
    return Runner(db, leases, SEALER, model or BenchModel(), TOOLS)


def start_kwargs(index: int, plan: str = "reads", steps: int = 8) -> dict[str, Any]:
    return {
        "owner": "bench",
        "run_as": "bench",
        "channel": "bench",
        "entry_point": "bench",
        "input": ticket(index, plan, steps),
    }


async def start_lapsing_run(
    db: TicketIQ, index: int, ttl: float, holder: str = "bench-dead"
) -> uuid.UUID:
    """A run whose process 'died' right after its first checkpoint: its lease lapses in ttl s.

    Written through the driver exactly as the Runner would have written it
    (a sealed step-1 checkpoint with one read call), so a resume verifies
    the seal, makes the read again and goes on.
    """
    spec = ticket(index, "reads", 1)
    started = await db.start_run(
        holder=holder, owner="bench", run_as="bench", channel="bench", entry_point="bench",
        may_wait=False, ttl=ttl, input=spec,
    )
    assert started.epoch is not None
    call_id = _call_id(started.run_id, 1, 0)
    arguments = {"query": "export timeout connector 1", "limit": 2}
    body = {
        "conversation": [
            user_message(spec),
            {"role": "assistant", "content": "",
             "tool_calls": [{"call_id": call_id, "tool": "kb.search", "arguments": arguments}]},
        ],
        "calls": [{
            "call_id": call_id, "tool": "kb.search", "arguments": arguments,
            "classification": "read",
            "step_key": keys.agent_call_key(started.correlation_id, "main", 1, call_id),
        }],
        "counters": {"model_steps": 1, "tool_calls": 1, "agent_loop": "main"},
        "history": [{"step": 1, "calls": [call_id]}],
        "delegation_keys": {},
        "outcomes": {},
    }
    seal, key_id = SEALER.seal("checkpoint", started.run_id, 1, body)
    await db.write_checkpoint(started.run_id, started.epoch, 1, body, seal, key_id)
    return started.run_id
