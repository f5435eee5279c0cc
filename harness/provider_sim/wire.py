"""The providers' answers, as their API references show them.

OpenAI Chat Completions (``POST /v1/chat/completions``): a ``chat.completion`` object,
``choices[0].message`` with ``content`` and ``tool_calls`` (``{"id": "call_...", "type":
"function", "function": {"name", "arguments": "<JSON text>"}}``), ``finish_reason``
``tool_calls`` or ``stop``, and ``usage`` (``prompt_tokens``, ``completion_tokens``,
``total_tokens``, ``prompt_tokens_details.cached_tokens``,
``completion_tokens_details.reasoning_tokens``); the request id in ``x-request-id``; an
error as ``{"error": {"message", "type", "param", "code"}}``.

Anthropic Messages (``POST /v1/messages``): a ``message`` object, ``content`` blocks
(``text``; ``tool_use`` with ``id`` ``toolu_...``, ``name``, ``input``), ``stop_reason``
``tool_use`` or ``end_turn``, ``usage`` (``input_tokens``, ``output_tokens``,
``cache_creation_input_tokens``, ``cache_read_input_tokens``); the request id in
``request-id``; an error as ``{"type": "error", "error": {"type", "message"}}``.

Asked with ``"stream": true``, each answers the same as Server-Sent Events
(:func:`openai_chunks`, :func:`anthropic_events`): OpenAI ``chat.completion.chunk``
objects (the role, ``content`` deltas, ``tool_calls`` deltas by ``index`` with the id
and name first and the arguments in pieces, a last chunk with ``finish_reason``, a chunk
of ``usage`` alone when ``stream_options.include_usage``) and ``data: [DONE]``;
Anthropic ``message_start``, per block ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``input_json_delta``) / ``content_block_stop``,
``message_delta`` (``stop_reason``, ``usage``) and ``message_stop``.  The text goes in
pieces of a word (:func:`text_pieces`), a tool call's arguments in pieces of a few
characters (:func:`argument_pieces`), so a client sees more than one delta.
"""

from __future__ import annotations

import json
import random
import re
import string
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reply", "openai_completion", "openai_error", "anthropic_message",
           "anthropic_error", "openai_call_id", "anthropic_call_id", "request_id",
           "assistant_turns", "openai_chunks", "anthropic_events", "text_pieces",
           "argument_pieces", "Event"]

_ALNUM = string.ascii_letters + string.digits
_rng = random.Random()


def _token(n: int) -> str:
    return "".join(_rng.choice(_ALNUM) for _ in range(n))


def openai_call_id() -> str:
    """An id shaped like OpenAI's tool-call ids (``call_`` and 24 characters)."""
    return "call_" + _token(24)


def anthropic_call_id() -> str:
    """An id shaped like Anthropic's tool-use ids (``toolu_01`` and 22 characters)."""
    return "toolu_01" + _token(22)


def request_id() -> str:
    """A request id shaped like both providers' (``req_...``)."""
    return "req_" + _token(24)


@dataclass
class Reply:
    """One scripted answer: a status, a JSON body, headers; ``delay`` seconds before it;
    ``drop``: the connection is closed without an answer.

    Asked to stream, a 200 answer goes as the provider's events; ``cut_after``: the
    connection is closed after that many events, without the stream's end (a stream cut
    mid-way); ``error_event``: at the cut, first an error event with this body (the
    provider's own error body, as a stream that fails once begun carries it);
    ``cut_cleanly``: at the cut the body ends in order instead (a stream that stops
    before its last events).  ``hold_after``: the stream stops after that many events
    until ``release`` is set (at most :data:`HOLD_LIMIT` seconds), so that a test sees
    the client act on the first events while the rest are not yet sent.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    cut_after: int | None = None
    error_event: Any = None
    cut_cleanly: bool = False
    hold_after: int | None = None
    release: threading.Event = field(default_factory=threading.Event, repr=False,
                                     compare=False)

    def encoded(self) -> bytes:
        """The body as sent."""
        return b"" if self.body is None else json.dumps(self.body).encode()


#: The longest a held stream waits for its ``release``.
HOLD_LIMIT = 30.0

Call = tuple[str, str, dict[str, Any]]  # (id, provider tool name, arguments)


def openai_completion(text: str | None = None, calls: Sequence[Call] = (), *,
                      model: str = "gpt-4o-mini-2024-07-18", prompt_tokens: int = 82,
                      completion_tokens: int = 17, cached_tokens: int = 0,
                      reasoning_tokens: int = 0, finish_reason: str | None = None,
                      headers: dict[str, str] | None = None, delay: float = 0.0) -> Reply:
    """A ``chat.completion`` answer: ``text``, and ``calls`` as its ``tool_calls``."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None,
                               "annotations": []}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ]
    body = {
        "id": "chatcmpl-" + _token(29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens,
                                          "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_" + _token(10).lower(),
    }
    return Reply(200, body, {"x-request-id": request_id(), "openai-processing-ms": "412",
                             **(headers or {})}, delay)


#: OpenAI's error ``type``/``code`` per status, as its error-codes guide lists them.
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"), 429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None), 503: ("server_error", None),
}


def openai_error(status: int, message: str = "", *, retry_after: float | None = None,
                 headers: dict[str, str] | None = None, delay: float = 0.0) -> Reply:
    """An OpenAI error answer with ``status`` (and a ``retry-after`` header if given)."""
    kind, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    body = {"error": {"message": message or f"simulated error {status}", "type": kind,
                      "param": None, "code": code}}
    extra = {"x-request-id": request_id(), **(headers or {})}
    if retry_after is not None:
        extra["retry-after"] = f"{retry_after:g}"
    return Reply(status, body, extra, delay)


def anthropic_message(text: str | None = None, calls: Sequence[Call] = (), *,
                      model: str = "claude-sonnet-4-5-20250929", input_tokens: int = 472,
                      output_tokens: int = 89, cache_read: int = 0, cache_creation: int = 0,
                      stop_reason: str | None = None, headers: dict[str, str] | None = None,
                      delay: float = 0.0) -> Reply:
    """A ``message`` answer: a ``text`` block, and one ``tool_use`` block per call."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.extend({"type": "tool_use", "id": cid, "name": name, "input": args}
                   for cid, name, args in calls)
    body = {
        "id": "msg_01" + _token(22),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": cache_creation,
                  "cache_read_input_tokens": cache_read, "service_tier": "standard"},
    }
    return Reply(200, body, {"request-id": request_id(), **(headers or {})}, delay)


#: Anthropic's error ``type`` per status, as its errors page lists them.
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}


def anthropic_error(status: int, message: str = "", *, retry_after: float | None = None,
                    headers: dict[str, str] | None = None, delay: float = 0.0) -> Reply:
    """An Anthropic error answer with ``status`` (and a ``retry-after`` header if given)."""
    rid = request_id()
    body = {"type": "error",
            "error": {"type": _ANTHROPIC_ERRORS.get(status, "api_error"),
                      "message": message or f"simulated error {status}"},
            "request_id": rid}
    extra = {"request-id": rid, **(headers or {})}
    if retry_after is not None:
        extra["retry-after"] = f"{retry_after:g}"
    return Reply(status, body, extra, delay)


def assistant_turns(body: Any) -> int:
    """How many assistant turns a request's messages hold: the steps answered before."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


# -- streaming: the same answers as Server-Sent Events ----------------------------------

#: One event: its name (None: OpenAI's, which have none) and its ``data`` (a JSON value,
#: or a string sent as it is: ``[DONE]``).
Event = tuple[str | None, Any]

_PIECE = re.compile(r"\s*\S+\s*|\s+")


def text_pieces(text: str) -> list[str]:
    """``text`` in pieces of a word each (with its spaces): joined, the text again."""
    return _PIECE.findall(text)


def argument_pieces(arguments: str, size: int = 6) -> list[str]:
    """A tool call's arguments (JSON text) in pieces of ``size`` characters."""
    return [arguments[i:i + size] for i in range(0, len(arguments), size)] or [""]


def openai_chunks(completion: dict[str, Any], include_usage: bool = False) -> list[Event]:
    """A ``chat.completion`` as the ``chat.completion.chunk`` events that stream it."""
    choice = completion["choices"][0]
    message = choice["message"]
    usage = completion.get("usage")

    def chunk(delta: dict[str, Any], finish: str | None = None,
              choices: bool = True) -> Event:
        data: dict[str, Any] = {
            "id": completion["id"], "object": "chat.completion.chunk",
            "created": completion["created"], "model": completion["model"],
            "service_tier": completion.get("service_tier"),
            "system_fingerprint": completion.get("system_fingerprint"),
            "choices": [{"index": 0, "delta": delta, "logprobs": None,
                         "finish_reason": finish}] if choices else [],
        }
        if include_usage:
            data["usage"] = None
        return None, data

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for key in ("content", "refusal"):
        events.extend(chunk({key: piece}) for piece in text_pieces(message.get(key) or ""))
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        events.append(chunk({"tool_calls": [{
            "index": index, "id": call["id"], "type": "function",
            "function": {"name": function["name"], "arguments": ""}}]}))
        events.extend(chunk({"tool_calls": [{"index": index,
                                             "function": {"arguments": piece}}]})
                      for piece in argument_pieces(function["arguments"]))
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        last = chunk({}, choices=False)
        last[1]["usage"] = usage
        events.append(last)
    events.append((None, "[DONE]"))
    return events


def anthropic_events(message: dict[str, Any]) -> list[Event]:
    """A ``message`` as the events that stream it."""
    usage = dict(message["usage"])
    started = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {**usage, "output_tokens": 1}}
    events: list[Event] = [("message_start", {"type": "message_start", "message": started})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece}
                      for piece in text_pieces(block["text"])]
        else:
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in argument_pieces(json.dumps(block["input"]))]
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": opened}))
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events.extend(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": delta}) for delta in deltas)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"],
                  "stop_sequence": message.get("stop_sequence")},
        "usage": {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                         "cache_read_input_tokens", "output_tokens")
                  if k in usage}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def sse(event: Event) -> bytes:
    """One event as its bytes on the wire."""
    name, data = event
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()
