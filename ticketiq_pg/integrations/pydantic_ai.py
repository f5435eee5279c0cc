"""A Pydantic AI agent run durably on ticketiq-pg (``pip install 'ticketiq-pg[pydantic-ai]'``).

An agent written with Pydantic AI (``Agent(model, tools=..., system_prompt=...)``,
``@agent.tool``) runs on ticketiq-pg unchanged: :func:`agent_app` makes an
:class:`~ticketiq_pg.App` whose model is the agent's model, asked one step at a time by
ticketiq-pg's step loop (:class:`AgentModel`), and whose tools are the agent's function
tools with their schemas (:func:`agent_tools`).  ticketiq-pg owns the loop: each step is
checkpointed before its calls are made, a write is marked in doubt before it is sent, and
a run whose process dies goes on from its last written step on another process.

Each tool is classified by the app (``routes={"get_ticket": read(), "post_comment":
write(takes_key=True, dedupe_window=math.inf, read_back=...)}``).  A tool the routes do
not name is a write without a key or a reader: if its process dies while it is in doubt,
the resume settles it ``unknown`` and never sends it again.  A tool finds its call's step
key (its idempotency key) with :func:`current_call`.

What the model is shown is what the agent would show it: its system prompts,
instructions, tool definitions and settings, read once from the agent itself (the agent is
run once against a :class:`~pydantic_ai.models.function.FunctionModel` that records its
first request: no provider is asked).  Text output only: an agent whose ``output_type`` is
structured gets its output tool's arguments, as JSON text, as the run's answer.
"""

from __future__ import annotations

import contextvars
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model as PydanticModel
from pydantic_ai.models import ModelRequestParameters, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage
from pydantic_core import ValidationError, to_jsonable_python

from ticketiq_pg.adapters.base import turns
from ticketiq_pg.agent import CallContext, ModelStep, StepRequest, Tool, ToolCall, Tools
from ticketiq_pg.errors import TransientError
from ticketiq_pg.retries import retry_after, status_of
from ticketiq_pg.runtime.app import App

__all__ = ["AgentModel", "Route", "agent_app", "agent_tools", "current_call", "read", "write"]

_CALL: contextvars.ContextVar[CallContext] = contextvars.ContextVar("ticketiq_call")
# Pydantic AI's errors that trying again later may mend: tried again within the run's budget.
_TRANSIENT = (ModelConnectionError, ModelRateLimitError, ModelRequestTimeout, ModelServerError,
              ModelUnavailableError)


def current_call() -> CallContext:
    """The ticketiq-pg call a Pydantic AI tool is running for: its ``step_key`` (the
    idempotency key to send), ``run``, ``step``, ``resumed``.  LookupError outside a call."""
    return _CALL.get()


@dataclass(frozen=True)
class Route:
    """How a tool's call is classified and settled: ``classification`` and the
    :class:`~ticketiq_pg.Tool` route options (``takes_key``, ``dedupe_window``,
    ``read_back``, ``retry``)."""

    classification: str
    options: Mapping[str, Any] = field(default_factory=dict)


def read(**options: Any) -> Route:
    """A read: made again on resume, never marked in doubt."""
    return Route("read", options)


def write(**options: Any) -> Route:
    """A write: marked in doubt before it is sent, settled by its route on resume
    (``takes_key=True, dedupe_window=math.inf``: sent again with the same key;
    ``read_back=``: found by its reader; neither: ``unknown``, never sent again)."""
    return Route("write", options)


#: A tool the app did not classify: a write with no key and no reader (the safe side).
UNCLASSIFIED = Route("write")


class _Bridge:
    """The agent, its deps, and its model resolved once (a model name is inferred on use)."""

    def __init__(self, agent: Agent[Any, Any], deps: Any, model: Any) -> None:
        self.agent, self.deps = agent, deps
        self._given = model if model is not None else agent.model
        self._model: PydanticModel | None = None

    @property
    def model(self) -> PydanticModel:
        if self._model is None:
            if self._given is None:
                raise ValueError("the agent has no model: pass model= to agent_app")
            self._model = infer_model(self._given)
        return self._model


def agent_tools(agent: Agent[Any, Any], routes: Mapping[str, Route] | None = None, *,
                deps: Any = None, _bridge: _Bridge | None = None) -> Tools:
    """The agent's function tools as ticketiq-pg tools: name, description and JSON Schema
    from the agent, classification and route from ``routes`` (unnamed: a write without a
    key or reader).  A toolset other than a function toolset (MCP, ...) is refused."""
    bridge = _bridge or _Bridge(agent, deps, None)
    routes = dict(routes or {})
    tools = Tools()
    for toolset in agent.toolsets:
        if not isinstance(toolset, FunctionToolset):
            raise TypeError(f"only function tools run on ticketiq-pg: the agent's "
                            f"{type(toolset).__name__} cannot be checkpointed")
        for name, tool in toolset.tools.items():
            route = routes.pop(name, UNCLASSIFIED)
            definition = tool.tool_def
            tools.add(Tool(name, route.classification, invoke=_invoker(bridge, toolset, name),
                           description=definition.description or "",
                           parameters=definition.parameters_json_schema, **route.options))
    if routes:
        raise ValueError(f"routes name tools the agent does not have: {sorted(routes)}")
    return tools


def _invoker(bridge: _Bridge, toolset: FunctionToolset[Any], name: str) -> Any:
    async def invoke(call: CallContext) -> Any:
        ctx = RunContext(deps=bridge.deps, model=bridge.model, usage=RunUsage(),
                         agent=bridge.agent, tool_call_id=call.call_id, tool_name=name,
                         run_step=call.step, run_id=str(call.run.run_id))
        token = _CALL.set(call)
        try:
            found = (await toolset.get_tools(ctx))[name]
            try:
                arguments = found.args_validator.validate_python(call.arguments)
            except ValidationError as exc:
                return {"error": f"invalid arguments: {exc}"}
            result = await toolset.call_tool(name, arguments, ctx, found)
        except ModelRetry as exc:  # the tool asks the model to call again differently
            return {"error": exc.message}
        finally:
            _CALL.reset(token)
        return to_jsonable_python(result)

    return invoke


@dataclass(frozen=True)
class _Shown:
    """What the agent shows its model besides the conversation (read once)."""

    system: tuple[str, ...]
    instructions: str | None
    parameters: ModelRequestParameters
    settings: Any


class AgentModel:
    """The agent's model as a ticketiq-pg :class:`~ticketiq_pg.Model`: each step one
    request (``pydantic_ai.direct.model_request``) with the run's conversation so far."""

    def __init__(self, agent: Agent[Any, Any], *, deps: Any = None, model: Any = None,
                 _bridge: _Bridge | None = None) -> None:
        self._bridge = _bridge or _Bridge(agent, deps, model)
        self._shown: _Shown | None = None

    async def _read_agent(self, prompt: str) -> _Shown:
        seen: list[tuple[list[ModelMessage], AgentInfo]] = []

        def record(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append((messages, info))
            return ModelResponse(parts=[TextPart("recorded")])

        try:
            await self._bridge.agent.run(prompt, model=FunctionModel(record),
                                         deps=self._bridge.deps)
        except Exception:  # noqa: BLE001 - a structured output refuses the text: recorded
            if not seen:
                raise
        messages, info = seen[0]
        first = messages[0]
        system = tuple(p.content for p in getattr(first, "parts", ())
                       if isinstance(p, SystemPromptPart))
        return _Shown(system, info.instructions, info.model_request_parameters,
                      info.model_settings)

    def _messages(self, request: StepRequest, shown: _Shown) -> list[ModelMessage]:
        out: list[ModelMessage] = []
        names: dict[str, str] = {}
        for turn in turns(request.conversation):
            if turn.role == "user":
                parts: list[Any] = [] if out else [SystemPromptPart(s) for s in shown.system]
                out.append(ModelRequest(parts=[*parts, UserPromptPart(turn.text)],
                                        instructions=shown.instructions))
            elif turn.role == "assistant":
                names.update((cid, tool) for cid, tool, _ in turn.calls)
                out.append(ModelResponse(parts=[
                    *([TextPart(turn.text)] if turn.text else []),
                    *(ToolCallPart(tool, args, cid) for cid, tool, args in turn.calls)]))
            else:
                out.append(ModelRequest(parts=[
                    ToolReturnPart(names.get(cid, "?"), text, cid)
                    for cid, text, _ in turn.results], instructions=shown.instructions))
        return out

    async def step(self, request: StepRequest) -> ModelStep:
        """One request to the agent's model; its answer as a :class:`ModelStep`."""
        if self._shown is None:
            first = request.conversation[0]["content"] if request.conversation else ""
            self._shown = await self._read_agent(
                first if isinstance(first, str) else json.dumps(first, default=str))
        shown = self._shown
        try:
            response = await model_request(self._bridge.model, self._messages(request, shown),
                                           model_settings=shown.settings,
                                           model_request_parameters=shown.parameters)
        except _TRANSIENT as exc:
            cause = exc.__cause__ or exc
            raise TransientError(f"{type(exc).__name__}: {exc}", status=status_of(exc),
                                 retry_after=retry_after(cause)) from exc
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        outputs = {t.name for t in shown.parameters.output_tools}
        called = [p for p in response.parts if isinstance(p, ToolCallPart)]
        final = [p for p in called if p.tool_name in outputs]
        usage = {k: v for k, v in (("input_tokens", response.usage.input_tokens),
                                   ("output_tokens", response.usage.output_tokens))
                 if isinstance(v, int) and not math.isnan(v)}
        if final:  # the agent's structured output: the run's answer
            return ModelStep(json.dumps(final[0].args_as_dict()), usage=usage or None,
                             request_id=response.provider_response_id)
        calls = tuple(ToolCall(p.tool_call_id, p.tool_name, p.args_as_dict()) for p in called)
        return ModelStep(text, calls, usage=usage or None,
                         request_id=response.provider_response_id)


def agent_app(agent: Agent[Any, Any], routes: Mapping[str, Route] | None = None, *,
              deps: Any = None, model: Any = None, **app_options: Any) -> App:
    """An :class:`~ticketiq_pg.App` running ``agent``: its model (or ``model``, a Pydantic
    AI model or model name) asked step by step, its function tools classified by ``routes``,
    ``deps`` given to every tool and prompt function; ``app_options`` go to ``App``
    (gates, deliveries, jobs, ...)."""
    bridge = _Bridge(agent, deps, model)
    return App(model=AgentModel(agent, _bridge=bridge),
               tools=agent_tools(agent, routes, _bridge=bridge), **app_options)
