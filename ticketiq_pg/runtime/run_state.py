"""A run as the step loop carries it, and what a checkpoint's body holds of it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.agent import ModelStep, RunInfo, assistant_message, is_changing, tool_message

#: Counters carried from checkpoint to checkpoint: a run's limits, a workflow's state, and
#: how many steps in a row had malformed tool arguments (:mod:`ticketiq_pg.runtime.malformed`).
LIMIT_COUNTERS = ("max_steps", "deadline_at", "workflow", "malformed_steps")

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
    #: The seal of the run's last checkpoint when it is a link of a chain (None: the
    #: next checkpoint starts one, a base with the whole conversation so far).
    chain_seal: str | None = None
    #: How many messages of the conversation the chain holds (the next link adds the rest).
    chained: int = 0
    #: The run's :class:`~ticketiq_pg.workflow.Workflow` when it is a workflow run (its
    #: code decides the steps), None for an agent run (the model does).
    workflow: Any = None

    @property
    def run_id(self) -> uuid.UUID:
        return self.info.run_id


class StopRequested(Exception):
    """A Stop was requested for the run: it ends stopped at its next boundary."""


class Suspended(Exception):
    """The run gave its lease up to wait (an approval, a child run)."""


class RunFailed(Exception):
    """The run cannot go on (a permanent error, a spent retry budget, a limit): fail it now."""

    def __init__(self, reason: str, event: str = "agent.run.failed") -> None:
        super().__init__(reason)
        self.reason = reason
        self.event = event


class Drained(Exception):
    """The process is shutting down while the run waits: it was released."""



def checkpoint_body(
    agent_loop: str,
    state: RunState,
    step_no: int,
    answer: ModelStep,
    calls: list[dict[str, Any]],
) -> dict[str, Any]:
    """The checkpoint of a step: only what is new since the previous one (a link).

    The first checkpoint of a chain (a run's first step, or the first after
    a checkpoint written before schema 12) is a base: the whole
    conversation, history and delegation keys so far.  Every later one is a
    link: the messages added since, this step's history entry and its new
    delegation keys; counters whole.
    """
    base = state.chain_seal is None
    delegation_keys = dict(state.delegation_keys) if base else {}
    for call in calls:
        if call["classification"] in ("delegation", "subagent_with_tools", "remote_agent"):
            delegation_keys[call["call_id"]] = call["step_key"]
    new = state.conversation if base else state.conversation[state.chained:]
    return {
        "chain": "base" if base else "link",
        "conversation": [*new, assistant_message(answer)],
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
        **step_usage(answer),
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


def step_usage(answer: ModelStep) -> dict[str, Any]:
    """What the step cost, as its checkpoint (or sealed answer) records it: tokens, request id."""
    if not answer.usage and not answer.request_id:
        return {}
    return {"usage": {**(answer.usage or {}), "request_id": answer.request_id}}
