"""An app of the adapter tests' own: a provider adapter pointed at the local provider server.

``ticketiq-pg worker --app-dir tests --app adapter_app:app`` with
``ADAPTER_PROVIDER`` (``openai`` or ``anthropic``) and ``ADAPTER_BASE_URL`` (the local
server's URL for that SDK).  Its tools are reads that answer from their arguments, so the
run needs nothing but the database and the provider.  ``ADAPTER_STREAM=1``: every step is
asked as when someone follows the run's events (``on_text`` set), so streamed.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Annotated, Any

from ticketiq_pg import (
    AnthropicModel,
    App,
    CallContext,
    ModelStep,
    OpenAIChatModel,
    StepRequest,
    Tools,
)

PROVIDER = os.environ.get("ADAPTER_PROVIDER", "openai")
BASE_URL = os.environ.get("ADAPTER_BASE_URL", "http://127.0.0.1:9/v1")

tools = Tools()


@tools.function("jira.get_issue")
async def get_issue(call: CallContext, key: Annotated[str, "the issue key, e.g. OPS-7"]) -> dict:
    """Read a Jira issue by its key."""
    return {"key": key, "status": "open", "summary": f"issue {key}"}


@tools.read("tickets.get", description="Read a support ticket by its id.",
            parameters={"type": "object", "properties": {"ticket_id": {"type": "string"}},
                        "required": ["ticket_id"], "additionalProperties": False})
async def get_ticket(call: CallContext) -> dict[str, Any]:
    return {"ticket_id": call.arguments["ticket_id"], "title": "Checkout page down"}


def make_model() -> OpenAIChatModel | AnthropicModel:
    options: dict[str, Any] = {"tools": tools, "system": "You triage tickets.",
                               "api_key": "test-key", "base_url": BASE_URL, "timeout": 10.0}
    if PROVIDER == "anthropic":
        return AnthropicModel("claude-sonnet-4-5", max_tokens=512, **options)
    return OpenAIChatModel("gpt-4o-mini", temperature=0, **options)


class Streamed:
    """The adapter with every step asked with ``on_text`` (the pieces are dropped)."""

    def __init__(self, model: OpenAIChatModel | AnthropicModel) -> None:
        self.model = model

    async def step(self, request: StepRequest) -> ModelStep:
        return await self.model.step(dataclasses.replace(request, on_text=lambda piece: None))


model = make_model()
app = App(model=Streamed(model) if os.environ.get("ADAPTER_STREAM") == "1" else model,
          tools=tools)


@app.shutdown
async def close_model() -> None:
    await model.aclose()
