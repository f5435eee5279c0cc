"""Deciders: what a run does next, asked of the model (an agent run) or of the workflow's
code (a workflow run), as a :class:`Decision` the engine writes ahead and makes.

A :class:`Decision` is either final (the run's answer) or a list of planned calls, each
with its classification and step key; the engine does the same with it whoever decided.

:class:`ModelDecider` asks the model for one step, tried again while it fails transiently
within the model's :class:`~ticketiq_pg.retries.RetryPolicy` (each failed try counted in
the database, so a crash does not reset the count), and past the budget fails the run, or
suspends it where the policy opts in (:mod:`ticketiq_pg.runtime.outage`).  An answer the
checkpoint could not hold fails the run now; malformed arguments are counted
(:mod:`ticketiq_pg.runtime.malformed`).  An answer the model refused itself
(``ModelStep.refused``: an agent framework's output validation) is a step with no calls,
written ahead as any step and counted in the run's ``refused_answers``; the model is then
asked again (its own limit on refusals is its to keep).

:class:`WorkflowDecider` runs the workflow's code (:mod:`ticketiq_pg.runtime.workflow_engine`)
until it acts or ends: its action is the step's call (an ``all``: its calls), keyed by the
run id, the step id and the steps executed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ticketiq_pg.agent import ModelStep, StepRequest
from ticketiq_pg.errors import NotOwner
from ticketiq_pg.retries import describe
from ticketiq_pg.runtime import malformed, outage
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.bounds import bounded
from ticketiq_pg.runtime.run_state import (
    Drained,
    RunFailed,
    RunState,
    StopRequested,
    Suspended,
)
from ticketiq_pg.runtime.setup import EngineSetup

log = logging.getLogger(__name__)

#: The longest provider call id a checkpoint takes.
MAX_CALL_ID = 256


@dataclass(frozen=True, slots=True)
class Decision:
    """A run's next step: planned calls, or (none) the final answer."""

    #: Each: call_id, tool, arguments, classification, step_key (and ``malformed``).
    calls: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""
    #: What the step cost, as the provider reported it (a model step only).
    usage: dict[str, int] | None = None
    request_id: str | None = None
    #: The model refused its own answer (``ModelStep.refused``): a step with no calls,
    #: written ahead as any step, after which the model is asked again.
    refused: Any = None

    @property
    def final(self) -> bool:
        return not self.calls and self.refused is None

    def message(self) -> dict[str, Any]:
        """The step as the run's conversation records it."""
        return {
            "role": "assistant",
            "content": self.text,
            "tool_calls": [{"call_id": c["call_id"], "tool": c["tool"],
                            "arguments": c["arguments"]} for c in self.calls],
            **({"refused": self.refused} if self.refused is not None else {}),
        }


class Decider(Protocol):
    async def decide(self, state: RunState, step_no: int) -> Decision: ...


class ModelDecider:
    """The model decides: one step asked, tried again within its budget, its calls planned."""

    #: Steps in a row with malformed tool arguments that fail a run.
    max_malformed: int = malformed.MAX_MALFORMED

    def __init__(self, setup: EngineSetup) -> None:
        self.setup = setup
        self.recovery = outage.Recovery(setup)

    async def decide(self, state: RunState, step_no: int) -> Decision:
        answer = await self.ask(state, step_no)
        if answer.refused is not None:
            # counted in the step's own checkpoint: a resume keeps the count
            state.counters["refused_answers"] = int(state.counters.get("refused_answers", 0)) + 1
        return Decision(calls=self.plan(state, step_no, answer), text=answer.text,
                        usage=answer.usage, request_id=answer.request_id,
                        refused=answer.refused)

    def plan(self, state: RunState, step_no: int, answer: ModelStep) -> list[dict[str, Any]]:
        """The answer's calls as the checkpoint records them: each with its step key."""
        setup = self.setup
        return [
            {
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": call.arguments,
                "classification": setup.tools.classify(call.tool),
                "step_key": keys.agent_call_key(
                    state.info.correlation_id, setup.agent_loop, step_no, call.call_id
                ),
                **({"malformed": m} if (m := malformed.reason_of(call)) else {}),
            }
            for call in answer.calls
        ]

    async def ask(self, state: RunState, step_no: int) -> ModelStep:
        """One model step, tried again while it fails transiently within the budget."""
        setup = self.setup
        policy = setup.model_retry
        failed = 0
        first_failure: float | None = None
        setup.faults.reach("before_model", step_no)
        live = setup.live
        if live.anyone:
            live.emit(state.run_id, "step_started", step_no, state.epoch)
        if setup.progress is not None:
            setup.progress(state.info, state.input)
        while True:
            await setup.leases.ready(state.run_id, state.epoch)  # the model is a call too
            request = StepRequest(
                run_id=state.run_id,
                step=step_no,
                # A copy of the list: the model reads it, it must not change it.
                conversation=list(state.conversation),
                input=state.input,
                on_text=(live.text_sink(state.run_id, step_no, state.epoch)
                         if live.anyone else None),
            )
            turn = state.resuming  # a resume awaiting its model: none to wait for
            if turn is not None:
                turn.pause()
            try:
                answer = await bounded(setup.model.step(request), policy.timeout)
            except (NotOwner, Drained, Suspended, StopRequested, RunFailed):
                raise
            except Exception as exc:  # noqa: BLE001 - judged below: transient or not
                if request.on_text is not None:
                    # What the failed try streamed is void: the step is asked again.
                    live.text_done(state.run_id, step_no, state.epoch)
                    live.emit(state.run_id, "text_discarded", step_no, state.epoch)
                reason = describe(exc)
                if not policy.transient(exc):
                    raise RunFailed(f"the model failed: {reason}") from exc
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                # Recorded with the provider's status first, for `ticketiq-pg status`.
                failed = await setup.count_failure(state, step_no, "model",
                                                   outage.recorded_reason(exc, reason), failed)
                wait = policy.delay(failed, exc, elapsed=now - first_failure)
                if wait is None:
                    spent = (f"the model failed {failed} times in "
                             f"{now - first_failure:.0f}s: {reason}")
                    await outage.suspend_if_opted_in(setup, state, step_no, spent)
                    raise RunFailed(spent) from exc
                log.warning("run %s: model step %s failed (%s); again in %.2fs",
                            state.run_id, step_no, reason, wait)
                await asyncio.sleep(wait)
                continue
            finally:
                if turn is not None:
                    turn.unpause()
            if request.on_text is not None:
                live.text_done(state.run_id, step_no, state.epoch)
            check_answer(answer)
            if not malformed.clean(state, answer):
                await malformed.note(setup, state, step_no, answer, self.max_malformed)
            if getattr(policy, "suspend", False):
                await self.recovery.recovered()
            return answer


class WorkflowDecider:
    """The workflow's code decides: it runs until it acts (a call, or an ``all``) or ends."""

    def __init__(self, setup: EngineSetup, workflows: flows.Workflows | None = None) -> None:
        self.setup = setup
        #: The process's workflows: the children a step may start.
        self.workflows = workflows if workflows is not None else flows.Workflows()

    async def decide(self, state: RunState, step_no: int) -> Decision:
        assert state.workflow is not None
        self.setup.faults.reach("before_model", step_no)
        if self.setup.live.anyone:
            self.setup.live.emit(state.run_id, "step_started", step_no, state.epoch)
        if self.setup.progress is not None:
            self.setup.progress(state.info, state.input)
        next_ = await flows.decide(state.workflow, state, step_no)
        if isinstance(next_, flows.End):
            return Decision(text=next_.text)
        acts = next_.acts if isinstance(next_, flows.ActAll) else (next_,)
        self.workflows.check_children(state.workflow, acts)
        return Decision(calls=[
            {"call_id": act.call_id, "tool": act.tool, "arguments": act.arguments,
             "classification": self.setup.tools.classify(act.tool), "step_key": act.step_key}
            for act in acts])


def within_limits(state: RunState, step_no: int) -> None:
    """Raise RunFailed when the run may not take step ``step_no`` (its steps, its deadline)."""
    max_steps = state.counters.get("max_steps")
    if isinstance(max_steps, int) and step_no > max_steps:
        # A workflow's steps are its code's actions, not a model's answers.
        what = "model steps" if state.workflow is None else "workflow steps"
        raise RunFailed(f"the run reached its limit of {max_steps} {what}",
                        "agent.run.limit_reached")
    deadline_at = state.counters.get("deadline_at")
    if isinstance(deadline_at, int | float) and time.time() >= deadline_at:
        raise RunFailed("the run passed its deadline", "agent.run.limit_reached")


def check_answer(answer: Any) -> None:
    """Refuse a model answer the checkpoint could not hold: the run fails now, with why."""
    if not isinstance(answer, ModelStep):
        raise RunFailed(f"the model answered {type(answer).__name__}, not a ModelStep")
    if answer.refused is not None and answer.calls:
        raise RunFailed("the model's answer is malformed: a refused answer with calls")
    seen: set[str] = set()
    for call in answer.calls:
        call_id = getattr(call, "call_id", None)
        if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_CALL_ID:
            raise RunFailed(f"the model's answer is malformed: call id {call_id!r} is not a "
                            f"non-empty string of at most {MAX_CALL_ID} characters")
        if call_id in seen:
            raise RunFailed(f"the model's answer is malformed: call id {call_id!r} twice")
        seen.add(call_id)
        if not isinstance(call.tool, str) or not call.tool:
            raise RunFailed(f"the model's answer is malformed: call {call_id!r} names no tool")
        if not isinstance(call.arguments, dict):
            raise RunFailed(f"the model's answer is malformed: the arguments of call "
                            f"{call_id!r} are not a JSON object")
