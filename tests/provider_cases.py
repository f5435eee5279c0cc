"""The two providers side by side, for tests that run the same case through both adapters.

A :class:`Provider` makes its adapter pointed at the local server, builds its answers
(tool calls, text, errors) and reads its requests back in one shape: the tool calls an
assistant turn carried and the results sent for them, linked by id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.provider_sim import (
    ProviderServer,
    Reply,
    anthropic_call_id,
    anthropic_error,
    anthropic_message,
    openai_call_id,
    openai_completion,
    openai_error,
)
from ticketiq_pg import AnthropicModel, OpenAIChatModel
from ticketiq_pg.adapters.base import ProviderModel


@dataclass(frozen=True)
class Provider:
    name: str
    adapter: type[ProviderModel]
    model: str
    answer: Callable[..., Reply]
    error: Callable[..., Reply]
    call_id: Callable[[], str]
    request_id_header: str

    def url(self, sim: ProviderServer) -> str:
        return sim.openai_url if self.name == "openai" else sim.anthropic_url

    def make(self, sim: ProviderServer, **options: Any) -> ProviderModel:
        options.setdefault("api_key", "test-key")
        options.setdefault("timeout", 5.0)
        return self.adapter(self.model, base_url=self.url(sim), **options)

    # -- reading a request back, the same for both ------------------------------------

    def calls_sent(self, body: dict[str, Any]) -> list[list[tuple[str, str, dict[str, Any]]]]:
        """Per assistant turn: (call id, provider tool name, arguments)."""
        out = []
        for m in body["messages"]:
            if m["role"] != "assistant":
                continue
            if self.name == "openai":
                out.append([(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                            for c in m.get("tool_calls", [])])
            else:
                out.append([(b["id"], b["name"], b["input"]) for b in m["content"]
                            if b["type"] == "tool_use"])
        return out

    def results_sent(self, body: dict[str, Any]) -> list[tuple[str, Any, bool]]:
        """Every tool result sent: (call id, the result parsed, marked as an error)."""
        out = []
        for m in body["messages"]:
            if self.name == "openai" and m["role"] == "tool":
                content = json.loads(m["content"])
                out.append((m["tool_call_id"], content, "error" in content))
            elif self.name == "anthropic" and m["role"] == "user" and isinstance(
                    m["content"], list):
                out.extend((b["tool_use_id"], json.loads(b["content"]), b.get("is_error", False))
                           for b in m["content"] if b["type"] == "tool_result")
        return out

    def tool_defs(self, body: dict[str, Any]) -> dict[str, tuple[str | None, dict[str, Any]]]:
        """name -> (description, schema) of the tools offered."""
        if self.name == "openai":
            return {t["function"]["name"]: (t["function"].get("description"),
                                            t["function"]["parameters"]) for t in body["tools"]}
        return {t["name"]: (t.get("description"), t["input_schema"]) for t in body["tools"]}

    def error_event(self, kind: str) -> dict[str, Any]:
        """The body of an error event in a stream (the provider's error body)."""
        if self.name == "openai":
            return {"error": {"message": f"simulated {kind}", "type": kind, "param": None,
                              "code": None}}
        return {"type": "error", "error": {"type": kind, "message": f"simulated {kind}"}}

    def server_side_error(self) -> str:
        """The error type of a failure on the provider's side, mid-stream."""
        return "server_error" if self.name == "openai" else "overloaded_error"

    def system(self, body: dict[str, Any]) -> str | None:
        if self.name == "openai":
            first = body["messages"][0]
            return first["content"] if first["role"] == "system" else None
        return body.get("system")


OPENAI = Provider("openai", OpenAIChatModel, "gpt-4o-mini", openai_completion, openai_error,
                  openai_call_id, "x-request-id")
ANTHROPIC = Provider("anthropic", AnthropicModel, "claude-sonnet-4-5", anthropic_message,
                     anthropic_error, anthropic_call_id, "request-id")
PROVIDERS = [OPENAI, ANTHROPIC]
IDS = [p.name for p in PROVIDERS]
