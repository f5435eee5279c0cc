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

``{"kind": "escalation_batch", "input": {"ticket_ids": ["T-1", "T-2"]}}`` escalates
several tickets at once: one child escalation run per ticket, waited for all together.
``{"kind": "escalation_first", "input": {"ticket_ids": [...]}}`` escalates the tickets of
one incident at once and goes on as soon as the first escalation ends (its ticket
acknowledged, or found not to be a P1): the incident has an owner; the others run on.
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


# A batch: one child escalation per ticket, all at once; it ends when every one has.
escalation_batch = Workflow("escalation_batch", signals=[])


@escalation_batch.step(first=True)
def fan_out(ctx: WorkflowContext) -> WorkflowNext:
    tickets = [str(t) for t in ctx.input["ticket_ids"]][:64]  # an all makes up to 64
    # each child is keyed by this step's key and its place: a resumed batch finds the
    # escalations it started, never starts a second one for a ticket
    return ctx.all(*(ctx.workflow("escalation", {"ticket_id": t}) for t in tickets),
                   then="summary")


@escalation_batch.step()
def summary(ctx: WorkflowContext) -> WorkflowNext:
    # each child's result: {"child_run_id", "status", "output"} (its ctx.end answer)
    return ctx.end({"escalations": [
        {"run_id": child["child_run_id"], "status": child["status"], **(child.get("output") or {})}
        for child in ctx.results["fan_out"]]})


# The tickets of one incident, escalated at once: the first escalation to end owns it.
escalation_first = Workflow("escalation_first", signals=[])


@escalation_first.step(first=True)
def race(ctx: WorkflowContext) -> WorkflowNext:
    tickets = [str(t) for t in ctx.input["ticket_ids"]][:64]  # a first starts up to 64
    # keyed by ticket (key=, else its place): a resumed run finds each escalation it
    # started, and is told the one the database recorded as the first to end
    return ctx.first(*(ctx.workflow("escalation", {"ticket_id": t}, key=f"ticket.{t}")
                       for t in tickets), then="owner")


@escalation_first.step()
def owner(ctx: WorkflowContext) -> WorkflowNext:
    first = ctx.results["race"]  # the first child's result, its place and key, every child
    others = [run_id for run_id in first["children"] if run_id != first["child_run_id"]]
    # the others run on to their own end (each once); their ends wake this run no more
    return ctx.end({"owner": first["key"], "run_id": first["child_run_id"],
                    "status": first["status"], **(first.get("output") or {}),
                    "still_escalating": others})


class EscalationGates:
    """Escalations start from ``POST /runs`` (alone or in a batch); the triage agent's runs
    are delegations."""

    async def check_run(self, run: RunInfo) -> Verdict:
        if run.entry_point not in ("escalation", "escalation_batch", "escalation_first",
                                   "delegation"):
            return Verdict.deny(f"escalation runs start from POST /runs, not {run.entry_point}")
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        return Verdict.allow()


# The triage app's model (its child runs are triage runs) and its client's hooks.
app = App(model=triage_app.model, tools=tools, gates=EscalationGates(),
          workflows=[escalation, escalation_batch, escalation_first],
          on_startup=[open_client], on_shutdown=[close_client])
