"""An OpenAI Agents SDK agent, unchanged, run durably on ticketiq-pg.

The agent is written as the SDK's documentation teaches (``Agent(name=...,
instructions=..., tools=[...])``, ``@function_tool``); :func:`agent_app` runs it on
ticketiq-pg, with each tool classified::

    ticketiq-pg worker --app app:app --http-port 8081

from this folder, with the triage example's ticket service running
(``python ../triage/ticket_service.py --port 8700``).  A run is started with
``POST /runs {"input": {"ticket_id": "T-1"}}``: the agent reads the ticket, posts a
triage comment, sets the ticket's triage note and answers.  The tools and their routes
are the Pydantic AI example's (``../pydantic_ai/app.py``):

* ``get_ticket`` is a read: made again on resume.
* ``post_comment`` is a keyed write: its call's step key is the comment's
  ``Idempotency-Key``, so a comment in doubt is sent again with the same key, and found
  by its reader.
* ``set_triage_note`` is left unclassified: a write without key or reader.  In doubt
  after a crash, it is settled ``unknown`` and never sent again.

Settings: the ``TICKETIQ_*`` variables of the worker, and

* ``TRIAGE_SERVICE_URL``: the ticket service, default ``http://127.0.0.1:8700``;
* ``TRIAGE_AGENT_MODEL``: ``openai:MODEL`` (default ``openai:gpt-4o-mini``: the SDK's
  ``OpenAIChatCompletionsModel``; the key from ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` to
  point it elsewhere);
* ``TRIAGE_TOOL_SECONDS``: how long the triage note's answer takes to come back after the
  service applied it (default 0), so a kill can land while it is in flight.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from typing import Any

import httpx
from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from ticketiq_pg import CallContext, ReadBack
from ticketiq_pg.integrations.openai_agents import agent_app, current_call, read, write

SERVICE_URL = os.environ.get("TRIAGE_SERVICE_URL", "http://127.0.0.1:8700")
MODEL = os.environ.get("TRIAGE_AGENT_MODEL", "openai:gpt-4o-mini")
TOOL_SECONDS = float(os.environ.get("TRIAGE_TOOL_SECONDS", "0"))

set_tracing_disabled(True)  # the worker's steps are its traces (ticketiq-pg's own)


async def _service(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=SERVICE_URL, timeout=10.0) as http:
        response = await http.request(method, path, **kwargs)
        response.raise_for_status()
        return response.json()


@function_tool
async def get_ticket(ticket_id: str) -> str:
    """Read a ticket by its id."""
    return json.dumps((await _service("GET", f"/tickets/{ticket_id}"))["ticket"])


@function_tool
async def post_comment(ticket_id: str, text: str) -> str:
    """Post a triage comment on a ticket."""
    call = current_call()  # ticketiq-pg's call: its step key is the idempotency key
    if call.step_key is None:
        return "this call has no step key: an unkeyed comment is not posted"
    answer = await _service("POST", f"/tickets/{ticket_id}/comments",
                            json={"text": text, "run_id": str(call.run.run_id)},
                            headers={"Idempotency-Key": call.step_key})
    return json.dumps({"comment_id": answer["comment"]["id"]})


@function_tool
async def set_triage_note(ticket_id: str, note: str) -> str:
    """Set the ticket's triage note."""
    await _service("POST", f"/tickets/{ticket_id}/triage", json={"note": note})
    await asyncio.sleep(TOOL_SECONDS)  # applied; its answer is still on its way
    return "noted"


async def find_comment(call: CallContext) -> ReadBack:
    """The reader of a comment in doubt: the comment its step key created, if any."""
    found = (await _service("GET", f"/tickets/{call.arguments['ticket_id']}/comments",
                            params={"idempotency_key": call.step_key}))["comments"]
    return ReadBack(found=True, outcome={"comment_id": found[0]["id"]}) if found else ReadBack(
        found=False)


if not MODEL.startswith("openai:"):
    raise ValueError(f"TRIAGE_AGENT_MODEL={MODEL!r}: expected openai:MODEL")
# ticketiq-pg retries a failed step within its budget: the SDK's client must not retry too.
model = OpenAIChatCompletionsModel(MODEL.split(":", 1)[1],
                                   openai_client=AsyncOpenAI(max_retries=0))

agent = Agent(
    name="triage",
    instructions="You triage support tickets: read the ticket, post one triage comment, "
                 "set its triage note, then answer in one line.",
    model=model,
    tools=[get_ticket, post_comment, set_triage_note],
)

app = agent_app(agent, routes={
    "get_ticket": read(),
    "post_comment": write(takes_key=True, dedupe_window=math.inf, read_back=find_comment),
    # set_triage_note: not classified, so a write without key or reader (the safe default)
})
