"""What the app hands ticketiq_pg: a model, tools, gates.

ticketiq_pg runs the loop durably; the app implements these small
interfaces.  Python only handles model calls, gate checks and vendor
routing: every durable state change goes through the SQL functions.
"""

from __future__ import annotations

import inspect
import math
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ticketiq_pg.retries import RetryPolicy

#: How a tool's call is classified.  Everything but a read changes something
#: and is marked in doubt before it is made.
CLASSIFICATIONS = ("read", "write", "delegation", "remote_agent", "subagent_with_tools")

#: A vendor that dedupes on a key for at least this long dedupes "for longer
#: than a resume can take": a keyed write in doubt is sent again with its key.
#: Shorter windows (Discord nonces, SQS FIFO ids: minutes) are settled instead.
LONG_DEDUPE_SECONDS = 24 * 3600.0


def is_changing(classification: str) -> bool:
    return classification != "read"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call a model step asked for, with the provider's call id."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    #: Why the arguments the model sent could not be read (not JSON, not an object);
    #: ``arguments`` is then empty and the call is skipped with this reason, told to
    #: the model (:mod:`ticketiq_pg.runtime.malformed`).
    malformed: str | None = None


@dataclass(frozen=True, slots=True)
class ModelStep:
    """A model's answer to one step: text, and tool calls unless it is final."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    #: Tokens the step cost, as the provider reported them (``input_tokens``,
    #: ``output_tokens``, ``cached_tokens``...), and the provider's request id.
    usage: dict[str, int] | None = field(default=None, hash=False)
    request_id: str | None = None
    #: A refused answer (its output did not validate): the step is checkpointed with no
    #: calls, this JSON value rides in its message as ``refused`` for the model to read
    #: back as it wrote it, and the model is asked again (a model that refuses its own
    #: answers counts them: the run's ``refused_answers`` counter).
    refused: Any = field(default=None, hash=False)

    @property
    def final(self) -> bool:
        return not self.calls and self.refused is None


@dataclass(frozen=True, slots=True)
class StepRequest:
    """What the model is asked: step ``step`` of run ``run_id``."""

    run_id: uuid.UUID
    step: int
    conversation: list[dict[str, Any]]
    input: Any
    #: Where a model that streams hands the step's text as it is generated, one piece
    #: at a time, in order (the run's event stream: ``text`` events).  Synchronous and
    #: quick: it queues the piece and returns.  None when nobody listens; a model that
    #: does not stream never calls it, and the step's whole text still reaches the
    #: stream when the step is written.
    on_text: Callable[[str], None] | None = field(default=None, compare=False, repr=False)


class Model(Protocol):
    """The app's model: answers one step of a run with text and tool calls."""

    async def step(self, request: StepRequest) -> ModelStep:
        """Answer step ``request.step`` given the conversation so far.

        Never asked again for a step whose answer is in a committed checkpoint (I8);
        the step being generated when a process died is asked for again.
        """
        ...


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The identity of a run, as the gates see it."""

    run_id: uuid.UUID
    owner: str
    run_as: str
    channel: str
    entry_point: str
    may_wait: bool
    correlation_id: str
    loss_count: int = 0
    resumed: bool = False
    #: The run that started this one as its child (a delegation, ``ctx.workflow``).
    parent_run_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class CallContext:
    """Everything a tool needs to make one call."""

    run: RunInfo
    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any]
    classification: str
    step_key: str | None
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class ReadBack:
    """What a reader found of a write in doubt."""

    found: bool
    outcome: Any = None


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool and its vendor route.

    ``takes_key`` and ``dedupe_window`` say whether the vendor dedupes on the
    step key and for how long (``math.inf``: for ever); ``read_back`` finds
    the outcome of a write in doubt.  These, not the tool's name, decide how
    a call in doubt is settled on resume.
    """

    name: str
    classification: str
    invoke: Callable[[CallContext], Awaitable[Any]] | None = None
    takes_key: bool = False
    dedupe_window: float | None = None
    read_back: Callable[[CallContext], Awaitable[ReadBack]] | None = None
    #: A sub-agent: the call starts a child run (its own lease and
    #: checkpoints) found again by its delegation key; ``child_input`` maps
    #: the call to the child's input (default: the call's arguments).
    subagent: bool = False
    child_input: Callable[[CallContext], Any] | None = None
    #: How a failing call of this tool is tried again (default: the app's tool policy).
    retry: RetryPolicy | None = None
    #: Made by itself: a call of this tool never overlaps another call of its step
    #: (a step's other calls are made at once, ``CallExecutor.make_all``).
    serial: bool = False
    #: The vendor its calls go to: each try takes a token of the vendor's limit first
    #: (:class:`VendorLimit`, shared by every process), and a 429 or 503 it meets with
    #: ``Retry-After`` slows every process's calls to the vendor.  None: no limit.
    vendor: str | None = None
    #: What the model is told the tool does.
    description: str = ""
    #: The JSON Schema of the arguments: a dict, or derived from a typed function, a
    #: dataclass, a TypedDict or a pydantic model (``ticketiq_pg.adapters.schema``);
    #: held as the derived dict.  None: any JSON object is accepted.
    parameters: Any = field(default=None, hash=False)
    #: Judges the arguments instead of :attr:`parameters` (an agent framework's own
    #: validator, e.g. Pydantic AI's lax mode): what is wrong, in one line, or None.
    check: Callable[[dict[str, Any]], str | None] | None = field(default=None, hash=False,
                                                                  compare=False)

    def __post_init__(self) -> None:
        if self.parameters is not None:
            from ticketiq_pg.adapters.schema import schema_from

            try:
                object.__setattr__(self, "parameters", schema_from(self.parameters))
            except TypeError as exc:
                raise ValueError(f"tool {self.name}: bad parameters: {exc}") from exc
        if not isinstance(self.description, str):
            raise ValueError(f"tool {self.name}: the description must be a string")
        if self.classification not in CLASSIFICATIONS:
            raise ValueError(f"tool {self.name}: unknown classification {self.classification!r}")
        if self.subagent and self.classification not in ("delegation", "subagent_with_tools"):
            raise ValueError(f"sub-agent tool {self.name} must be a delegation")
        if self.invoke is None and not self.subagent:
            raise ValueError(f"tool {self.name} needs invoke")

    def validate(self, arguments: Any) -> str | None:
        """What is wrong with the arguments a model sent, in one line, or None when they
        conform to :attr:`parameters` (no schema: any JSON object conforms)."""
        if not isinstance(arguments, dict):
            return "arguments: expected object"
        if self.check is not None:
            return self.check(arguments)
        if self.parameters is None:
            return None
        from ticketiq_pg.adapters.schema import validate

        return validate(self.parameters, arguments)

    @property
    def resend_safe(self) -> bool:
        """A keyed write whose vendor dedupes for longer than any resume."""
        window = self.dedupe_window or 0.0
        return self.takes_key and (math.isinf(window) or window >= LONG_DEDUPE_SECONDS)


Invoke = Callable[[CallContext], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class VendorLimit:
    """A vendor's limits, shared by every process (decided in PostgreSQL, on its clock).

    ``rate`` calls a second with bursts of ``burst`` (None: no rate), at most
    ``concurrency`` calls in flight (None: no bound), for all the vendor's calls or,
    ``per="owner"``, for each owner's apart.  An app's limits are written when a worker
    starts; ``ticketiq-pg limits set`` changes them for every process at once, and an
    operator's setting stays over the app's.  Waiting for a token is neither a failure
    nor a retry: the call's retry budget is not spent on it.
    """

    rate: float | None = None
    burst: int = 1
    concurrency: int | None = None
    per: str = "all"

    def __post_init__(self) -> None:
        if self.rate is not None and (isinstance(self.rate, bool) or not isinstance(
                self.rate, int | float) or not 0 < self.rate <= 1e6):
            raise ValueError("rate: calls a second in (0, 1e6], or None")
        if isinstance(self.burst, bool) or not isinstance(self.burst, int) or not (
                1 <= self.burst <= 1_000_000):
            raise ValueError("burst: 1 to 1,000,000 calls")
        if self.concurrency is not None and (isinstance(self.concurrency, bool) or not (
                isinstance(self.concurrency, int) and 1 <= self.concurrency <= 100_000)):
            raise ValueError("concurrency: 1 to 100,000 calls, or None")
        if self.per not in ("all", "owner"):
            raise ValueError("per: 'all' or 'owner'")


class Tools:
    """The tool registry.  An unknown tool is classified as a write (the safe side)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register ``tool`` under its name (a later one of the same name replaces it)."""
        self._tools[tool.name] = tool

    def tool(
        self, name: str, classification: str = "read", **route: Any
    ) -> Callable[[Invoke], Invoke]:
        """Decorator: register ``async def fn(call: CallContext)`` as the tool ``name``.

        ``route`` takes :class:`Tool`'s other fields (``takes_key``, ``dedupe_window``,
        ``read_back``, ``description``, ``parameters``); the function is returned unchanged.
        """

        def register(invoke: Invoke) -> Invoke:
            self.add(Tool(name, classification, invoke=invoke, **route))
            return invoke

        return register

    def function(
        self, name: str, classification: str = "read", **route: Any
    ) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
        """Decorator: ``async def fn(call: CallContext, ticket_id: str, ...)`` as the tool
        ``name``, called with the model's arguments as keywords.

        Its parameters after ``call`` are the tool's JSON Schema (``Annotated[str, "..."]``
        describes one) and its docstring the description, unless ``parameters`` or
        ``description`` are given; ``route`` takes :class:`Tool`'s other fields.
        """

        def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            async def invoke(call: CallContext) -> Any:
                return await fn(call, **call.arguments)

            route.setdefault("parameters", fn)
            route.setdefault("description", inspect.cleandoc(fn.__doc__ or ""))
            self.add(Tool(name, classification, invoke=invoke, **route))
            return fn

        return register

    def read(self, name: str, **route: Any) -> Callable[[Invoke], Invoke]:
        """Decorator: a read (made again on resume, never marked in doubt)."""
        return self.tool(name, "read", **route)

    def write(self, name: str, **route: Any) -> Callable[[Invoke], Invoke]:
        """Decorator: a write (marked in doubt before it is made, never blindly resent)."""
        return self.tool(name, "write", **route)

    def names(self) -> list[str]:
        """The registered tool names, in the order they were added."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool of that name, or None."""
        return self._tools.get(name)

    def classify(self, name: str) -> str:
        """The tool's classification as it stands now; an unknown tool counts as a write."""
        tool = self._tools.get(name)
        return tool.classification if tool else "write"

    def __contains__(self, name: str) -> bool:
        return name in self._tools


@dataclass(frozen=True, slots=True)
class Verdict:
    """A gate's answer: allowed, refused, or (for a call) held for a person's approval."""

    allowed: bool
    reason: str = ""
    needs_approval: bool = False

    @classmethod
    def allow(cls) -> Verdict:
        """Go on."""
        return cls(True)

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        """Refuse, with the reason the run (or the model, for a call) is told."""
        return cls(False, reason)

    @classmethod
    def hold(cls, reason: str) -> Verdict:
        """Allowed once a person approves it (ticketiq.request_approval)."""
        return cls(True, reason, needs_approval=True)


class Gates(Protocol):
    """Checks that decide whether a run, and each of its calls, may go on.

    ``check_run`` covers the owner still being allowed to run it, containment,
    the channel and run-as authority; a Stop comes from the database.  It is
    asked before every model step and again, as things stand now, when a run
    is resumed.  ``check_call`` is asked before every call, including the
    calls a resumed run's last step left.
    """

    async def check_run(self, run: RunInfo) -> Verdict:
        """Whether the run may take its next step (owner, containment, channel, run-as)."""
        ...

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        """Whether this call may be made: allow, deny, or hold it for a person's approval."""
        ...


class AllowAll:
    """Gates that allow everything."""

    async def check_run(self, run: RunInfo) -> Verdict:
        """Allow."""
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        """Allow."""
        return Verdict.allow()


Delivery = Callable[[RunInfo, Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class AnswerDelivery:
    """How the answer of an entry point's run lands where it must.

    ``send(run, request, answer, key)`` delivers it (``request`` is the
    run's input: the entry's payload).  With ``read_back(run, request, key)``
    — a reader that finds a delivery by its key — the delivery is marked
    before it is sent and read back by a process that replaces a dead one,
    so it is made exactly once (a Teams reply).  Without a reader it is made
    after the hand-on, at most once: a send that raises is logged and not made
    again, and the run stays completed (``RunOutcome.reason`` says so).

    ``progress(run, request)``, if given, shows the person waiting that the run
    is working (a Teams typing activity): called as each step starts, in a task
    of its own, bounded to a few seconds; its failure is logged and dropped, so
    it never fails or delays the run.
    """

    send: Callable[[RunInfo, Any, Any, str], Awaitable[None]]
    read_back: Callable[[RunInfo, Any, str], Awaitable[bool]] | None = None
    progress: Callable[[RunInfo, Any], Awaitable[None]] | None = None


def tool_message(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "call_id": call_id, "content": content}


def assistant_message(step: ModelStep) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": step.text,
        "tool_calls": [
            {"call_id": c.call_id, "tool": c.tool, "arguments": c.arguments} for c in step.calls
        ],
    }


def user_message(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}

