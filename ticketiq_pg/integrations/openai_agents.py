"""An OpenAI Agents SDK agent run durably on ticketiq-pg (extra ``openai-agents``).

An agent written with the OpenAI Agents SDK (``Agent(name=..., instructions=...,
tools=[...], handoffs=[...])``, ``@function_tool``) runs on ticketiq-pg unchanged:
:func:`agent_app` makes an :class:`~ticketiq_pg.App` whose model asks the agent's model one
step at a time (:class:`AgentsModel`: ``Model.get_response`` with the agent's
instructions, tools, handoffs and settings, as the SDK's runner asks it) and whose tools
are the agents' function tools, each classified by ``routes`` as for Pydantic AI
(``read()``, ``write(takes_key=True, ...)``; unnamed: a write without a key or reader).

A handoff is a delegation: the call to ``transfer_to_<agent>`` starts a child run of the
agent it hands off to, with the conversation so far as its input, keyed by the call's
delegation key (a resume finds the same child, never a second one); the child's answer
is the run's answer, as the agent handed off to answers the SDK's run.

Guardrails run in the step: the starting agent's input guardrails before its first
request, the answering agent's output guardrails on its output; a tripwire fails the run
with the SDK's message.  Refused by :func:`agent_app`, with why: a ``tool_use_behavior``
other than ``"run_llm_again"``, MCP servers, tools other than function tools, handoffs
given as ``Handoff`` objects.  Streaming is not carried over yet.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from agents import Agent, FunctionTool, Handoff, ModelSettings, handoff
from agents.agent_output import AgentOutputSchema, AgentOutputSchemaBase
from agents.exceptions import InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered
from agents.models.interface import Model as SdkModel
from agents.models.interface import ModelTracing
from agents.models.multi_provider import MultiProvider
from agents.run_context import RunContextWrapper
from agents.tool_context import ToolContext
from pydantic_core import to_jsonable_python

from ticketiq_pg.adapters.base import default_prompt, result_text
from ticketiq_pg.agent import CallContext, ModelStep, StepRequest, Tool, ToolCall, Tools
from ticketiq_pg.errors import RunFailed
from ticketiq_pg.integrations.routes import CALL, UNCLASSIFIED, Route, current_call, read, write
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.calls import warn_downgraded

__all__ = ["AgentsModel", "Route", "agent_app", "current_call", "read", "write"]

#: Where a handoff's child run finds the agent it runs and the conversation so far.
AGENT, ITEMS = "agent", "input"


def _handoffs(agent: Agent[Any]) -> list[tuple[Handoff[Any, Any], Agent[Any]]]:
    out = []
    for item in agent.handoffs:
        if isinstance(item, Agent):
            out.append((handoff(item), item))
        else:
            raise TypeError(f"agent {agent.name}: a handoff is carried over when it is given as "
                            "the Agent itself (a Handoff object's agent is not reachable here)")
    return out


def _agents(start: Agent[Any]) -> dict[str, Agent[Any]]:
    """The start agent and every agent its handoffs reach, by name."""
    found: dict[str, Agent[Any]] = {}
    todo = [start]
    while todo:
        agent = todo.pop()
        if agent.name in found:
            if found[agent.name] is not agent:
                raise ValueError(f"two agents are named {agent.name!r}: a handoff's child run "
                                 "finds its agent by name")
            continue
        _refuse_what_is_not_carried(agent)
        found[agent.name] = agent
        todo.extend(target for _, target in _handoffs(agent))
    return found


def _refuse_what_is_not_carried(agent: Agent[Any]) -> None:
    if agent.tool_use_behavior != "run_llm_again":
        raise ValueError(f"agent {agent.name}: tool_use_behavior="
                         f"{agent.tool_use_behavior!r} ends a run on a tool's result, which a "
                         "durable step does not judge: use 'run_llm_again'")
    if agent.mcp_servers:
        raise TypeError(f"agent {agent.name} has MCP servers: only function tools are "
                        "checkpointed")
    for tool in agent.tools:
        if not isinstance(tool, FunctionTool):
            raise TypeError(f"agent {agent.name}: its {type(tool).__name__} is not a function "
                            "tool; only function tools are checkpointed")


class _Bridge:
    def __init__(self, agent: Agent[Any], context: Any, model: Any) -> None:
        self.start, self.context, self._given = agent, context, model
        self.agents = _agents(agent)
        self._models: dict[str, SdkModel] = {}

    def model(self, agent: Agent[Any]) -> SdkModel:
        if agent.name not in self._models:
            given = self._given if self._given is not None else agent.model
            if isinstance(given, SdkModel):
                self._models[agent.name] = given
            else:
                self._models[agent.name] = MultiProvider().get_model(given)
        return self._models[agent.name]


def agent_tools(agent: Agent[Any], routes: Mapping[str, Route] | None = None, *,
                context: Any = None, _bridge: _Bridge | None = None) -> Tools:
    """The function tools of ``agent`` and of every agent its handoffs reach, classified
    by ``routes``, and each handoff as a delegation (``transfer_to_<agent>``)."""
    bridge = _bridge or _Bridge(agent, context, None)
    routes = dict(routes or {})
    tools = Tools()
    seen: dict[str, Any] = {}
    for each in bridge.agents.values():
        for tool in each.tools:
            assert isinstance(tool, FunctionTool)
            if seen.setdefault(tool.name, tool) is not tool:
                raise ValueError(f"two tools are named {tool.name!r}")
            route = routes.pop(tool.name, None) or UNCLASSIFIED
            tools.add(Tool(tool.name, route.classification, invoke=_invoker(bridge, each, tool),
                           description=tool.description or "",
                           parameters=tool.params_json_schema, **route.options))
        for over, target in _handoffs(each):
            tools.add(Tool(over.tool_name, "delegation", subagent=True,
                           description=over.tool_description,
                           child_input=lambda call: call.arguments))
            del target
    if routes:
        raise ValueError(f"routes name tools the agents do not have: {sorted(routes)}")
    return tools


def _invoker(bridge: _Bridge, agent: Agent[Any], tool: FunctionTool) -> Any:
    async def invoke(call: CallContext) -> Any:
        arguments = json.dumps(call.arguments)
        context = ToolContext(context=bridge.context, tool_name=tool.name,
                              tool_call_id=call.call_id, tool_arguments=arguments, agent=agent)
        token = CALL.set(call)
        try:
            result = await tool.on_invoke_tool(context, arguments)
        finally:
            CALL.reset(token)
        return to_jsonable_python(result)

    return invoke


class AgentsModel:
    """The agent's model as a ticketiq-pg :class:`~ticketiq_pg.Model`: each step one
    ``get_response`` with the run's conversation as the SDK's input items."""

    def __init__(self, agent: Agent[Any], *, context: Any = None, model: Any = None,
                 _bridge: _Bridge | None = None) -> None:
        self._bridge = _bridge or _Bridge(agent, context, model)

    def _agent_and_input(self, first: Any) -> tuple[Agent[Any], list[Any]]:
        """A handoff's child runs the agent it names on the conversation it was given."""
        if isinstance(first, Mapping) and isinstance(first.get(AGENT), str):
            agent = self._bridge.agents.get(first[AGENT])
            if agent is None:
                raise RunFailed(f"no agent named {first[AGENT]!r} to hand off to")
            return agent, list(first.get(ITEMS) or [])
        return self._bridge.start, [{"role": "user", "content": default_prompt(first)}]

    @staticmethod
    def _items(conversation: list[dict[str, Any]]) -> list[Any]:
        items: list[Any] = []
        for message in conversation:
            role = message.get("role")
            if role == "assistant":
                if message.get("content"):
                    items.append({"role": "assistant", "content": str(message["content"])})
                items.extend({"type": "function_call", "call_id": str(c["call_id"]),
                              "name": str(c["tool"]),
                              "arguments": json.dumps(c.get("arguments") or {})}
                             for c in message.get("tool_calls") or [])
            elif role == "tool":
                items.append({"type": "function_call_output", "call_id": str(message["call_id"]),
                              "output": result_text(message.get("content"))})
            elif role == "user":
                items.append({"role": "user", "content": default_prompt(message.get("content"))})
        return items

    async def step(self, request: StepRequest) -> ModelStep:
        """One ``get_response`` of the run's agent; its answer as a :class:`ModelStep`."""
        conversation = request.conversation
        first = conversation[0]["content"] if conversation else ""
        agent, items = self._agent_and_input(first)
        offers = _handoffs(agent)
        targets = {h.tool_name: target for h, target in offers}
        handed = _handed_off(conversation, targets)
        if handed is not None:  # the agent handed off to answered: the run's answer
            return handed
        wrapper = RunContextWrapper(context=self._bridge.context)
        if agent is self._bridge.start and len(conversation) <= 1:
            # The starting agent's input guardrails, on the run's input, before its first
            # request (as run_in_parallel=False runs them): a tripwire fails the run.
            for guardrail in agent.input_guardrails:
                result = await guardrail.run(agent, list(items), wrapper)
                if result.output.tripwire_triggered:
                    raise RunFailed(str(InputGuardrailTripwireTriggered(result)),
                                    "agent.run.guardrail_tripped")
        items += self._items(conversation[1:])
        output = (None if agent.output_type in (None, str) else
                  agent.output_type if isinstance(agent.output_type, AgentOutputSchemaBase)
                  else AgentOutputSchema(agent.output_type))
        response = await self._bridge.model(agent).get_response(
            await agent.get_system_prompt(wrapper), items,
            agent.model_settings or ModelSettings(), await agent.get_all_tools(wrapper),
            output, [h for h, _ in offers], ModelTracing.DISABLED,
            previous_response_id=None, conversation_id=None, prompt=None)
        usage = {k: v for k, v in (("input_tokens", response.usage.input_tokens),
                                   ("output_tokens", response.usage.output_tokens))
                 if isinstance(v, int) and not math.isnan(v)} or None
        text = "".join(getattr(c, "text", "") or "" for item in response.output
                       if getattr(item, "type", None) == "message"
                       for c in getattr(item, "content", []) or [])
        called = [item for item in response.output if getattr(item, "type", None)
                  == "function_call"]
        over = next((c for c in called if c.name in targets), None)
        if over is not None:  # a handoff: the child run gets the conversation so far
            sent = [*items, *({"role": "assistant", "content": text} for _ in [1] if text)]
            calls = (ToolCall(over.call_id, over.name, {AGENT: targets[over.name].name,
                                                        ITEMS: sent}),)
            return ModelStep(text, calls, usage=usage, request_id=response.response_id)
        if called:
            return ModelStep(text, tuple(ToolCall(c.call_id, c.name, _arguments(c.arguments))
                                         for c in called),
                             usage=usage, request_id=response.response_id)
        final: Any = text
        if output is not None:  # the SDK's own validation of a structured output
            final = output.validate_json(text)
            text = json.dumps(to_jsonable_python(final))
        for guardrail in agent.output_guardrails:  # the answering agent's, on its output
            checked = await guardrail.run(wrapper, agent, final)
            if checked.output.tripwire_triggered:
                raise RunFailed(str(OutputGuardrailTripwireTriggered(checked)),
                                "agent.run.guardrail_tripped")
        return ModelStep(text, usage=usage, request_id=response.response_id)


def _arguments(text: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text or "{}")
    except ValueError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _handed_off(conversation: list[dict[str, Any]], handoffs: Mapping[str, Any]
                ) -> ModelStep | None:
    """The answer of the agent the run handed off to, once its child run has answered."""
    last = conversation[-1] if conversation else {}
    if last.get("role") != "tool":
        return None
    assistant = next((m for m in reversed(conversation) if m.get("role") == "assistant"), {})
    calls = assistant.get("tool_calls") or []
    if len(calls) != 1 or calls[0].get("tool") not in handoffs:
        return None
    result = last.get("content")
    if not isinstance(result, Mapping) or result.get("status") != "completed":
        reason = result.get("reason") if isinstance(result, Mapping) else result
        raise RunFailed(f"the agent handed off to did not answer: {reason}")
    answer = result.get("answer")
    return ModelStep(str(answer.get("text", "")) if isinstance(answer, Mapping) else str(answer))


def agent_app(agent: Agent[Any], routes: Mapping[str, Route] | None = None, *,
              context: Any = None, model: Any = None, **app_options: Any) -> App:
    """An :class:`~ticketiq_pg.App` running ``agent`` (and the agents its handoffs reach):
    its model (or ``model``, an SDK ``Model`` or model name) asked step by step, its
    function tools classified by ``routes``, ``context`` handed to every tool and
    instructions function as the SDK's run context; ``app_options`` go to ``App``."""
    bridge = _Bridge(agent, context, model)
    tools = agent_tools(agent, routes, _bridge=bridge)
    warn_downgraded(tools.get(name) for name in tools.names())  # type: ignore[misc]
    return App(model=AgentsModel(agent, _bridge=bridge), tools=tools, **app_options)
