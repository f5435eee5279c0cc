"""What the provider adapters share: settings, the conversation read as turns, tool specs.

A run's conversation is the library's own (``ticketiq_pg.agent``: ``user_message``,
``assistant_message``, ``tool_message``).  :func:`turns` reads it as the turns a provider
takes: a user's text, an assistant's text with its tool calls, and the results of those
calls in the order they were asked for.  Every call gets a result (a call whose result
was never recorded is told as an error), since both providers refuse an assistant tool
call left unanswered; a result for no call of the assistant's turn before it is dropped.

Settings (:class:`ModelSettings`): the model, a system prompt and the sampling
parameters, set per app on the adapter and per run in the run's input under
``"model_settings"`` (``{"model_settings": {"model": "gpt-4o", "temperature": 0}}``):
a run's settings are those of its input, the same at every step and on every resume.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import importlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.adapters.names import ToolNames
from ticketiq_pg.adapters.schema import object_schema
from ticketiq_pg.agent import ModelStep, StepRequest, Tool, ToolCall, Tools
from ticketiq_pg.errors import TransientError
from ticketiq_pg.retries import describe, status_of

__all__ = ["ModelSettings", "ProviderModel", "RUN_SETTINGS_KEY", "Turn", "turns",
           "default_prompt", "result_text", "is_error_result"]

#: Where a run's input carries its own settings.
RUN_SETTINGS_KEY = "model_settings"
#: What the provider is told of a call whose result was never recorded.
NO_RESULT = {"error": "no result was recorded for this call"}


@dataclass(frozen=True)
class ModelSettings:
    """The model asked and how: its name, a system prompt, sampling parameters.

    ``max_tokens`` bounds the answer (OpenAI: ``max_completion_tokens``); ``stop`` is
    OpenAI's ``stop`` and Anthropic's ``stop_sequences``; ``params`` go to the provider
    as they are (``{"seed": 7}``, ``{"parallel_tool_calls": False}``, ``{"top_k": 5}``).
    """

    model: str
    system: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("model settings need a model name")
        if self.system is not None and not isinstance(self.system, str):
            raise ValueError("the system prompt must be a string")
        for name in ("temperature", "top_p"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, int | float)):
                raise ValueError(f"{name} must be a number")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool)
                                            or not isinstance(self.max_tokens, int)
                                            or self.max_tokens < 1):
            raise ValueError("max_tokens must be a positive integer")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        elif self.stop is not None:
            object.__setattr__(self, "stop", tuple(str(s) for s in self.stop))
        if not isinstance(self.params, Mapping):
            raise ValueError("params must be a mapping")

    def override(self, changes: Mapping[str, Any]) -> ModelSettings:
        """These settings with ``changes`` (field names only; ``params`` are merged)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown model settings {unknown}: expected some of "
                             f"{sorted(known)}")
        values = dict(changes)
        if "params" in values:
            if not isinstance(values["params"], Mapping):
                raise ValueError("params must be a mapping")
            values["params"] = {**self.params, **values["params"]}
        return dataclasses.replace(self, **values)


@dataclass(frozen=True)
class Turn:
    """One provider turn: ``user`` (text), ``assistant`` (text, calls) or ``results``."""

    role: str
    text: str = ""
    #: ``assistant``: (call id, library tool name, arguments) per call.
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    #: ``results``: (call id, result text, is an error) per call, in the calls' order.
    results: tuple[tuple[str, str, bool], ...] = ()


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type (array, string, number...)."""
    for kind, name in ((bool, "boolean"), (list, "array"), (str, "string"),
                       (int | float, "number"), (Mapping, "object")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def malformed_call(call_id: str, tool: str, why: str, raw: str) -> ToolCall:
    """A call whose arguments could not be read: empty arguments, and why (with what came)."""
    shown = raw if len(raw) <= 200 else raw[:200] + "..."
    return ToolCall(call_id, tool, {}, malformed=f"{why}; sent: {shown!r}")


def result_text(content: Any) -> str:
    """A tool's result as the text a provider takes (JSON unless it is a string)."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def is_error_result(content: Any) -> bool:
    """Whether a result tells of a failure: an object with an ``error`` key."""
    return isinstance(content, Mapping) and "error" in content


def default_prompt(content: Any, settings_key: str | None = RUN_SETTINGS_KEY) -> str:
    """A user message's content as text: a string as it is, anything else as JSON (the
    run's settings left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping) and settings_key and settings_key in content:
        content = {k: v for k, v in content.items() if k != settings_key}
    return json.dumps(content, ensure_ascii=False, default=str)


def turns(conversation: Iterable[Mapping[str, Any]],
          prompt: Callable[[Any], str] = default_prompt) -> list[Turn]:
    """The library's conversation as provider turns (see the module's docstring)."""
    out: list[Turn] = []
    pending: list[tuple[str, str, dict[str, Any]]] = []
    got: dict[str, Any] = {}

    def settle() -> None:
        if pending:
            out.append(Turn("results", results=tuple(
                (cid, result_text(got.get(cid, NO_RESULT)),
                 is_error_result(got.get(cid, NO_RESULT)))
                for cid, _, _ in pending)))
            pending.clear()
            got.clear()

    for message in conversation:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("call_id")
            if any(call_id == cid for cid, _, _ in pending) and call_id not in got:
                got[call_id] = message.get("content")
            continue
        settle()
        if role == "user":
            out.append(Turn("user", text=prompt(message.get("content"))))
        elif role == "assistant":
            calls = tuple(
                (str(c["call_id"]), str(c["tool"]), dict(c.get("arguments") or {}))
                for c in message.get("tool_calls") or ())
            text = message.get("content") or ""
            if text or calls:
                out.append(Turn("assistant", text=str(text), calls=calls))
            pending.extend(calls)
    settle()
    return out


class ProviderModel(abc.ABC):
    """A :class:`~ticketiq_pg.agent.Model` behind a provider's official SDK.

    ``tools`` are the tools the model is offered (their descriptions and schemas, under
    their provider names); the app's other settings are :class:`ModelSettings`'s fields.
    ``api_key`` defaults to the SDK's environment variable; ``base_url`` points the SDK
    elsewhere (a proxy, a local test server); ``timeout`` bounds one request; the SDK
    never retries by itself (``max_retries=0``): the runner's retry budget, counted in
    the database, is the only one.  ``client`` is an SDK client of the app's own (its
    retries are turned off too).  ``prompt`` turns a user message's content (the run's
    input first) into text; ``run_settings_key`` is where a run's input carries its own
    settings (None: nowhere); ``system_role`` the role the system prompt is sent with,
    where the provider has a choice (:attr:`system_roles`).
    """

    #: The SDK module, imported when the model is built, and its async client class.
    sdk: str = ""
    client_class: str = ""
    #: The roles the provider takes the system prompt with (``system_role``).
    system_roles: tuple[str, ...] = ("system",)

    def __init__(
        self,
        model: str,
        *,
        tools: Tools | Iterable[Tool] | None = None,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        top_p: float | None = None,
        stop: Iterable[str] | str | None = None,
        params: Mapping[str, Any] | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 60.0,
        client: Any = None,
        prompt: Callable[[Any], str] | None = None,
        run_settings_key: str | None = RUN_SETTINGS_KEY,
        system_role: str = "system",
    ) -> None:
        if system_role not in self.system_roles:
            raise ValueError(f"system_role must be one of {', '.join(self.system_roles)}")
        self.system_role = system_role
        self.settings = ModelSettings(
            model=model, system=system, temperature=temperature, max_tokens=max_tokens,
            top_p=top_p, stop=stop if stop is None or isinstance(stop, str) else tuple(stop),
            params=dict(params or {}),
        )
        self.tools = tools if isinstance(tools, Tools) else Tools(tools or ())
        self.api_key = api_key
        self.base_url = base_url
        self.timeout = timeout
        self.run_settings_key = run_settings_key
        self._prompt = prompt
        self._client = client.with_options(max_retries=0) if client is not None else None
        if self._client is None and self.sdk:
            # Import the SDK now, where the app is built: imported at the first step it
            # would block the event loop for seconds, and the leases with it.
            with contextlib.suppress(ImportError):  # said at the first step (sdk_missing)
                importlib.import_module(self.sdk)

    # -- what every step is asked with -------------------------------------------------

    def settings_for(self, request: StepRequest) -> ModelSettings:
        """The app's settings, overridden by the run's input (``input["model_settings"]``)."""
        key = self.run_settings_key
        given = request.input.get(key) if key and isinstance(request.input, Mapping) else None
        if given is None:
            return self.settings
        if not isinstance(given, Mapping):
            raise ValueError(f"the run's {key!r} must be an object")
        return self.settings.override(given)

    def prompt(self, content: Any) -> str:
        """A user message's content as the text the provider is sent."""
        if self._prompt is not None:
            return self._prompt(content)
        return default_prompt(content, self.run_settings_key)

    def tool_names(self) -> ToolNames:
        """The name map of the tools offered now."""
        return ToolNames(self.tools.names())

    def offered(self, names: ToolNames) -> list[tuple[str, str, dict[str, Any]]]:
        """``(provider name, description, parameters)`` of every tool offered."""
        out = []
        for name in self.tools.names():
            tool = self.tools.get(name)
            assert tool is not None
            out.append((names.provider(name), tool.description, object_schema(tool.parameters)))
        return out

    def turns(self, request: StepRequest) -> list[Turn]:
        """The run's conversation as provider turns."""
        return turns(request.conversation, self.prompt)

    # -- the SDK client ---------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The SDK's async client, made on first use (inside the worker's event loop)."""
        if self._client is None:
            self._client = self._new_client()
        return self._client

    def _new_client(self) -> Any:
        """The provider SDK's async client, with the SDK's own retries off."""
        try:
            module = importlib.import_module(self.sdk)
        except ImportError as exc:
            raise sdk_missing(self.sdk, exc) from exc
        return getattr(module, self.client_class)(
            api_key=self.api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0)

    async def aclose(self) -> None:
        """Close the SDK client (an app's shut-down hook); a later step makes a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    @abc.abstractmethod
    async def step(self, request: StepRequest) -> ModelStep:
        """Ask the provider for step ``request.step``; raise its SDK's errors as they are."""


def tool_specs(offered: list[tuple[str, str, dict[str, Any]]], schema_field: str,
               wrap: Callable[[dict[str, Any]], dict[str, Any]] = lambda spec: spec,
               ) -> list[dict[str, Any]]:
    """The offered tools in a provider's shape: name, description where given, and the
    parameters' schema under ``schema_field``, each passed through ``wrap``."""
    specs = []
    for name, description, parameters in offered:
        spec: dict[str, Any] = {"name": name}
        if description:
            spec["description"] = description
        spec[schema_field] = parameters
        specs.append(wrap(spec))
    return specs


def sampling_fields(settings: ModelSettings, fields: Mapping[str, str]) -> dict[str, Any]:
    """The sampling settings that are set, under the provider's field names
    (``fields`` maps a :class:`ModelSettings` attribute to its field)."""
    out: dict[str, Any] = {}
    for attr, field_name in fields.items():
        value = getattr(settings, attr)
        if value is None or (attr == "stop" and not value):
            continue
        out[field_name] = list(value) if attr == "stop" else value
    return out


async def parse(raw: Any) -> Any:
    """A raw SDK response's parsed body (``parse()`` is async in some SDK versions)."""
    parsed = raw.parse()
    return await parsed if inspect.isawaitable(parsed) else parsed


def sdk_call(method: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as keywords of the SDK's ``method``: the fields it names go as keywords,
    the others in ``extra_body`` (SDK versions differ in the parameters they name)."""
    try:
        named = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return dict(body)
    if any(p.kind is p.VAR_KEYWORD for p in named.values()):
        return dict(body)
    kwargs = {k: v for k, v in body.items() if k in named}
    extra = {k: v for k, v in body.items() if k not in named}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def failed_mid_stream(exc: BaseException, refusals: frozenset[str]) -> TransientError | None:
    """The failure to raise for an error event in a stream already begun, or None to raise
    ``exc`` as it is.

    The SDKs raise such an event with the stream's status, 200 (or none), which the
    runner would read as no reason to try again, though an overload or a server error
    mid-stream is as transient as its 5xx before the stream; only an error type in
    ``refusals`` (the request itself refused) is not.  A cut connection is already the
    SDK's connection error, transient, and is left as it is.
    """
    status = status_of(exc)
    body = getattr(exc, "body", None)
    if (status is not None and status >= 400) or not isinstance(body, Mapping):
        return None
    error = body.get("error") if isinstance(body.get("error"), Mapping) else body
    kind = error.get("type")
    if not isinstance(kind, str) or kind in refusals:
        return None
    return TransientError(f"the stream failed once begun: {describe(exc)}")


def sdk_missing(extra: str, exc: ImportError) -> ImportError:
    """The ImportError that names the extra to install."""
    error = ImportError(f"this adapter needs the {extra} SDK: pip install 'ticketiq-pg[{extra}]'")
    error.__cause__ = exc
    return error


def count(value: Any) -> int | None:
    """A token count as an int, or None when the provider did not report it."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_of(pairs: Iterable[tuple[str, Any]]) -> dict[str, int] | None:
    """The reported counts of ``(name, value)`` pairs, or None when none was reported."""
    found = {name: n for name, value in pairs if (n := count(value)) is not None}
    return found or None
