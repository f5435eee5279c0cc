"""A Pydantic AI agent, unchanged, run durably on ticketiq-pg.

The agent is written as Pydantic AI's documentation teaches (``Agent(model,
system_prompt=...)``, ``@agent.tool_plain``); :func:`agent_app` runs it on ticketiq-pg,
with each tool classified::

    ticketiq-pg worker --app app:app --http-port 8081

from this folder, with the triage example's ticket service running
(``python ../triage/ticket_service.py --port 8700``).  A run is started with
``POST /runs {"input": {"ticket_id": "T-1"}}``: the agent reads the ticket, posts a
triage comment, sets the ticket's triage note and answers.

* ``get_ticket`` is a read: made again on resume.
* ``post_comment`` is a keyed write: it sends its call's step key as the comment's
  ``Idempotency-Key`` (the service dedupes it for ever), so a comment in doubt is sent
  again with the same key, and found by its reader.
* ``set_triage_note`` is left unclassified: a write without key or reader.  In doubt
  after a crash, it is settled ``unknown`` and never sent again.

Settings: the ``TICKETIQ_*`` variables of the worker, and

* ``TRIAGE_SERVICE_URL``: the ticket service, default ``http://127.0.0.1:8700``;
* ``TRIAGE_AGENT_MODEL``: ``function`` (default: a deterministic stand-in, Pydantic AI's
  ``FunctionModel``) or ``openai:MODEL`` (Pydantic AI's ``OpenAIChatModel``; the key from
  ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` to point it elsewhere);
* ``TRIAGE_THINK_SECONDS``: how long the stand-in thinks per step (default 1);
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
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ticketiq_pg import CallContext, ReadBack
from ticketiq_pg.integrations.pydantic_ai import agent_app, current_call, read, write

SERVICE_URL = os.environ.get("TRIAGE_SERVICE_URL", "http://127.0.0.1:8700")
MODEL = os.environ.get("TRIAGE_AGENT_MODEL", "function")
THINK_SECONDS = float(os.environ.get("TRIAGE_THINK_SECONDS", "1"))
TOOL_SECONDS = float(os.environ.get("TRIAGE_TOOL_SECONDS", "0"))


async def _service(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=SERVICE_URL, timeout=10.0) as http:
        response = await http.request(method, path, **kwargs)
        response.raise_for_status()
        return response.json()


# -- the model: a real one, or a stand-in that thinks as one would -----------------------


async def stand_in(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Three steps per ticket: read it, comment and note it, answer."""
    await asyncio.sleep(THINK_SECONDS)  # a model takes its time: a kill can land here
    ticket_id = json.loads(messages[0].parts[-1].content)["ticket_id"]  # the run's input
    done = sum(1 for m in messages if isinstance(m, ModelResponse))
    if done == 0:
        return ModelResponse(parts=[ToolCallPart("get_ticket", {"ticket_id": ticket_id})])
    if done == 1:
        return ModelResponse(parts=[
            ToolCallPart("post_comment", {"ticket_id": ticket_id, "text": "Triage: P2."}),
            ToolCallPart("set_triage_note", {"ticket_id": ticket_id, "note": "P2"})])
    return ModelResponse(parts=[TextPart(f"{ticket_id} triaged.")])


def make_model() -> Any:
    if MODEL == "function":
        return FunctionModel(stand_in)
    if MODEL.startswith("openai:"):
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        # ticketiq-pg retries a failed step within its budget: the SDK must not retry too.
        client = AsyncOpenAI(max_retries=0)
        return OpenAIChatModel(MODEL.split(":", 1)[1],
                               provider=OpenAIProvider(openai_client=client))
    raise ValueError(f"TRIAGE_AGENT_MODEL={MODEL!r}: expected function or openai:MODEL")


# -- the agent, as Pydantic AI's docs write one -----------------------------------------

agent = Agent(
    make_model(),
    system_prompt="You triage support tickets: read the ticket, post one triage comment, "
                  "set its triage note, then answer in one line.",
)


@agent.tool_plain
async def get_ticket(ticket_id: str) -> dict[str, Any]:
    """Read a ticket by its id."""
    return (await _service("GET", f"/tickets/{ticket_id}"))["ticket"]


@agent.tool_plain
async def post_comment(ticket_id: str, text: str) -> dict[str, Any]:
    """Post a triage comment on a ticket."""
    call = current_call()  # ticketiq-pg's call: its step key is the idempotency key
    if call.step_key is None:
        return {"error": "this call has no step key: an unkeyed comment is not posted"}
    answer = await _service("POST", f"/tickets/{ticket_id}/comments",
                            json={"text": text, "run_id": str(call.run.run_id)},
                            headers={"Idempotency-Key": call.step_key})
    return {"comment_id": answer["comment"]["id"]}


@agent.tool_plain
async def set_triage_note(ticket_id: str, note: str) -> dict[str, Any]:
    """Set the ticket's triage note."""
    await _service("POST", f"/tickets/{ticket_id}/triage", json={"note": note})
    await asyncio.sleep(TOOL_SECONDS)  # applied; its answer is still on its way
    return {"noted": True}


async def find_comment(call: CallContext) -> ReadBack:
    """The reader of a comment in doubt: the comment its step key created, if any."""
    found = (await _service("GET", f"/tickets/{call.arguments['ticket_id']}/comments",
                            params={"idempotency_key": call.step_key}))["comments"]
    return ReadBack(found=True, outcome={"comment_id": found[0]["id"]}) if found else ReadBack(
        found=False)


app = agent_app(agent, routes={
    "get_ticket": read(),
    "post_comment": write(takes_key=True, dedupe_window=math.inf, read_back=find_comment),
    # set_triage_note: not classified, so a write without key or reader (the safe default)
})
