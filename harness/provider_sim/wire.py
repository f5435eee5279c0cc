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
"""

from __future__ import annotations

import json
import random
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reply", "openai_completion", "openai_error", "anthropic_message",
           "anthropic_error", "openai_call_id", "anthropic_call_id", "request_id",
           "assistant_turns"]

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
    ``drop``: the connection is closed without an answer."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False

    def encoded(self) -> bytes:
        """The body as sent."""
        return b"" if self.body is None else json.dumps(self.body).encode()


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
