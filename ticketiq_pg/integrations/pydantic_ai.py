"""A Pydantic AI agent run durably on ticketiq-pg (``pip install 'ticketiq-pg[pydantic-ai]'``).

An agent written with Pydantic AI (``Agent(model, tools=..., system_prompt=...)``,
``@agent.tool``) runs on ticketiq-pg unchanged and behaves as it does in Pydantic AI:
:func:`agent_app` makes an :class:`~ticketiq_pg.App` whose model is the agent's model,
asked one step at a time by ticketiq-pg's step loop (:class:`AgentModel`), and whose tools
are the agent's function tools, wrapped toolsets of them included (:func:`agent_tools`).
ticketiq-pg owns the loop: each step is checkpointed before its calls are made, a write is
marked in doubt before it is sent, and a run whose process dies goes on from its last
written step on another process.

Each tool is classified by the app (``routes={"get_ticket": read(), "post_comment":
write(takes_key=True, dedupe_window=math.inf, read_back=...)}``).  A tool the routes do
not name is a write without a key or a reader: if its process dies while it is in doubt,
the resume settles it ``unknown`` and never sends it again (said once per tool when the
app is made).  A tool finds its call's step key (its idempotency key) with
:func:`current_call`.

What Pydantic AI decides, it decides here too, by its own code:

* what the model is shown: the run's first request is built by the agent itself (its
  system prompts, dynamic ones evaluated for each run, its instructions, a
  ``message_history`` given in the run's input with :func:`agent_input`), by a run of the
  agent against a :class:`~pydantic_ai.models.function.FunctionModel` that records it;
* whether an answer is the output: the model's answer is handed to the agent, which
  validates it against its ``output_type`` and runs its output validators; an answer it
  refuses is a checkpointed step of its own (``ModelStep.refused``: the answer and the
  agent's retry prompt), and the model is asked again, at most the agent's output retries
  (counted from the run's checkpoints);
* a tool's arguments: judged by the tool's own Pydantic validator (lax mode, as Pydantic
  AI judges them) before the call is marked or made; a refusal, or a tool's
  ``ModelRetry``, is told to the model as Pydantic AI's retry prompt and counts against
  the tool's retries (``Agent(retries=...)``, ``@agent.tool(retries=...)``);
* ``UsageLimits``: ``request_limit`` is the run's step limit, ``tool_calls_limit`` and
  ``per_request_input_tokens_limit`` are checked as Pydantic AI checks them.

* streaming: while a client watches the run (``StepRequest.on_text``), each step is
  asked through Pydantic AI's streaming API and its text handed to the run's event
  stream as it comes; a model that only streams (a FunctionModel with only a stream
  function) is always asked so.

What cannot be carried over is refused by :func:`agent_app` with the reason (the guide
lists it): an event stream handler (the run's event stream is the way to watch),
toolsets other than function tools and their wrappers (MCP servers, external and dynamic
toolsets, tools that need approval), ``end_strategy='exhaustive'`` and cumulative token
and cost limits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import logging
import math
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai import messages as pydantic_ai_messages
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RetryInfo,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model as PydanticModel
from pydantic_ai.models import ModelRequestParameters, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import AbstractToolset, ApprovalRequiredToolset, FunctionToolset
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_core import ValidationError, to_jsonable_python

from ticketiq_pg.adapters.base import default_prompt
from ticketiq_pg.agent import CallContext, ModelStep, StepRequest, Tool, ToolCall, Tools
from ticketiq_pg.errors import RunFailed, TransientError
from ticketiq_pg.integrations.routes import CALL, UNCLASSIFIED, Route, current_call, read, write
from ticketiq_pg.retries import retry_after, status_of
from ticketiq_pg.runtime.app import App
from ticketiq_pg.runtime.calls import warn_downgraded

__all__ = ["AgentModel", "Route", "agent_app", "agent_input", "agent_tools", "current_call",
           "read", "write"]

log = logging.getLogger(__name__)

# Pydantic AI's errors that trying again later may mend: tried again within the run's budget.
_TRANSIENT = (ModelConnectionError, ModelRateLimitError, ModelRequestTimeout, ModelServerError,
              ModelUnavailableError)
#: Where a run's input carries a Pydantic AI message history (:func:`agent_input`).
HISTORY = "message_history"
#: A tool's ``ModelRetry``, as its call's result records it.
RETRY = "model_retry"
#: How the step engine records arguments a tool's validator refused (``CallExecutor``).
_INVALID = "invalid arguments: "
#: The runs whose first request this process has read (a resume elsewhere reads it again).
_RUNS_KEPT = 1024
# Cumulative token and cost limits would need the run's usage carried in its checkpoints.
_UNCARRIED_LIMITS = ("input_tokens_limit", "output_tokens_limit", "total_tokens_limit",
                     "cost_limit")


def agent_input(prompt: str | None, *, message_history: Sequence[ModelMessage] = ()
                ) -> dict[str, Any]:
    """A run's input that gives the agent ``message_history`` as Pydantic AI's
    ``agent.run(prompt, message_history=...)`` does (JSON: a run's input is stored)."""
    return {"prompt": prompt,
            HISTORY: ModelMessagesTypeAdapter.dump_python(list(message_history), mode="json")}


@dataclass(frozen=True)
class _Listed:
    """A function tool as the agent lists it: the agent's toolset it is called through
    (wrappers and all) and Pydantic AI's own tool (validator, retries)."""

    toolset: AbstractToolset[Any]
    tool: Any  # pydantic_ai.toolsets.ToolsetTool
    max_retries: int


class _Bridge:
    """The agent, its deps, its model resolved once (a model name is inferred on use) and
    its function tools listed once."""

    def __init__(self, agent: Agent[Any, Any], deps: Any, model: Any) -> None:
        self.agent, self.deps = agent, deps
        self._given = model if model is not None else agent.model
        self._model: PydanticModel | None = None
        self._tools: dict[str, _Listed] | None = None

    @property
    def model(self) -> PydanticModel:
        if self._model is None:
            if self._given is None:
                raise ValueError("the agent has no model: pass model= to agent_app")
            self._model = infer_model(self._given)
        return self._model

    @property
    def tools(self) -> dict[str, _Listed]:
        if self._tools is None:
            self._tools = _list_tools(self.agent, self.deps)
        return self._tools


def _walk(toolset: AbstractToolset[Any]) -> Iterator[AbstractToolset[Any]]:
    yield toolset
    wrapped = getattr(toolset, "wrapped", None)
    if isinstance(wrapped, AbstractToolset):
        yield from _walk(wrapped)
    for inner in getattr(toolset, "toolsets", ()) or ():
        if isinstance(inner, AbstractToolset):
            yield from _walk(inner)


def _list_tools(agent: Agent[Any, Any], deps: Any) -> dict[str, _Listed]:
    """The agent's function tools by the names its model calls them (a wrapper's prefix
    or renaming applied); any other toolset is refused, with why."""
    for toolset in agent.toolsets:
        for part in _walk(toolset):
            if isinstance(part, ApprovalRequiredToolset):
                raise TypeError(f"the agent's {type(part).__name__} asks for approval by "
                                "deferring its calls, which a durable run cannot carry: "
                                "hold the calls with a ticketiq-pg gate (Verdict.hold)")
        leaves: list[AbstractToolset[Any]] = []
        toolset.apply(leaves.append)
        for leaf in leaves:
            if not isinstance(leaf, FunctionToolset):
                raise TypeError(f"only function tools (and toolsets wrapping them) run on "
                                f"ticketiq-pg: the agent's {type(leaf).__name__} cannot be "
                                "checkpointed")

    async def listing() -> dict[str, _Listed]:
        # Function tools list themselves without a model: a stand-in, no provider asked.
        # The agent's tool retries are the default a tool without its own takes, through
        # the context as in an agent's run.
        ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage(), agent=agent,
                         max_retries=_tool_retries(agent))
        out: dict[str, _Listed] = {}
        for toolset in agent.toolsets:
            for name, tool in (await toolset.get_tools(ctx)).items():
                out[name] = _Listed(toolset, tool, tool.max_retries)
        return out

    return _run_sync(listing)


def _tool_retries(agent: Agent[Any, Any]) -> int:
    return int(agent._max_tool_retries)  # noqa: SLF001 - Agent(retries=...), resolved


def _run_sync(make: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to its end from sync code, inside an event loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


def agent_tools(agent: Agent[Any, Any], routes: Mapping[str, Route] | None = None, *,
                deps: Any = None, _bridge: _Bridge | None = None) -> Tools:
    """The agent's function tools as ticketiq-pg tools: name, description and JSON Schema
    from the agent, arguments judged by the tool's own Pydantic validator, classification
    and route from ``routes`` (unnamed: a write without a key or reader).  Toolsets that
    wrap function tools (``PrefixedToolset(FunctionToolset(...))``) are listed by the
    names the model calls; any other toolset (MCP, ...) is refused."""
    bridge = _bridge or _Bridge(agent, deps, None)
    routes = dict(routes or {})
    tools = Tools()
    for name, listed in bridge.tools.items():
        route = routes.pop(name, UNCLASSIFIED)
        definition = listed.tool.tool_def
        tools.add(Tool(name, route.classification, invoke=_invoker(bridge, listed.toolset, name),
                       description=definition.description or "",
                       parameters=definition.parameters_json_schema,
                       check=_checker(listed.tool.args_validator), **route.options))
    if routes:
        raise ValueError(f"routes name tools the agent does not have: {sorted(routes)}")
    return tools


def _checker(validator: Any) -> Callable[[dict[str, Any]], str | None]:
    """The tool's Pydantic validator, as Pydantic AI runs it (lax): its errors as JSON."""
    def check(arguments: dict[str, Any]) -> str | None:
        try:
            validator.validate_python(arguments)
        except ValidationError as exc:
            return json.dumps(exc.errors(include_url=False, include_context=False), default=str)
        return None

    return check


def _invoker(bridge: _Bridge, toolset: AbstractToolset[Any], name: str) -> Any:
    async def invoke(call: CallContext) -> Any:
        ctx = RunContext(deps=bridge.deps, model=bridge.model, usage=RunUsage(),
                         agent=bridge.agent, tool_call_id=call.call_id, tool_name=name,
                         run_step=call.step, run_id=str(call.run.run_id),
                         max_retries=_tool_retries(bridge.agent))
        token = CALL.set(call)
        try:
            found = (await toolset.get_tools(ctx))[name]
            try:
                arguments = found.args_validator.validate_python(call.arguments)
            except ValidationError as exc:  # judged before the call: not reached
                return {"error": _INVALID + json.dumps(
                    exc.errors(include_url=False, include_context=False), default=str)}
            result = await toolset.call_tool(name, arguments, ctx, found)
        except ModelRetry as exc:  # the tool asks the model to call again differently
            return {"error": exc.message, RETRY: True}
        finally:
            CALL.reset(token)
        return to_jsonable_python(result)

    return invoke


def _retry_of(result: Any) -> str | list[Any] | None:
    """What a call's result asks the model to mend (Pydantic AI's retry prompt), or None."""
    if not isinstance(result, Mapping) or not isinstance(result.get("error"), str):
        return None
    if result.get(RETRY) is True:
        return str(result["error"])
    if set(result) == {"error"} and result["error"].startswith(_INVALID):
        text = result["error"][len(_INVALID):]
        try:
            errors = json.loads(text)
        except ValueError:
            return text
        return errors if isinstance(errors, list) else text
    return None


def _told(tool: str, call_id: str, content: Any) -> ToolReturnPart:
    """A call's result as Pydantic AI tells it: a retry as its retried tool return."""
    retry = _retry_of(content)
    if retry is None:
        return ToolReturnPart(tool, content, call_id)
    if isinstance(retry, list):  # the validator's errors, shown as Pydantic AI shows them
        retry = [{**e, "loc": tuple(e.get("loc") or ())} if isinstance(e, dict) else e
                 for e in retry]  # JSON made the locations lists
        dump = getattr(pydantic_ai_messages, "_dump_error_details", None)
        retry = dump(retry) if dump is not None else retry
    return ToolReturnPart(tool, retry, call_id, outcome="retried", retry=RetryInfo(
        cause="model_retry" if isinstance(retry, str) else "validation_error"))


class _Recorded(Exception):  # noqa: N818 - not an error: the request is recorded
    """Raised by a recording model: the agent's run ends there."""


@dataclass(frozen=True)
class _Shown:
    """What the agent shows its model for a run: the first request and what goes with it."""

    first: tuple[ModelMessage, ...]
    instructions: str | None
    parameters: ModelRequestParameters
    settings: Any


class AgentModel:
    """The agent's model as a ticketiq-pg :class:`~ticketiq_pg.Model`: each step one
    request (``pydantic_ai.direct.model_request``) with the run's conversation so far;
    an answer is judged by the agent (its output type and validators)."""

    def __init__(self, agent: Agent[Any, Any], *, deps: Any = None, model: Any = None,
                 usage_limits: UsageLimits | None = None, _bridge: _Bridge | None = None) -> None:
        self._bridge = _bridge or _Bridge(agent, deps, model)
        self._limits = usage_limits
        self._runs: OrderedDict[uuid.UUID, _Shown] = OrderedDict()

    @property
    def agent(self) -> Agent[Any, Any]:
        return self._bridge.agent

    async def _agent_run(self, prompt: str | None, history: list[ModelMessage] | None,
                         model: FunctionModel) -> Any:
        return await self.agent.run(prompt, message_history=history, model=model,
                                    deps=self._bridge.deps,
                                    usage_limits=UsageLimits(request_limit=None))

    async def _read_agent(self, content: Any) -> _Shown:
        """The run's first request as the agent builds it (no provider is asked)."""
        if isinstance(content, Mapping) and HISTORY in content:
            history = ModelMessagesTypeAdapter.validate_python(content[HISTORY])
            prompt = content.get("prompt")
            prompt = prompt if prompt is None or isinstance(prompt, str) else default_prompt(
                prompt)
        else:
            history, prompt = None, default_prompt(content)
        seen: list[tuple[list[ModelMessage], AgentInfo]] = []

        def record(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append((list(messages), info))
            raise _Recorded

        try:
            await self._agent_run(prompt, history, FunctionModel(record))
        except Exception:  # noqa: BLE001 - the recording ends the run
            if not seen:
                raise
        messages, info = seen[0]
        return _Shown(tuple(messages), info.instructions, info.model_request_parameters,
                      info.model_settings)

    async def _shown(self, request: StepRequest) -> _Shown:
        shown = self._runs.get(request.run_id)
        if shown is None:
            first = request.conversation[0]["content"] if request.conversation else ""
            shown = await self._read_agent(first)
            self._runs[request.run_id] = shown
            while len(self._runs) > _RUNS_KEPT:
                self._runs.popitem(last=False)
        return shown

    def _messages(self, request: StepRequest, shown: _Shown) -> list[ModelMessage]:
        """The run's conversation as Pydantic AI's messages: the first request as the
        agent built it, then each answer and what it was told back."""
        out: list[ModelMessage] = list(shown.first)
        names: dict[str, str] = {}
        results: list[Any] = []

        def told() -> None:
            if results:
                out.append(ModelRequest(parts=list(results), instructions=shown.instructions))
                results.clear()

        for message in request.conversation[1:]:
            role = message.get("role")
            if role == "tool":
                cid = str(message.get("call_id"))
                results.append(_told(names.get(cid, "?"), cid, message.get("content")))
                continue
            told()
            if role == "assistant":
                if message.get("refused") is not None:  # the answer and the agent's retry prompt
                    out.extend(ModelMessagesTypeAdapter.validate_python(message["refused"]))
                    continue
                calls = message.get("tool_calls") or []
                names.update((str(c["call_id"]), str(c["tool"])) for c in calls)
                text = message.get("content") or ""
                parts: list[Any] = [*([TextPart(str(text))] if text else []),
                                    *(ToolCallPart(c["tool"], dict(c.get("arguments") or {}),
                                                   str(c["call_id"])) for c in calls)]
                if parts:
                    out.append(ModelResponse(parts=parts))
            elif role == "user":
                out.append(ModelRequest(parts=[UserPromptPart(default_prompt(message.get(
                    "content")))], instructions=shown.instructions))
        told()
        return out

    def _spent_tool_retries(self, conversation: list[dict[str, Any]]) -> None:
        """Fail the run as Pydantic AI would once a tool's retries are spent: counted from
        the run's conversation (its checkpoints) as Pydantic AI counts them: a step's
        failed tools gain one, a tool that succeeded starts again from none."""
        listed = self._bridge.tools
        retries: dict[str, int] = {}
        names: dict[str, str] = {}
        failed: set[str] = set()
        succeeded: set[str] = set()

        def next_step() -> None:
            nonlocal retries
            counted = {t: n for t, n in retries.items() if t not in succeeded}
            counted.update({t: retries.get(t, 0) + 1 for t in failed})
            retries = counted
            failed.clear()
            succeeded.clear()

        for message in conversation:
            role = message.get("role")
            if role == "assistant":
                next_step()
                names.update((str(c["call_id"]), str(c["tool"]))
                             for c in message.get("tool_calls") or [])
            elif role == "tool":
                tool = names.get(str(message.get("call_id")), "")
                if tool not in listed:
                    continue
                if _retry_of(message.get("content")) is None:
                    succeeded.add(tool)
                    continue
                limit = listed[tool].max_retries
                if retries.get(tool, 0) >= limit:
                    raise RunFailed(f"Tool {tool!r} exceeded max retries count of {limit}")
                failed.add(tool)

    def _within_limits(self, conversation: list[dict[str, Any]], response: ModelResponse,
                       calls: int) -> None:
        """Pydantic AI's own checks of the limits a step can judge: the request's input
        tokens, and the tool calls made so far (counted from the run's conversation)."""
        limits = self._limits
        if limits is None:
            return
        try:
            tokens = response.usage.input_tokens
            if isinstance(tokens, int):
                limits.check_per_request_input_tokens(tokens)
            if calls:
                made = sum(1 for m in conversation if m.get("role") == "tool"
                           and _retry_of(m.get("content")) is None)
                limits.check_before_tool_call(RunUsage(tool_calls=made + calls))
        except UsageLimitExceeded as exc:
            raise RunFailed(str(exc), "agent.run.limit_reached") from exc

    async def _judge(self, messages: list[ModelMessage], response: ModelResponse
                     ) -> tuple[Any, ModelRequest | None]:
        """The agent's output from the answer, or the request it would ask again with:
        the agent runs on the conversation and is handed the answer."""
        asked: list[ModelMessage] = []

        def replay(history: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if not asked:
                asked.append(response)
                return response
            asked.append(history[-1])
            raise _Recorded

        try:
            result = await self._agent_run(None, messages, FunctionModel(replay))
        except UnexpectedModelBehavior as exc:  # no output retries at all: refused for good
            raise RunFailed(str(exc)) from exc
        except _Recorded:
            retry = asked[-1]
            assert isinstance(retry, ModelRequest)
            return None, retry
        return result.output, None

    async def step(self, request: StepRequest) -> ModelStep:
        """One request to the agent's model; its answer as a :class:`ModelStep`."""
        shown = await self._shown(request)
        self._spent_tool_retries(request.conversation)
        messages = self._messages(request, shown)
        model = self._bridge.model
        try:
            if request.on_text is not None and _streams(model) or _streams_only(model):
                response = await _streamed(model, messages, shown, request.on_text)
            else:
                response = await model_request(model, messages, model_settings=shown.settings,
                                               model_request_parameters=shown.parameters)
        except _TRANSIENT as exc:
            cause = exc.__cause__ or exc
            raise TransientError(f"{type(exc).__name__}: {exc}", status=status_of(exc),
                                 retry_after=retry_after(cause)) from exc
        usage = {k: v for k, v in (("input_tokens", response.usage.input_tokens),
                                   ("output_tokens", response.usage.output_tokens))
                 if isinstance(v, int) and not math.isnan(v)} or None
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        outputs = {t.name for t in shown.parameters.output_tools}
        called = [p for p in response.parts if isinstance(p, ToolCallPart)]
        functions = [p for p in called if p.tool_name not in outputs]
        self._within_limits(request.conversation, response,
                            0 if len(functions) < len(called) else len(functions))
        if functions and len(functions) == len(called):
            calls = tuple(ToolCall(p.tool_call_id, p.tool_name, p.args_as_dict())
                          for p in functions)
            return ModelStep(text, calls, usage=usage, request_id=response.provider_response_id)
        # An answer: the agent judges it.  With an output call, the function calls beside
        # it are not made (as end_strategy='early'; the guide says so).
        answer = dataclasses.replace(response, parts=[
            p for p in response.parts if not (isinstance(p, ToolCallPart)
                                              and p.tool_name not in outputs)])
        output, retry = await self._judge(messages, answer)
        if retry is None:
            return ModelStep(output if isinstance(output, str) else json.dumps(
                to_jsonable_python(output)), usage=usage,
                request_id=response.provider_response_id)
        limit = self.agent._max_output_retries  # noqa: SLF001
        refused = sum(1 for m in request.conversation if m.get("refused") is not None)
        if refused >= limit:
            raise RunFailed(f"Exceeded maximum output retries ({limit})")
        return ModelStep(text, usage=usage, request_id=response.provider_response_id,
                         refused=ModelMessagesTypeAdapter.dump_python([answer, retry],
                                                                      mode="json"))


def _streams_only(model: Any) -> bool:
    """A FunctionModel with only a stream function: every step is asked as a stream."""
    return isinstance(model, FunctionModel) and model.function is None


def _streams(model: Any) -> bool:
    """Whether the model can answer a step as a stream (a FunctionModel only with a
    stream function; Pydantic AI's provider models all can)."""
    return not isinstance(model, FunctionModel) or model.stream_function is not None


async def _streamed(model: Any, messages: list[ModelMessage], shown: _Shown,
                    on_text: Any) -> ModelResponse:
    """One step asked through Pydantic AI's streaming API (``model_request_stream``),
    each piece of its text handed to ``on_text`` as it arrives (the run's event stream);
    the whole response, as a plain request's."""
    async with model_request_stream(model, messages, model_settings=shown.settings,
                                    model_request_parameters=shown.parameters) as stream:
        async for event in stream:
            if on_text is None:
                continue
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                if event.part.content:
                    on_text(event.part.content)
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                if event.delta.content_delta:
                    on_text(event.delta.content_delta)
        return stream.get()


def _refuse_what_is_not_carried(agent: Agent[Any, Any], model: Any,
                                usage_limits: UsageLimits | None) -> None:
    """Raise, with why, where the agent asks for what a durable run cannot carry."""
    if agent.event_stream_handler is not None:
        raise ValueError("the agent has an event_stream_handler: streaming is not carried "
                         "over yet (ticketiq-pg's run events will carry it)")
    if agent.end_strategy == "exhaustive":
        raise ValueError("end_strategy='exhaustive' makes every tool call of a final "
                         "answer once the answer is judged; a durable step's calls are "
                         "written ahead before they are made, and an answer ends the run: "
                         "use 'graceful' (the default) or 'early'")
    if usage_limits is not None:
        cumulative = [n for n in _UNCARRIED_LIMITS if getattr(usage_limits, n) is not None]
        if cumulative or usage_limits.count_tokens_before_request:
            raise ValueError(f"UsageLimits {', '.join(cumulative) or 'count_tokens_before_request'}"
                             ": a run's token and cost totals are not carried in its "
                             "checkpoints, so a resumed run could not honour them; use "
                             "request_limit (the run's step limit), tool_calls_limit or "
                             "per_request_input_tokens_limit")


def agent_app(agent: Agent[Any, Any], routes: Mapping[str, Route] | None = None, *,
              deps: Any = None, model: Any = None, usage_limits: UsageLimits | None = None,
              **app_options: Any) -> App:
    """An :class:`~ticketiq_pg.App` running ``agent`` as Pydantic AI runs it: its model (or
    ``model``, a Pydantic AI model or model name) asked step by step, its function tools
    classified by ``routes``, ``deps`` given to every tool, prompt and validator,
    ``usage_limits`` as ``agent.run`` takes them; ``app_options`` go to ``App`` (gates,
    deliveries, jobs, ...).  Raises ValueError or TypeError, with why, for what a durable
    run cannot carry over; warns once per tool left unclassified."""
    _refuse_what_is_not_carried(agent, model, usage_limits)
    bridge = _Bridge(agent, deps, model)
    tools = agent_tools(agent, routes, _bridge=bridge)
    warn_downgraded(tools.get(name) for name in tools.names())  # type: ignore[misc]
    if usage_limits is not None and usage_limits.request_limit is not None:
        app_options.setdefault("max_steps", usage_limits.request_limit)
    return App(model=AgentModel(agent, usage_limits=usage_limits, _bridge=bridge),
               tools=tools, **app_options)
