"""OpenAI Chat Completions with tools, through the official ``openai`` SDK.

The run's conversation goes as Chat Completions messages: the system prompt as a
``system`` message (``system_role="developer"`` for the models that want that), the
run's input and any later user message as ``user`` messages, each step as an
``assistant`` message with its ``tool_calls`` (``{"id", "type": "function", "function":
{"name", "arguments"}}``, the arguments a JSON string) and each call's result as a
``tool`` message linked by ``tool_call_id``.  The tools go as ``{"type": "function",
"function": {"name", "description", "parameters"}}`` under their provider names
(``jira.get_issue`` -> ``jira_get_issue``).  The answer's ``tool_calls`` are the
step's calls, their ids (``call_...``) its call ids; its usage and ``x-request-id``
ride on the :class:`~ticketiq_pg.agent.ModelStep`.

The SDK's errors (``RateLimitError``, ``InternalServerError``, ``APITimeoutError``,
``APIConnectionError``...) go to the runner as they are; it judges them
(:func:`ticketiq_pg.retries.is_transient`) and retries within its budget.  A tool call
whose arguments are not a JSON object is given with empty arguments and the reason
(``ToolCall.malformed``): the runner skips it and tells the model why, as it does of
arguments its tool's schema refuses (:mod:`ticketiq_pg.runtime.malformed`).

The adapters stream when the run's events are listened to: a step asked with
``StepRequest.on_text`` set is sent with ``stream: true`` (and ``stream_options:
{"include_usage": true}``), each ``content`` delta (or ``refusal``, the text of a
refused step) is handed to ``on_text`` as it arrives, and the ``chat.completion.chunk``
objects are put together into the same :class:`~ticketiq_pg.agent.ModelStep` the whole
answer would have made (text, tool calls from their ``index``-ed deltas, usage from the
last chunk, ``x-request-id``).  Without a listener the request is the plain one.  A
stream that fails once begun is transient: a cut connection is the SDK's
``APIConnectionError``; an error event the SDK raises with the stream's 200 status
becomes a :class:`~ticketiq_pg.errors.TransientError` unless it tells of a bad request
(:func:`~ticketiq_pg.adapters.base.failed_mid_stream`); a stream that ends before its
``finish_reason`` is a ``TransientError`` too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from types import SimpleNamespace
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

__all__ = ["OpenAIChatModel", "chat_messages", "chat_request"]

#: The error types of an error event in a stream that say the request was refused (not
#: worth asking again); any other error event is a failure on the provider's side.
OPENAI_STREAM_REFUSALS = frozenset({"invalid_request_error"})


def chat_messages(settings: ModelSettings, turns: list[Turn], names: ToolNames,
                  system_role: str = "system") -> list[dict[str, Any]]:
    """The Chat Completions ``messages`` of a run's turns."""
    messages: list[dict[str, Any]] = []
    if settings.system:
        messages.append({"role": system_role, "content": settings.system})
    for turn in turns:
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.text})
        elif turn.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if turn.calls:
                message["tool_calls"] = [
                    {"id": call_id, "type": "function",
                     "function": {"name": names.provider(tool),
                                  "arguments": json.dumps(arguments, ensure_ascii=False)}}
                    for call_id, tool, arguments in turn.calls
                ]
            messages.append(message)
        else:
            messages.extend({"role": "tool", "tool_call_id": call_id, "content": text}
                            for call_id, text, _ in turn.results)
    return messages


def chat_request(settings: ModelSettings, messages: list[dict[str, Any]],
                 offered: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """The body of one ``POST /chat/completions``: model, messages, tools, parameters."""
    body: dict[str, Any] = {"model": settings.model, "messages": messages}
    if offered:
        body["tools"] = tool_specs(offered, "parameters",
                                   lambda spec: {"type": "function", "function": spec})
    body.update(sampling_fields(settings, {"temperature": "temperature",
                                           "max_tokens": "max_completion_tokens",
                                           "top_p": "top_p", "stop": "stop"}))
    body.update(settings.params)
    return body


def chat_usage(usage: Any) -> dict[str, int] | None:
    """The step's token counts from a completion's ``usage``, where reported."""
    if usage is None:
        return None
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    return usage_of([
        ("input_tokens", getattr(usage, "prompt_tokens", None)),
        ("output_tokens", getattr(usage, "completion_tokens", None)),
        ("total_tokens", getattr(usage, "total_tokens", None)),
        ("cached_tokens", getattr(prompt, "cached_tokens", None)),
        ("reasoning_tokens", getattr(completion, "reasoning_tokens", None)),
    ])


def chat_step(completion: Any, names: ToolNames, request_id: str | None) -> ModelStep:
    """A :class:`ModelStep` from a parsed ``ChatCompletion``."""
    if not completion.choices:
        raise TransientError("the completion has no choices")
    message = completion.choices[0].message
    text = message.content or getattr(message, "refusal", None) or ""
    return ModelStep(text=text, calls=chat_calls(message.tool_calls or (), names),
                     usage=chat_usage(completion.usage),
                     request_id=request_id or getattr(completion, "_request_id", None))


def chat_calls(tool_calls: Iterable[Any], names: ToolNames) -> tuple[ToolCall, ...]:
    """The step's calls from a message's ``tool_calls`` (``id``, ``type``, ``function``)."""
    calls = []
    for call in tool_calls:
        function = getattr(call, "function", None)
        if function is None:
            raise TransientError(f"tool call {call.id} is a {call.type!r} call, not a function")
        raw = function.arguments or "{}"
        try:
            arguments = json.loads(raw)
        except ValueError as exc:
            calls.append(malformed_call(call.id, names.library(function.name),
                                        f"they are not JSON ({exc})", raw))
            continue
        if not isinstance(arguments, dict):
            calls.append(malformed_call(call.id, names.library(function.name),
                                        f"they are a JSON {json_type(arguments)}, not an "
                                        "object", raw))
            continue
        calls.append(ToolCall(call.id, names.library(function.name), arguments))
    return tuple(calls)


class ChunkReader:
    """The ``chat.completion.chunk`` objects of one streamed answer, put together.

    ``add`` takes each chunk in order and hands the text it carries to ``on_text``;
    ``step`` is the answer as :func:`chat_step` reads a whole completion.  Choice 0 only,
    as :func:`chat_step` reads.
    """

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None

    def add(self, chunk: Any) -> None:
        """One chunk: its deltas into the answer so far, its text to ``on_text``."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            for piece, into in ((delta.content, self.content),
                                (getattr(delta, "refusal", None), self.refusal)):
                if piece:
                    into.append(piece)
                    self.on_text(piece)
            for part in delta.tool_calls or ():
                call = self.calls.setdefault(part.index, {"id": None, "type": "function",
                                                          "name": "", "arguments": ""})
                if part.id:
                    call["id"] = part.id
                if part.type:
                    call["type"] = part.type
                function = part.function
                if function is not None:
                    call["name"] += function.name or ""
                    call["arguments"] += function.arguments or ""
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def step(self, names: ToolNames, request_id: str | None) -> ModelStep:
        """The answer, once the stream has ended."""
        if self.finish_reason is None:
            raise TransientError("the stream ended before its finish_reason")
        calls = [SimpleNamespace(id=c["id"], type=c["type"], function=SimpleNamespace(
            name=c["name"], arguments=c["arguments"])) for _, c in sorted(self.calls.items())]
        return ModelStep(text="".join(self.content) or "".join(self.refusal),
                         calls=chat_calls(calls, names), usage=chat_usage(self.usage),
                         request_id=request_id)


class OpenAIChatModel(ProviderModel):
    """A model behind OpenAI's Chat Completions (``pip install 'ticketiq-pg[openai]'``).

    ``OpenAIChatModel("gpt-4o-mini", tools=tools, system="You triage tickets.")``; the
    key comes from ``OPENAI_API_KEY`` unless ``api_key`` is given.  The other keywords
    are :class:`~ticketiq_pg.adapters.base.ProviderModel`'s; ``system_role`` is the role
    the system prompt is sent with (``system``, or ``developer``).
    """

    sdk = "openai"
    client_class = "AsyncOpenAI"
    system_roles = ("system", "developer")

    def request_body(self, request: StepRequest) -> tuple[dict[str, Any], ToolNames]:
        """The request step ``request.step`` sends, and the name map it was made with."""
        settings = self.settings_for(request)
        names = self.tool_names()
        messages = chat_messages(settings, self.turns(request), names, self.system_role)
        return chat_request(settings, messages, self.offered(names)), names

    async def step(self, request: StepRequest) -> ModelStep:
        """One Chat Completions request; its answer as a :class:`ModelStep`."""
        body, names = self.request_body(request)
        completions = self.client.chat.completions
        if request.on_text is not None:
            return await self._streamed(body, names, request.on_text)
        raw = await completions.with_raw_response.create(**sdk_call(completions.create, body))
        return chat_step(await parse(raw), names, raw.headers.get("x-request-id"))

    async def _streamed(self, body: dict[str, Any], names: ToolNames,
                        on_text: Callable[[str], None]) -> ModelStep:
        """The request streamed: its text to ``on_text`` as it comes."""
        options = body.get("stream_options")
        body = {**body, "stream": True,
                "stream_options": {**(options if isinstance(options, dict) else {}),
                                   "include_usage": True}}
        completions = self.client.chat.completions
        reader = ChunkReader(on_text)
        stream = await completions.create(**sdk_call(completions.create, body))
        async with stream:
            try:
                async for chunk in stream:
                    reader.add(chunk)
            except Exception as exc:
                judged = failed_mid_stream(exc, OPENAI_STREAM_REFUSALS)
                if judged is None:
                    raise
                raise judged from exc
        return reader.step(names, stream.response.headers.get("x-request-id"))
