"""A run as the step loop carries it, and what a checkpoint's body holds of it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from ticketiq_pg.agent import RunInfo, is_changing, tool_message

# The engine's control flow lives in the one error tree; named here for the runtime's parts.
from ticketiq_pg.errors import Drained, RunFailed, StopRequested, Suspended

__all__ = [
    "LIMIT_COUNTERS", "UNKNOWN_OUTCOME", "RunOutcome", "RunState", "Step", "checkpoint_body",
    "adopt_body", "carry_results", "step_usage",
    "StopRequested", "Suspended", "RunFailed", "Drained",
]

#: Counters carried from checkpoint to checkpoint: a run's limits, a workflow's state, and
#: how many steps in a row had malformed tool arguments (:mod:`ticketiq_pg.runtime.malformed`)
#: and how many answers the model refused (``ModelStep.refused``).
LIMIT_COUNTERS = ("max_steps", "deadline_at", "workflow", "malformed_steps", "refused_answers")

UNKNOWN_OUTCOME = {
    "outcome": "unknown",
    "sent_again": False,
    "message": (
        "The outcome of this call is unknown: the process making it stopped while it was "
        "in flight, and it was not sent again."
    ),
}


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended in this process."""

    run_id: uuid.UUID
    status: str  # completed | failed | stopped | lost | released | suspended | exists
    answer: Any = None
    reason: str = ""


class Turn(Protocol):
    """A resume's place in a takeover's order (:class:`~ticketiq_pg.runtime.setup.ResumeTurn`)."""

    @property
    def ended(self) -> bool: ...

    def end(self) -> None: ...

    def pause(self) -> None: ...

    def unpause(self) -> None: ...


@dataclass
class RunState:
    """A run as the loop carries it from step to step (restored from a checkpoint)."""

    info: RunInfo
    epoch: int
    input: Any
    step: int = 0
    conversation: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)
    history: list[Any] = field(default_factory=list)
    delegation_keys: dict[str, Any] = field(default_factory=dict)
    outcomes: dict[str, Any] = field(default_factory=dict)
    last_results: dict[str, Any] = field(default_factory=dict)
    #: False: not written ahead (TICKETIQ_CRASH_RESUME_ENTRIES=false); lost,
    #: the run is failed by the sweep, never resumed.
    durable: bool = True
    #: The calls of the current step made so far, with their results and how:
    #: recorded before the run suspends, so they are not left in doubt.
    made: list[tuple[dict[str, Any], Any, str]] = field(default_factory=list)
    #: The changing calls whose outcome was recorded as they returned (``record_outcome``).
    recorded: set[str] = field(default_factory=set)
    #: The calls this attempt marked in doubt (a read the mark gave a row to among them).
    marked: set[str] = field(default_factory=set)
    #: The calls that took their first vendor token before their mark, and whether it
    #: counts in flight (:meth:`~ticketiq_pg.runtime.calls.CallExecutor.first_token`).
    tokens: dict[str, bool] = field(default_factory=dict)
    #: The seal of the run's last checkpoint when it is a link of a chain (None: the
    #: next checkpoint starts one, a base with the whole conversation so far).
    chain_seal: str | None = None
    #: How many messages of the conversation the chain holds (the next link adds the rest).
    chained: int = 0
    #: The run's :class:`~ticketiq_pg.workflow.Workflow` when it is a workflow run (its
    #: code decides the steps), None for an agent run (the model does).
    workflow: Any = None
    #: Its place among a takeover's resumes until its first step here is written
    #: (:class:`~ticketiq_pg.runtime.setup.ResumesFirst`); None for a run not resumed.
    resuming: Turn | None = None
    #: The run's id (its info's): read a dozen times a step, so an attribute.
    run_id: uuid.UUID = field(init=False)

    def __post_init__(self) -> None:
        self.run_id = self.info.run_id


class Step(Protocol):
    """A decided step as its checkpoint records it (a decider's ``Decision``)."""

    @property
    def calls(self) -> list[dict[str, Any]]: ...

    @property
    def text(self) -> str: ...

    @property
    def usage(self) -> dict[str, int] | None: ...

    @property
    def request_id(self) -> str | None: ...

    def message(self) -> dict[str, Any]: ...


def checkpoint_body(agent_loop: str, state: RunState, step_no: int, step: Step) -> dict[str, Any]:
    """The checkpoint of a step: only what is new since the previous one (a link).

    The first checkpoint of a chain (a run's first step, or the first after
    a checkpoint written before schema 12) is a base: the whole
    conversation, history and delegation keys so far.  Every later one is a
    link: the messages added since, this step's history entry and its new
    delegation keys; counters whole.
    """
    calls = step.calls
    base = state.chain_seal is None
    delegation_keys = dict(state.delegation_keys) if base else {}
    for call in calls:
        if call["classification"] in ("delegation", "subagent_with_tools", "remote_agent"):
            delegation_keys[call["call_id"]] = call["step_key"]
    new = state.conversation if base else state.conversation[state.chained:]
    return {
        "chain": "base" if base else "link",
        "conversation": [*new, step.message()],
        "calls": calls,
        "counters": {
            "model_steps": step_no,
            "tool_calls": int(state.counters.get("tool_calls", 0)) + len(calls),
            "agent_loop": agent_loop,
            # The run's limits ride in its sealed checkpoints, so a resume keeps them.
            **{k: state.counters[k] for k in LIMIT_COUNTERS if k in state.counters},
        },
        "history": [*(state.history if base else ()),
                    {"step": step_no, "calls": [c["call_id"] for c in calls]}],
        "delegation_keys": delegation_keys,
        "outcomes": state.outcomes,
        # its calls' rows carry seals (ticketiq_pg.runtime.call_rows): a resume verifies them
        "sealed_calls": True,
        **step_usage(step),
    }



def adopt_body(state: RunState, step_no: int, body: dict[str, Any]) -> None:
    """Carry a checkpoint of step ``step_no`` into the state: a link adds to it, any other replaces.

    The conversation the chain held so far is kept and the link's messages
    follow it (the state's later messages, the results carried since, are
    in the link).
    """
    state.step = step_no
    if body.get("chain") == "link":
        state.conversation = [*state.conversation[:state.chained], *body["conversation"]]
        state.history = [*state.history, *body["history"]]
        state.delegation_keys = {**state.delegation_keys, **body["delegation_keys"]}
    else:
        state.conversation = list(body["conversation"])
        state.history = list(body["history"])
        state.delegation_keys = dict(body["delegation_keys"])
    state.chained = len(state.conversation)
    state.counters = dict(body["counters"])
    state.outcomes = {}
    state.last_results = {}
    # call ids are a step's own (a positional one repeats in every step)
    state.recorded = set()
    state.marked = set()



def carry_results(
    state: RunState, calls: list[dict[str, Any]], results: list[Any]
) -> None:
    for call, result in zip(calls, results, strict=True):
        state.conversation.append(tool_message(call["call_id"], result))
        state.last_results[call["call_id"]] = result
        if is_changing(call["classification"]):
            state.outcomes[call["call_id"]] = result


def step_usage(step: Step) -> dict[str, Any]:
    """What the step cost, as its checkpoint (or sealed answer) records it: tokens, request id."""
    if not step.usage and not step.request_id:
        return {}
    return {"usage": {**(step.usage or {}), "request_id": step.request_id}}
