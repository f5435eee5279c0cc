"""Ticket escalation as a durable workflow on ticketiq-pg: code decides, not a model.

Built only on ``from ticketiq_pg import ...`` and the triage app's ticket service client
and tools (``app.py``).  Run it with::

    ticketiq-pg worker --app escalation:app --http-port 8081

from this folder.  ``POST /runs`` with ``{"kind": "escalation", "input": {"ticket_id":
"T-1"}}`` starts a run of the workflow ``escalation``: read the ticket; if it is a P1,
post an escalation comment (a keyed write), wait for the on-call person's
acknowledgement (a signal, ``POST /runs/{id}/signals/ack``) and, when none comes within
``ESCALATION_ACK_SECONDS``, sleep ``ESCALATION_REMIND_SECONDS`` and comment again (a
loop back: a new comment, with a new key); once acknowledged, hand the ticket to the
triage agent (a child agent run) and end with what happened.  A process that dies at
any point is replaced by the other: the run goes on from its last step, and no comment
is posted twice.
"""

from __future__ import annotations

import os

from app import app as triage_app
from app import close_client, open_client, tools, triage

from ticketiq_pg import App, RunInfo, ToolCall, Verdict, Workflow, WorkflowContext, WorkflowNext

ACK_SECONDS = float(os.environ.get("ESCALATION_ACK_SECONDS", "600"))
REMIND_SECONDS = float(os.environ.get("ESCALATION_REMIND_SECONDS", "60"))
MAX_REMINDERS = 3

# Version 2 names the on-call channel in its comments. It keeps every step of version 1,
# so it runs version 1's runs too (compatible): a worker of either release takes them.
escalation = Workflow("escalation", version="2", compatible=["1"], signals=["ack"])


def ticket_id(ctx: WorkflowContext) -> str:
    return str(ctx.input["ticket_id"])  # POST /runs hands the run the body's input


@escalation.step(first=True)
def read(ctx: WorkflowContext) -> WorkflowNext:
    return ctx.call("tickets.get", {"ticket_id": ticket_id(ctx)}, then="decide")


@escalation.step()
def decide(ctx: WorkflowContext) -> WorkflowNext:
    ticket = ctx.results["read"]
    if "error" in ticket:
        return ctx.end({"ticket_id": ticket_id(ctx), "error": ticket["error"]})
    priority, team = triage(ticket)
    ctx.vars.update(priority=priority, team=team, reminders=0)
    if priority != "P1":
        return ctx.end({"ticket_id": ticket_id(ctx), "priority": priority, "escalated": False})
    return ctx.goto("escalate")


@escalation.step()
def escalate(ctx: WorkflowContext) -> WorkflowNext:
    text = f"Escalated to on-call ({ctx.vars['team']}), reminder {ctx.vars['reminders']}."
    # version 2's change, only for a run that has not commented under version 1: one that
    # has keeps version 1's text on its reminders (the answer is recorded with the run)
    if ctx.patched("name-the-channel"):
        text += f" Channel: #oncall-{ctx.vars['team']}."
    return ctx.call("tickets.comment", {"ticket_id": ticket_id(ctx), "team": ctx.vars["team"],
                                        "text": text}, then="wait_ack")


@escalation.step()
def wait_ack(ctx: WorkflowContext) -> WorkflowNext:
    return ctx.wait_signal("ack", timeout=ACK_SECONDS, then="acked")


@escalation.step()
def acked(ctx: WorkflowContext) -> WorkflowNext:
    if not ctx.results["wait_ack"]["timed_out"]:
        ctx.vars["acked_by"] = ctx.results["wait_ack"]["payload"]
        # at once: the triage agent's reading (a child run) and the ticket as it is now
        return ctx.all(ctx.agent({"ticket_id": ticket_id(ctx)}),
                       ctx.call("tickets.get", {"ticket_id": ticket_id(ctx)}), then="done")
    ctx.vars["reminders"] += 1
    if ctx.vars["reminders"] > MAX_REMINDERS:
        return ctx.end({"ticket_id": ticket_id(ctx), "escalated": True, "acked_by": None})
    return ctx.sleep(REMIND_SECONDS, then="escalate")  # then loop back: comment again


@escalation.step()
def done(ctx: WorkflowContext) -> WorkflowNext:
    triaged, ticket = ctx.results["acked"]  # an all's results, in the order asked
    return ctx.end({"ticket_id": ticket_id(ctx), "escalated": True,
                    "acked_by": ctx.vars["acked_by"], "reminders": ctx.vars["reminders"],
                    "triage": triaged.get("answer", {}).get("text"),
                    "title": ticket.get("title")})


class EscalationGates:
    """Escalations start from ``POST /runs``; their child runs are delegations."""

    async def check_run(self, run: RunInfo) -> Verdict:
        if run.entry_point not in ("escalation", "delegation"):
            return Verdict.deny(f"escalation runs start from POST /runs, not {run.entry_point}")
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        return Verdict.allow()


# The triage app's model (its child runs are triage runs) and its client's hooks.
app = App(model=triage_app.model, tools=tools, gates=EscalationGates(), workflows=[escalation],
          on_startup=[open_client], on_shutdown=[close_client])
