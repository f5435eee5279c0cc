"""What the providers document a request must be; the local server answers 400 otherwise.

Each check returns the list of problems found (empty: the request is one the provider
would take).  Only what the API references state is checked: the fields and their
types, the roles, the tool definitions (names ``^[a-zA-Z0-9_-]{1,64}$``, unique, an
object schema), and the linkage of results to calls by id: an OpenAI assistant message
with ``tool_calls`` must be followed by one ``tool`` message per ``tool_call_id``; an
Anthropic ``tool_use`` must be answered by a ``tool_result`` with its ``tool_use_id`` in
the very next (user) turn, the results first in that turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["check_chat_request", "check_messages_request", "TOOL_NAME"]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

#: The Chat Completions request fields (the API rejects others: "Unrecognized request
#: argument").
CHAT_FIELDS = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature",
    "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "n", "user",
    "response_format", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs",
    "top_logprobs", "metadata", "store", "service_tier", "reasoning_effort", "stream",
    "stream_options", "modalities", "prediction", "audio", "verbosity", "web_search_options",
    "prompt_cache_key", "safety_identifier",
}
MESSAGES_FIELDS = {
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "temperature",
    "top_p", "top_k", "stop_sequences", "metadata", "stream", "thinking", "service_tier",
    "container", "mcp_servers",
}


def _tool_schema(where: str, schema: Any, problems: list[str]) -> None:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append(f"{where}: must be a JSON Schema object with type 'object'")


def _tool_names(names: list[Any], where: str, problems: list[str]) -> None:
    for name in names:
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            problems.append(f"{where}: tool name {name!r} does not match {TOOL_NAME.pattern}")
    if len(set(map(str, names))) != len(names):
        problems.append(f"{where}: tool names are not unique")


def _stream_fields(body: dict[str, Any], problems: list[str]) -> None:
    if "stream" in body and not isinstance(body["stream"], bool | None):
        problems.append("stream: a boolean")


def check_chat_request(body: Any) -> list[str]:
    """Problems with a ``POST /v1/chat/completions`` body (the OpenAI API reference)."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = [f"unrecognized request argument: {k}" for k in sorted(set(body) - CHAT_FIELDS)]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: required string")
    _stream_fields(body, problems)
    options = body.get("stream_options")
    if options is not None:
        if body.get("stream") is not True:
            problems.append("stream_options: only allowed when 'stream' is enabled")
        if not isinstance(options, dict) or set(options) - {"include_usage",
                                                              "include_obfuscation"}:
            problems.append("stream_options: {'include_usage': bool}")
        elif not isinstance(options.get("include_usage", False), bool):
            problems.append("stream_options.include_usage: a boolean")
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, int | float)
                                        and 0 <= temperature <= 2):
        problems.append("temperature: a number between 0 and 2")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if value is not None and (not isinstance(value, int) or value < 1):
            problems.append(f"{key}: a positive integer")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not tools:
            problems.append("tools: a non-empty array")
            tools = []
        for i, tool in enumerate(tools):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(
                    fn, dict):
                problems.append(f"tools[{i}]: {{'type': 'function', 'function': {{...}}}}")
                continue
            if "description" in fn and not isinstance(fn["description"], str):
                problems.append(f"tools[{i}].function.description: a string")
            if "parameters" in fn:
                _tool_schema(f"tools[{i}].function.parameters", fn["parameters"], problems)
        _tool_names([(t.get("function") or {}).get("name") for t in tools
                     if isinstance(t, dict)], "tools", problems)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return problems + ["messages: a non-empty array"]
    open_calls: list[str] = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        role = m.get("role") if isinstance(m, dict) else None
        if role != "tool" and open_calls:
            problems.append(f"{where}: an assistant message with 'tool_calls' must be followed"
                            f" by tool messages responding to each 'tool_call_id' "
                            f"(missing {open_calls})")
            open_calls = []
        if role in ("system", "developer", "user"):
            if not isinstance(m.get("content"), str | list):
                problems.append(f"{where}.content: required for role {role}")
        elif role == "assistant":
            calls = m.get("tool_calls")
            if m.get("content") is None and not calls:
                problems.append(f"{where}: content or tool_calls is required")
            if "content" in m and not isinstance(m["content"], str | list | type(None)):
                problems.append(f"{where}.content: a string or null")
            for j, call in enumerate(calls or []):
                fn = call.get("function") if isinstance(call, dict) else None
                if (not isinstance(call, dict) or not isinstance(call.get("id"), str)
                        or call.get("type") != "function" or not isinstance(fn, dict)):
                    problems.append(f"{where}.tool_calls[{j}]: {{id, type: function, function}}")
                    continue
                if not isinstance(fn.get("name"), str) or not TOOL_NAME.match(fn["name"]):
                    problems.append(f"{where}.tool_calls[{j}].function.name: invalid")
                try:
                    ok = isinstance(json.loads(fn.get("arguments")), dict)
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    problems.append(f"{where}.tool_calls[{j}].function.arguments: a string "
                                    f"holding a JSON object")
                open_calls.append(call["id"])
        elif role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"{where}: messages with role 'tool' must be a response to a "
                                f"preceding message with 'tool_calls' ({call_id!r})")
            else:
                open_calls.remove(call_id)
            if not isinstance(m.get("content"), str | list):
                problems.append(f"{where}.content: required string")
        else:
            problems.append(f"{where}.role: {role!r} is not a valid role")
    if open_calls:
        problems.append(f"tool_calls {open_calls} have no tool message")
    return problems


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def check_messages_request(body: Any, headers: dict[str, str] | None = None) -> list[str]:
    """Problems with a ``POST /v1/messages`` body (the Anthropic API reference)."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = [f"{k}: Extra inputs are not permitted" for k in sorted(set(body) - MESSAGES_FIELDS)]
    if headers is not None:
        if not headers.get("anthropic-version"):
            problems.append("header anthropic-version: required")
        if not (headers.get("x-api-key") or headers.get("authorization", "").startswith("Bearer ")):
            problems.append("header x-api-key (or authorization: Bearer): required")
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens: Field required (a positive integer)")
    _stream_fields(body, problems)
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        problems.append("system: a string or an array of text blocks")
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, int | float)
                                        and 0 <= temperature <= 1):
        problems.append("temperature: a number between 0 and 1")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            problems.append("tools: an array")
            tools = []
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict):
                problems.append(f"tools.{i}: an object")
                continue
            if "description" in tool and not isinstance(tool["description"], str):
                problems.append(f"tools.{i}.description: a string")
            _tool_schema(f"tools.{i}.input_schema", tool.get("input_schema"), problems)
        _tool_names([t.get("name") for t in tools if isinstance(t, dict)], "tools", problems)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return problems + ["messages: Field required (a non-empty array)"]
    if not isinstance(messages[0], dict) or messages[0].get("role") != "user":
        problems.append("messages.0.role: the first message must use the user role")
    asked: list[str] = []
    for i, m in enumerate(messages):
        where = f"messages.{i}"
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            problems.append(f"{where}.role: {role!r}: 'user' or 'assistant' (system is "
                            f"top-level)")
            continue
        blocks = _blocks(m.get("content"))
        if not blocks:
            problems.append(f"{where}.content: a string or a non-empty array of blocks")
        answered = [b.get("tool_use_id") for b in blocks
                    if isinstance(b, dict) and b.get("type") == "tool_result"]
        if asked:
            if role != "user" or sorted(answered) != sorted(asked):
                problems.append(f"{where}: tool_use ids were found without tool_result blocks "
                                f"immediately after: {sorted(set(asked) - set(answered))}")
            kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
            if kinds[:len(answered)] != ["tool_result"] * len(answered):
                problems.append(f"{where}: tool_result blocks must come first in the content")
        for unknown in sorted(set(answered) - set(asked)):
            problems.append(f"{where}: unexpected tool_use_id found in tool_result blocks: "
                            f"{unknown}")
        asked = []
        for j, b in enumerate(blocks):
            kind = b.get("type") if isinstance(b, dict) else None
            at = f"{where}.content.{j}"
            if kind == "text":
                if not isinstance(b.get("text"), str) or not b["text"].strip():
                    problems.append(f"{at}: text content blocks must be non-empty")
            elif kind == "tool_use":
                if role != "assistant":
                    problems.append(f"{at}: tool_use blocks belong to assistant turns")
                if not isinstance(b.get("id"), str) or not isinstance(b.get("input"), dict):
                    problems.append(f"{at}: tool_use needs an id and an input object")
                if not isinstance(b.get("name"), str) or not TOOL_NAME.match(b["name"]):
                    problems.append(f"{at}.name: invalid")
                asked.append(b.get("id"))
            elif kind == "tool_result":
                if role != "user":
                    problems.append(f"{at}: tool_result blocks belong to user turns")
                if not isinstance(b.get("content", ""), str | list):
                    problems.append(f"{at}.content: a string or an array of blocks")
                if "is_error" in b and not isinstance(b["is_error"], bool):
                    problems.append(f"{at}.is_error: a boolean")
            else:
                problems.append(f"{at}.type: {kind!r} is not a block type this client sends")
    if asked:
        problems.append(f"tool_use ids {asked} have no tool_result")
    return problems
