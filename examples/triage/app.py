"""Ticket triage on ticketiq-pg: read a ticket, post a triage comment, answer.

Built only on ``from ticketiq_pg import ...``.  Run it with::

    ticketiq-pg worker --app app:app --http-port 8081

from this folder (README.md has the whole walk-through).  A ticket event
(``POST /ticket-events`` on the worker's HTTP front) becomes a run of three model
steps: read the ticket (a read), post a triage comment (a keyed write), answer; the
answer is set on the ticket as its triage note (an answer delivery).  A background job
kind, ``backlog``, triages a list of tickets without a model.

Settings: the ``TICKETIQ_*`` variables of the worker, and

* ``TRIAGE_SERVICE_URL``: the ticket service (``ticket_service.py``), default
  ``http://127.0.0.1:8700``;
* ``TRIAGE_THINK_SECONDS``: how long the model takes per step (default 1), so that a
  kill lands in the middle of a run;
* ``TRIAGE_FROZEN_TICKETS``: ticket ids nobody may comment on (comma-separated);
* ``TRIAGE_MODEL``: ``scripted`` (default: the deterministic model below), or a
  provider's model, ``openai:gpt-4o-mini`` or ``anthropic:claude-sonnet-4-5`` (the key
  from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``; ``pip install 'ticketiq-pg[openai]'``
  or ``[anthropic]``); ``TRIAGE_MODEL_BASE_URL`` points its SDK elsewhere (a proxy).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
from typing import Any

import httpx

from ticketiq_pg import (
    INSPECTOR,
    AnswerDelivery,
    AnthropicModel,
    App,
    CallContext,
    FencedTransport,
    JobContext,
    Model,
    ModelStep,
    OpenAIChatModel,
    ReadBack,
    RunInfo,
    StepRequest,
    ToolCall,
    Tools,
    VendorLimit,
    Verdict,
)

SERVICE_URL = os.environ.get("TRIAGE_SERVICE_URL", "http://127.0.0.1:8700")
THINK_SECONDS = float(os.environ.get("TRIAGE_THINK_SECONDS", "1"))
FROZEN = {t.strip() for t in os.environ.get("TRIAGE_FROZEN_TICKETS", "").split(",") if t.strip()}
MODEL = os.environ.get("TRIAGE_MODEL", "scripted")
MODEL_BASE_URL = os.environ.get("TRIAGE_MODEL_BASE_URL") or None


# -- the ticket service's client: one async HTTP client per process ----------------------


class TicketService:
    """The calls the app makes to the ticket service (``ticket_service.py``)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http: httpx.AsyncClient | None = None

    async def open(self) -> None:
        # The transport checks the run's lease as each request goes out and sends the
        # run's epoch as a fencing token, which the ticket service checks.
        self.http = httpx.AsyncClient(base_url=self.base_url, timeout=10.0,
                                      transport=FencedTransport())

    async def close(self) -> None:
        if self.http is not None:
            await self.http.aclose()
            self.http = None

    def _client(self) -> httpx.AsyncClient:
        if self.http is None:
            raise RuntimeError("the ticket service client is not open (app.startup)")
        return self.http

    async def ticket(self, ticket_id: str) -> dict[str, Any]:
        response = await self._client().get(f"/tickets/{ticket_id}")
        response.raise_for_status()
        return response.json()["ticket"]

    async def comment(self, ticket_id: str, text: str, *, key: str,
                      run_id: str | None = None) -> dict[str, Any]:
        response = await self._client().post(
            f"/tickets/{ticket_id}/comments", json={"text": text, "run_id": run_id},
            headers={"Idempotency-Key": key},
        )
        response.raise_for_status()
        return response.json()["comment"]

    async def find_comment(self, ticket_id: str, key: str) -> dict[str, Any] | None:
        response = await self._client().get(
            f"/tickets/{ticket_id}/comments", params={"idempotency_key": key}
        )
        response.raise_for_status()
        found = response.json()["comments"]
        return found[0] if found else None

    async def set_triage(self, ticket_id: str, note: str, *, key: str, run_id: str) -> None:
        response = await self._client().post(
            f"/tickets/{ticket_id}/triage", json={"note": note, "run_id": run_id},
            headers={"Idempotency-Key": key},
        )
        response.raise_for_status()


service = TicketService(SERVICE_URL)


# -- triage rules (what a real model would decide) -------------------------------------

PRIORITY_WORDS = (("P1", ("down", "outage", "cannot", "502")), ("P2", ("error", "fails", "wrong")))
TEAM_WORDS = (
    ("security", ("security", "phishing", "vulnerability")),
    ("billing", ("invoice", "refund", "charge", "checkout")),
    ("accounts", ("login", "log in", "password", "2fa")),
)


def triage(ticket: dict[str, Any]) -> tuple[str, str]:
    """The ticket's priority and team, from the words in its title and body."""
    text = f"{ticket['title']} {ticket['body']}".lower()
    priority = next((p for p, words in PRIORITY_WORDS if any(w in text for w in words)), "P3")
    team = next((t for t, words in TEAM_WORDS if any(w in text for w in words)), "support")
    return priority, team


def comment_text(ticket: dict[str, Any]) -> str:
    priority, team = triage(ticket)
    return f"Triage: {priority}, for {team}. ({ticket['title']})"


# -- the model ------------------------------------------------------------------------


def call_id(request: StepRequest, tool: str) -> str:
    """A provider-style tool-call id, the same each time this step is asked.

    The step key of a call is derived from it; an id that is only a position
    (``call_0``) gives no key.
    """
    digest = hashlib.sha256(f"{request.run_id}:{request.step}:{tool}".encode()).hexdigest()
    return f"call_{digest[:24]}"


class TriageModel:
    """A deterministic stand-in for an LLM: three steps per ticket."""

    async def step(self, request: StepRequest) -> ModelStep:
        await asyncio.sleep(THINK_SECONDS)  # a model takes its time: a kill can land here
        ticket_id = request.input["ticket_id"]
        results = [m["content"] for m in request.conversation if m.get("role") == "tool"]
        if request.step == 1:
            read = ToolCall(call_id(request, "tickets.get"), "tickets.get",
                            {"ticket_id": ticket_id})
            return ModelStep(f"Reading {ticket_id}.", (read,))
        if request.step == 2:
            ticket = results[-1]
            if "error" in ticket:
                return ModelStep(f"{ticket_id}: could not read the ticket: {ticket['error']}")
            priority, team = triage(ticket)
            comment = ToolCall(
                call_id(request, "tickets.comment"), "tickets.comment",
                {"ticket_id": ticket_id, "team": team, "text": comment_text(ticket)},
            )
            return ModelStep(f"{ticket_id} is {priority} for {team}; commenting.", (comment,))
        posted = results[-1]
        if "comment_id" in posted:
            return ModelStep(f"{ticket_id} triaged: comment {posted['comment_id']}.")
        return ModelStep(f"{ticket_id} not commented: {posted}.")


# -- the tools ------------------------------------------------------------------------

tools = Tools()


@tools.read(
    "tickets.get",
    description="Read a support ticket: its id, title, body and triage note.",
    parameters={"type": "object", "properties": {"ticket_id": {"type": "string"}},
                "required": ["ticket_id"], "additionalProperties": False},
    vendor="tickets",  # the ticket service's limit (vendor_limits, below)
)
async def get_ticket(call: CallContext) -> dict[str, Any]:
    """A read: made again on resume, never marked in doubt."""
    return await service.ticket(call.arguments["ticket_id"])


def posted(comment: dict[str, Any]) -> dict[str, Any]:
    return {"comment_id": comment["id"], "ticket_id": comment["ticket_id"]}


async def find_comment(call: CallContext) -> ReadBack:
    """Find the comment a call in doubt may have posted, by its step key."""
    if call.step_key is None:
        return ReadBack(found=False)
    comment = await service.find_comment(call.arguments["ticket_id"], call.step_key)
    if comment is None:
        return ReadBack(found=False)
    return ReadBack(found=True, outcome=posted(comment))


COMMENT_ARGUMENTS = {
    "type": "object",
    "properties": {
        "ticket_id": {"type": "string"},
        "team": {"type": "string", "enum": ["support", "billing", "accounts", "security"]},
        "text": {"type": "string", "minLength": 1,
                 "description": "the comment, e.g. 'Triage: P1, for billing. (title)'"},
    },
    "required": ["ticket_id", "team", "text"],
    "additionalProperties": False,
}


@tools.write("tickets.comment", takes_key=True, dedupe_window=math.inf, read_back=find_comment,
             description="Post the triage comment on a ticket: its priority and team.",
             parameters=COMMENT_ARGUMENTS, vendor="tickets")
async def post_comment(call: CallContext) -> dict[str, Any]:
    """A keyed write: the service dedupes on the step key for ever, so a call in
    doubt is sent again with the same key on resume."""
    if call.step_key is None:
        return {"error": "this call has no step key: an unkeyed comment is not posted"}
    comment = await service.comment(
        call.arguments["ticket_id"], call.arguments["text"],
        key=call.step_key, run_id=str(call.run.run_id),
    )
    return posted(comment)


# -- the gates ------------------------------------------------------------------------


class TriageGates:
    """Triage runs start from ticket events; some comments are refused or held."""

    async def check_run(self, run: RunInfo) -> Verdict:
        if run.channel == INSPECTOR:  # an operator's ad hoc call; check_call still judges it
            return Verdict.allow()
        if run.entry_point != "ticket_event":
            return Verdict.deny(f"triage runs start from ticket events, not {run.entry_point}")
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        if classification == "read":
            return Verdict.allow()
        if call.arguments.get("ticket_id") in FROZEN:
            return Verdict.deny(f"ticket {call.arguments['ticket_id']} is frozen")
        if call.arguments.get("team") == "security":
            return Verdict.hold("a comment on a security ticket needs a person's approval")
        return Verdict.allow()


# -- the answer: set on the ticket as its triage note, once ----------------------------


async def send_note(run: RunInfo, request: Any, answer: Any, key: str) -> None:
    await service.set_triage(request["ticket_id"], answer["text"], key=key,
                             run_id=str(run.run_id))


async def note_landed(run: RunInfo, request: Any, key: str) -> bool:
    note = (await service.ticket(request["ticket_id"]))["triage"]
    return note is not None and note["idempotency_key"] == key


# -- the model: the deterministic one, or a provider's by TRIAGE_MODEL ------------------

SYSTEM_PROMPT = (
    "You triage support tickets. Read the ticket with tickets_get, then post one comment "
    "with tickets_comment saying its priority (P1: down or an outage, P2: an error, P3: "
    "anything else) and its team, then answer with a one-line triage note."
)


def make_model(setting: str = MODEL) -> Model:
    """``scripted``: :class:`TriageModel`; ``openai:NAME`` or ``anthropic:NAME``: that
    provider's model, offered this app's tools."""
    provider, _, name = setting.partition(":")
    if provider == "scripted":
        return TriageModel()
    if provider == "openai":
        return OpenAIChatModel(name or "gpt-4o-mini", tools=tools, system=SYSTEM_PROMPT,
                               temperature=0, base_url=MODEL_BASE_URL)
    if provider == "anthropic":
        return AnthropicModel(name or "claude-sonnet-4-5", tools=tools, system=SYSTEM_PROMPT,
                              temperature=0, max_tokens=1024, base_url=MODEL_BASE_URL)
    raise ValueError(f"TRIAGE_MODEL={setting!r}: expected scripted, openai:MODEL or "
                     f"anthropic:MODEL")


# -- the app --------------------------------------------------------------------------

app = App(
    model=make_model(),
    tools=tools,
    gates=TriageGates(),
    deliveries={"ticket_event": AnswerDelivery(send=send_note, read_back=note_landed)},
    # the ticket service's limit, shared by every worker (a little under its own)
    vendor_limits={"tickets": VendorLimit(rate=40, burst=20, concurrency=16)},
)


@app.startup
async def open_client() -> None:
    await service.open()


@app.shutdown
async def close_client() -> None:
    await service.close()
    if isinstance(app.model, OpenAIChatModel | AnthropicModel):
        await app.model.aclose()  # the SDK's HTTP client


@app.job("backlog")
async def triage_backlog(ctx: JobContext) -> dict[str, Any]:
    """Comment on each ticket of ``ctx.payload["tickets"]``, without a model.

    A job's writes are the handler's to make safe: each comment is keyed by the job
    and the ticket, and progress is checkpointed after each one, so an attempt that
    takes over a lost one skips what was done and re-sends at most the comment in
    flight, with its key.  Security tickets are left to runs, where a person
    approves the comment.
    """
    done: list[str] = list(ctx.progress.get("done", []))
    skipped: list[str] = list(ctx.progress.get("skipped", []))
    for ticket_id in ctx.payload["tickets"]:
        if ticket_id in done or ticket_id in skipped:
            continue
        await ctx.ready()
        ticket = await service.ticket(ticket_id)
        if triage(ticket)[1] == "security" or ticket_id in FROZEN:
            skipped.append(ticket_id)
        else:
            await ctx.ready()
            await service.comment(ticket_id, comment_text(ticket),
                                  key=f"backlog:{ctx.job_id}:{ticket_id}")
            done.append(ticket_id)
        await ctx.checkpoint({"done": done, "skipped": skipped})
    return {"done": done, "skipped": skipped}
