"""More scripted tools and the plans that call them (used by :mod:`~.scripted`).

Each is a real vendor route on the local vendor service: incident.io incident updates
(keyed, deduped for ever: resent with their key), SNS FIFO publishes (deduped for
5 minutes: settled, never resent), a remote agent asked through a Teams conversation
(its reply keyed, so it is read back) and a sub-agent with tools (a child run whose
calls write); and a scripted run's answer delivered where it is counted.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.landed import ANSWER_CALL, mark
from ticketiq_pg.agent import AnswerDelivery, CallContext, ReadBack, RunInfo, Tool, ToolCall

PLANS = ("incident_update", "sns", "remote", "subagent_tools")
#: The Discord channel scripted answers are delivered to (TICKETIQ_SCRIPT_DELIVER=1).
ANSWERS_CHANNEL = "900"


def more_tools(clients: Any, marked: Callable[[CallContext, str], str],
               route: Callable[[Any], dict[str, Any]]) -> list[Tool]:
    """The tools of :data:`PLANS` over ``clients`` (a :class:`VendorClients`)."""
    incident_io, teams = clients.incidentio, clients.teams

    async def update_incident(ctx: CallContext) -> Any:
        # The run's own incident, opened by its create (the name carries the run's mark).
        run = f"run={ctx.run.run_id} "
        found = [i for i in await incident_io.list_incidents()
                 if i["name"].startswith(ctx.arguments["name"]) and run in i["name"]]
        if not found:
            return {"error": f"no incident {ctx.arguments['name']!r} of this run"}
        await incident_io.update_incident(
            found[0]["id"], {"summary": marked(ctx, "summary")}, ctx.step_key or ""
        )
        return {"incident": ctx.arguments["name"], "status": "updated"}

    async def publish(ctx: CallContext) -> Any:
        topic = f"arn:aws:sns:eu-west-1:000000000000:{ctx.arguments['topic']}"
        await clients.sns.publish(topic, marked(ctx, "message"), "ops", ctx.step_key or "")
        return {"message": "published"}

    def conversation(ctx: CallContext) -> str:
        return f"remote-{ctx.arguments['agent']}"

    async def ask_remote(ctx: CallContext) -> Any:
        await teams.reply(conversation(ctx), marked(ctx, "task"), key=ctx.step_key)
        return {"asked": ctx.arguments["agent"]}

    async def find_asked(ctx: CallContext) -> ReadBack:
        if not ctx.step_key:
            return ReadBack(False)
        found = await teams.find_reply(conversation(ctx), ctx.step_key)
        return ReadBack(found is not None, {"asked": ctx.arguments["agent"]})

    return [
        Tool("incident.update", "write", update_incident, **route(incident_io)),
        Tool("sns.publish", "write", publish, **route(clients.sns)),
        Tool("agent.remote", "remote_agent", ask_remote, read_back=find_asked),
        Tool("agent.subagent_with_tools", "subagent_with_tools", subagent=True),
    ]


def more_calls(plan: str, rng: random.Random, seed: Any, step: int,
               call_id: Callable[[random.Random], str], read: ToolCall) -> list[ToolCall]:
    """The calls step ``step`` of one of :data:`PLANS` asks for."""
    if plan == "incident_update":
        if step == 1:
            return [ToolCall(call_id(rng), "incident.create",
                             {"name": f"seed {seed}", "summary": "opened"})]
        return [ToolCall(call_id(rng), "incident.update",
                         {"name": f"seed {seed}", "summary": f"seed {seed} step {step}"})]
    if plan == "sns":
        return [read, ToolCall(call_id(rng), "sns.publish",
                               {"topic": "ops.fifo", "message": f"seed {seed} step {step}"})]
    if plan == "remote":
        return [read, ToolCall(call_id(rng), "agent.remote",
                               {"agent": f"triage-{seed}", "task": f"seed {seed} step {step}"})]
    return [read, ToolCall(call_id(rng), "agent.subagent_with_tools",
                           {"seed": f"{seed}-{step}", "steps": 2, "plan": "writes"})]


def answer_delivery(clients: Any) -> AnswerDelivery:
    """A scripted run's answer posted to the Discord channel ``900``: no reader, so it
    is delivered after the hand-on, at most once (marked as the run's ``answer`` call)."""

    async def send(run: RunInfo, request: Any, answer: Any, key: str) -> None:
        text = answer.get("text", "") if isinstance(answer, dict) else str(answer)
        step = answer.get("step", 0) if isinstance(answer, dict) else 0
        await clients.discord.create_message(ANSWERS_CHANNEL,
                                             mark(text, run.run_id, step, ANSWER_CALL))

    return AnswerDelivery(send=send)
