"""Anthropic Messages with tools, through the official ``anthropic`` SDK.

The run's conversation goes as Messages turns: the system prompt as the top-level
``system``, the run's input as the first ``user`` turn, each step as an ``assistant``
turn of a ``text`` block (when the step had text) and one ``tool_use`` block per call
(``{"id", "name", "input"}``), and the results of a step's calls as one ``user`` turn of
``tool_result`` blocks (``tool_use_id``, the result as text, ``is_error`` for a result
with an ``error`` key), first in that turn as the API requires; consecutive user turns
are joined into one.  The tools go as ``{"name", "description", "input_schema"}`` under
their provider names.  ``max_tokens`` is required by the API: 1024 unless set.  The
answer's ``tool_use`` blocks are the step's calls, their ids (``toolu_...``) its call
ids; its usage and ``request-id`` ride on the :class:`~ticketiq_pg.agent.ModelStep`.

The SDK's errors (``RateLimitError``, ``InternalServerError``, ``OverloadedError``,
``APITimeoutError``, ``APIConnectionError``...) go to the runner as they are.

The adapters stream when the run's events are listened to: a step asked with
``StepRequest.on_text`` set goes through the SDK's ``messages.stream``, each text delta
(its ``text`` events) handed to ``on_text`` as it arrives, and the SDK's final message
(``get_final_message()``: text blocks, ``tool_use`` blocks put together from their
``input_json_delta`` pieces, usage from ``message_start`` and ``message_delta``) read
into the same :class:`~ticketiq_pg.agent.ModelStep` the whole answer would have made.
Without a listener the request is the plain one.  A stream that fails once begun is
transient: a cut connection is the SDK's ``APIConnectionError``; an ``error`` event
(``overloaded_error`` mid-stream), which the SDK raises with the stream's 200 status,
becomes a :class:`~ticketiq_pg.errors.TransientError` unless it tells of a bad request;
a stream that ends before its ``stop_reason`` is a ``TransientError`` too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ticketiq_pg.adapters.base import (
    ModelSettings,
    ProviderModel,
    Turn,
    failed_mid_stream,
    json_type,
    malformed_call,
    parse,
    sampling_fields,
    sdk_call,
    tool_specs,
    usage_of,
)
from ticketiq_pg.adapters.names import ToolNames
from ticketiq_pg.agent import ModelStep, StepRequest, ToolCall
from ticketiq_pg.errors import TransientError

__all__ = ["AnthropicModel", "messages_request", "messages_turns"]

#: The API requires ``max_tokens``: this when the settings give none.
DEFAULT_MAX_TOKENS = 1024

#: The error types of an ``error`` event in a stream that say the request was refused
#: (not worth asking again); any other (``overloaded_error``, ``api_error``...) is not.
ANTHROPIC_STREAM_REFUSALS = frozenset({
    "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
    "request_too_large", "billing_error"})


def messages_turns(turns: list[Turn], names: ToolNames) -> list[dict[str, Any]]:
    """The Messages ``messages`` of a run's turns."""
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for turn in turns:
        if turn.role == "user":
            if turn.text:
                add("user", [{"type": "text", "text": turn.text}])
        elif turn.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if turn.text.strip():
                blocks.append({"type": "text", "text": turn.text})
            blocks.extend({"type": "tool_use", "id": call_id, "name": names.provider(tool),
                           "input": arguments} for call_id, tool, arguments in turn.calls)
            if blocks:
                add("assistant", blocks)
        else:
            results = []
            for call_id, text, error in turn.results:
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id,
                                         "content": text}
                if error:
                    block["is_error"] = True
                results.append(block)
            add("user", results)
    return out


def messages_request(settings: ModelSettings, messages: list[dict[str, Any]],
                     offered: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """The body of one ``POST /v1/messages``: model, max_tokens, system, messages, tools."""
    body: dict[str, Any] = {
        "model": settings.model,
        "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if settings.system:
        body["system"] = settings.system
    if offered:
        body["tools"] = tool_specs(offered, "input_schema")
    body.update(sampling_fields(settings, {"temperature": "temperature", "top_p": "top_p",
                                           "stop": "stop_sequences"}))
    body.update(settings.params)
    return body


def messages_usage(usage: Any) -> dict[str, int] | None:
    """The step's token counts from a message's ``usage``, where reported."""
    if usage is None:
        return None
    return usage_of([
        ("input_tokens", getattr(usage, "input_tokens", None)),
        ("output_tokens", getattr(usage, "output_tokens", None)),
        ("cached_tokens", getattr(usage, "cache_read_input_tokens", None)),
        ("cache_creation_tokens", getattr(usage, "cache_creation_input_tokens", None)),
    ])


def messages_step(message: Any, names: ToolNames, request_id: str | None) -> ModelStep:
    """A :class:`ModelStep` from a parsed ``Message``."""
    texts, calls = [], []
    for block in message.content or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            if not isinstance(block.input, dict):
                calls.append(malformed_call(
                    block.id, names.library(block.name),
                    f"they are a JSON {json_type(block.input)}, not an object",
                    json.dumps(block.input, default=str)))
                continue
            calls.append(ToolCall(block.id, names.library(block.name), dict(block.input)))
    return ModelStep(text="".join(texts), calls=tuple(calls),
                     usage=messages_usage(message.usage),
                     request_id=request_id or getattr(message, "_request_id", None))


class AnthropicModel(ProviderModel):
    """A model behind Anthropic's Messages API (``pip install 'ticketiq-pg[anthropic]'``).

    ``AnthropicModel("claude-sonnet-4-5", tools=tools, system="You triage tickets.")``;
    the key comes from ``ANTHROPIC_API_KEY`` unless ``api_key`` is given.  The keywords
    are :class:`~ticketiq_pg.adapters.base.ProviderModel`'s.
    """

    sdk = "anthropic"
    client_class = "AsyncAnthropic"

    def request_body(self, request: StepRequest) -> tuple[dict[str, Any], ToolNames]:
        """The request step ``request.step`` sends, and the name map it was made with."""
        settings = self.settings_for(request)
        names = self.tool_names()
        messages = messages_turns(self.turns(request), names)
        return messages_request(settings, messages, self.offered(names)), names

    async def step(self, request: StepRequest) -> ModelStep:
        """One Messages request; its answer as a :class:`ModelStep`."""
        body, names = self.request_body(request)
        if request.on_text is not None:
            return await self._streamed(body, names, request.on_text)
        raw = await self.client.messages.with_raw_response.create(
            **sdk_call(self.client.messages.create, body))
        return messages_step(await parse(raw), names, raw.headers.get("request-id"))

    async def _streamed(self, body: dict[str, Any], names: ToolNames,
                        on_text: Callable[[str], None]) -> ModelStep:
        """The request streamed: its text to ``on_text`` as it comes."""
        messages = self.client.messages
        async with messages.stream(**sdk_call(messages.stream, body)) as stream:
            try:
                async for event in stream:
                    if event.type == "text" and event.text:
                        on_text(event.text)
                message = await stream.get_final_message()
            except Exception as exc:
                judged = failed_mid_stream(exc, ANTHROPIC_STREAM_REFUSALS)
                if judged is None:
                    raise
                raise judged from exc
            request_id = stream.response.headers.get("request-id")
        if message.stop_reason is None:
            raise TransientError("the stream ended before its stop_reason")
        return messages_step(message, names, request_id)
