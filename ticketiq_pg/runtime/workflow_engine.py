"""Workflows in the step engine: a workflow's code decides each step.

An agent run's next step is the model's answer; a workflow run's is its code's
(:mod:`ticketiq_pg.workflow`), decided by :func:`decide` from the run's typed
:class:`WorkflowState`.  A decision runs the workflow's code steps from where the run is
until one acts (a call, a wait, a child run) or ends, and says so as an :class:`Act` or an
:class:`End` (several calls at once: an :class:`ActAll`);
:class:`~ticketiq_pg.runtime.deciders.WorkflowDecider` makes the step of it
that the engine writes ahead and makes, as for any run.  The state rides in the run's
sealed checkpoints (``counters["workflow"]``, the JSON of :class:`WorkflowState`: the
definition's name and version, the step, the steps executed, ``vars``, results), so a
resume never runs the code of a step again.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.agent import RunInfo, Tool, Tools
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime.run_state import RunFailed, RunState
from ticketiq_pg.workflow import (
    AGENT_TOOL,
    CHILD_WORKFLOW_TOOL,
    FIRST_TOOL,
    SIGNAL_TOOL,
    SLEEP_TOOL,
    Workflow,
    WorkflowContext,
    part_key,
)

log = logging.getLogger(__name__)

#: Audit events of a workflow run failed on purpose (docs/guide.md#workflows).
STEP_MISSING = "agent.run.workflow_step_missing"
UNKNOWN_WORKFLOW = "agent.run.workflow_unknown"
UNDECLARED_SIGNAL = "agent.run.workflow_signal_undeclared"


class NotRunnableHere(Exception):
    """A resumed run's workflow version is not one this process's code runs: it is handed
    back (claimed) for a process that can, never failed for a deploy."""


async def _not_made(_call: Any) -> Any:  # the waits are made by the runner, never invoked
    raise RuntimeError("a workflow wait is made by the runner")


#: The actions that are not the app's tools.  The waits are reads (made again on
#: resume: keyed by the step key, a wait is found again, not started again); a child
#: run is a delegation (marked in doubt, asked again by its delegation key).
BUILTIN_TOOLS: dict[str, Tool] = {
    SLEEP_TOOL: Tool(SLEEP_TOOL, "read", invoke=_not_made),
    SIGNAL_TOOL: Tool(SIGNAL_TOOL, "read", invoke=_not_made),
    AGENT_TOOL: Tool(AGENT_TOOL, "delegation", subagent=True,
                     child_input=lambda call: call.arguments.get("input")),
    CHILD_WORKFLOW_TOOL: Tool(CHILD_WORKFLOW_TOOL, "delegation", subagent=True,
                              child_input=lambda call: call.arguments.get("input")),
    # several child runs, the first to end the result: asked again by the children's keys
    FIRST_TOOL: Tool(FIRST_TOOL, "delegation", subagent=True),
}
WAITS = frozenset({SLEEP_TOOL, SIGNAL_TOOL})


class EngineTools(Tools):
    """The app's tools as the engine sees them: the workflow actions beside them.

    The app's own registry is not changed, so a model is never offered a workflow action.
    """

    def __init__(self, app_tools: Tools) -> None:
        super().__init__()
        self.app_tools = app_tools

    def add(self, tool: Tool) -> None:
        self.app_tools.add(tool)

    def names(self) -> list[str]:
        return self.app_tools.names()

    def get(self, name: str) -> Tool | None:
        return BUILTIN_TOOLS.get(name) or self.app_tools.get(name)

    def classify(self, name: str) -> str:
        builtin = BUILTIN_TOOLS.get(name)
        return builtin.classification if builtin else self.app_tools.classify(name)

    def __contains__(self, name: str) -> bool:
        return name in BUILTIN_TOOLS or name in self.app_tools


class Workflows:
    """The workflows of a process, found by name, by entry kind or by a cron payload."""

    def __init__(self, workflows: Iterable[Workflow] = ()) -> None:
        self.by_name: dict[str, Workflow] = {}
        self.by_kind: dict[str, Workflow] = {}
        for flow in workflows:
            if flow.name in self.by_name:
                raise ValueError(f"workflow {flow.name!r} is registered twice")
            if not flow.steps or flow.first is None:
                raise ValueError(f"workflow {flow.name!r} has no steps")
            self.by_name[flow.name] = flow
            self.by_kind[flow.kind] = flow

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def declaration(self) -> list[dict[str, Any]]:
        """What this process runs, as ``ticketiq.declare_workflows`` takes it."""
        return [flow.declaration() for flow in self.by_name.values()]

    def child(self, name: str) -> Workflow | None:
        """The workflow a ``ctx.workflow(name, ...)`` starts: by name, else by entry kind."""
        return self.by_name.get(name) or self.by_kind.get(name)

    def check_children(self, parent: Workflow, acts: Iterable[Act]) -> None:
        """Fail a run whose code starts a child workflow this process does not define
        (before anything is written: a bug in the code, not a result to go on with)."""
        for act in acts:
            if act.tool == FIRST_TOOL:
                self.check_children(parent, (
                    Act(act.call_id, child["tool"], child["arguments"], child["step_key"])
                    for child in act.arguments["children"]))
            if act.tool == CHILD_WORKFLOW_TOOL:
                name = str(act.arguments.get("workflow"))
                if self.child(name) is None:
                    raise RunFailed(f"workflow {parent.name}: step {act.call_id} starts "
                                    f"child workflow {name!r}, which this process does not "
                                    "define", UNKNOWN_WORKFLOW)

    def for_run(self, info: RunInfo, input: Any) -> Workflow | None:
        """The workflow a new run of this entry point and input is, or None (an agent run)."""
        flow = self.by_kind.get(info.entry_point)
        if flow is None and info.entry_point == "cron" and isinstance(input, dict):
            flow = self.by_name.get(str(input.get("workflow")))
        return flow

    def for_resume(self, info: RunInfo, input: Any, counters: dict[str, Any]) -> Workflow | None:
        """The workflow of a resumed run: the one its record names, else as a new run's.

        A run whose record names a workflow this process lacks fails (never taken for an
        agent run); one of a version this process's code does not run is handed back
        (:class:`NotRunnableHere`): it stays on the version it started with.
        """
        recorded = counters.get("workflow")
        if not isinstance(recorded, dict):
            return self.for_run(info, input)
        flow = self.by_name.get(str(recorded.get("name")))
        if flow is None:
            raise RunFailed(f"workflow {recorded.get('name')!r} (version "
                            f"{recorded.get('version')!r}) is not defined in this process",
                            UNKNOWN_WORKFLOW)
        runs = flow.runs_versions()
        if str(recorded.get("version")) not in runs or (
                recorded.get("code") is not None and str(recorded["code"]) not in runs):
            pinned = (f" (pinned to version {recorded['code']!r}'s code, which took a step)"
                      if recorded.get("code") is not None else "")
            raise NotRunnableHere(
                f"run {info.run_id} is on workflow {flow.name} version "
                f"{recorded.get('version')!r}{pinned}; this process runs {list(runs)}")
        return flow


@dataclass
class WorkflowState:
    """Where a workflow run is: what its checkpoints carry for its code."""

    name: str
    version: Any
    #: The step the code is at (the one whose action is in flight, if any).
    at: str | None
    #: Code steps executed so far: part of every action's step key.
    executed: int = 0
    #: The call id of the action in flight, and the step the code goes on to after it.
    call_id: str | None = None
    then: str | None = None
    #: The call ids of the actions of an ``all`` in flight (their results: a list).
    fan: list[str] | None = None
    vars: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    #: The run's ``ctx.patched`` decisions, by patch id.
    patches: dict[str, bool] = field(default_factory=dict)
    #: The steps whose code the run has executed (None: a run from before they were
    #: recorded; it counts as having passed every step once it executed one).
    passed: list[str] | None = field(default_factory=list)
    #: The version of the newer code that took a step of this run (a worker that runs
    #: the run's own version as ``compatible``): the run is pinned to that code from
    #: then on, since its path may lead where the older code has no step (None: only its
    #: own version's code took its steps).
    code: Any = None
    #: Set when the code ended: the run's answer.
    ended: bool = False
    answer: Any = None

    @classmethod
    def first(cls, flow: Workflow) -> WorkflowState:
        """The state of a workflow run before its first step."""
        return cls(name=flow.name, version=flow.version, at=flow.first)

    @classmethod
    def of(cls, state: RunState) -> WorkflowState | None:
        """The state a run's checkpoint carries (None before its first step)."""
        wf = state.counters.get("workflow")
        if not isinstance(wf, dict):
            return None
        wf = copy.deepcopy(wf)
        return cls(name=wf["name"], version=wf.get("version"), at=wf.get("at"),
                   executed=int(wf.get("executed") or 0), call_id=wf.get("call_id"),
                   then=wf.get("then"), fan=wf.get("fan"), vars=wf.get("vars") or {},
                   results=wf.get("results") or {}, patches=wf.get("patches") or {},
                   passed=wf.get("passed"), code=wf.get("code"), ended="answer" in wf,
                   answer=wf.get("answer"))

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "version": self.version, "at": self.at,
               "executed": self.executed, "call_id": self.call_id, "then": self.then,
               "vars": self.vars, "results": self.results}
        if self.fan:
            out["fan"] = self.fan
        if self.patches:
            out["patches"] = self.patches
        if self.passed is not None:
            out["passed"] = self.passed
        if self.code is not None:
            out["code"] = self.code
        if self.ended:
            out["answer"] = self.answer
        return out


@dataclass(frozen=True, slots=True)
class Act:
    """The code acts: one call (a tool, a wait or a child run) under ``call_id``."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    step_key: str


@dataclass(frozen=True, slots=True)
class ActAll:
    """The code acts at once: several calls and child runs, their results a list."""

    acts: tuple[Act, ...]


@dataclass(frozen=True, slots=True)
class End:
    """The code ended with ``answer``."""

    answer: Any

    @property
    def text(self) -> str:
        return self.answer if isinstance(self.answer, str) else json.dumps(self.answer)


def check_resumable(flow: Workflow, state: RunState) -> None:
    """Fail a resumed run whose record names a step this process's definition lacks."""
    wf = WorkflowState.of(state)
    if wf is None:
        return
    for step in (wf.at, wf.then):
        if step is not None and step not in flow.steps:
            raise RunFailed(
                f"workflow {flow.name} version {flow.version} has no step {step!r}, which "
                f"run {state.run_id} (started on version {wf.version!r}) is at; keep "
                "old steps until the runs that use them drain", STEP_MISSING)


async def decide(flow: Workflow, state: RunState, step_no: int) -> Act | ActAll | End:
    """Run the workflow's code from where the run is until it acts or ends.

    The state it leaves in ``state.counters["workflow"]`` rides in the checkpoint the
    engine writes before the action, so a resume never runs this code again.
    """
    wf = WorkflowState.of(state) or WorkflowState.first(flow)
    if str(flow.version) != str(wf.version if wf.code is None else wf.code):
        wf.code = flow.version  # newer code steps it: pinned to that code from now on
    if wf.call_id or wf.fan:
        # The action of the last step was made (or settled): its result, then go on.
        assert wf.at is not None
        wf.results[wf.at] = ([state.last_results.get(call_id) for call_id in wf.fan]
                             if wf.fan else state.last_results.get(wf.call_id))
        wf.executed += 1
        wf.at, wf.call_id, wf.then, wf.fan = wf.then, None, None, None
    for _ in range(flow.max_code_steps):
        step_id = wf.at
        if step_id not in flow.steps:
            raise RunFailed(f"workflow {flow.name} version {flow.version} has no step "
                            f"{step_id!r}", STEP_MISSING)
        first_visit = (step_id not in wf.passed if wf.passed is not None
                       else wf.executed == 0)
        ctx = WorkflowContext(run=state.info, input=state.input, step_id=step_id,
                              steps_executed=wf.executed, vars=wf.vars,
                              results=dict(wf.results), patches=wf.patches,
                              first_visit=first_visit)
        nxt = await flow.run_step(step_id, ctx)
        wf.vars = ctx.vars
        if wf.passed is not None and step_id not in wf.passed:
            wf.passed.append(step_id)
        if (nxt.kind == "signal" and flow.signals is not None
                and nxt.arguments.get("name") not in flow.signals):
            raise RunFailed(f"workflow {flow.name} version {flow.version}: step {step_id!r} "
                            f"waits for signal {nxt.arguments.get('name')!r}, which it does "
                            f"not declare (signals={list(flow.signals)})", UNDECLARED_SIGNAL)
        if nxt.kind == "goto":
            wf.executed += 1
            wf.at = nxt.then
            continue
        if nxt.kind == "end":
            wf.executed += 1
            wf.ended, wf.answer = True, nxt.answer
            state.counters["workflow"] = wf.to_json()
            return End(nxt.answer)
        if nxt.then is None:
            raise RunFailed(f"workflow {flow.name}: step {step_id!r} returned a {nxt.kind} "
                            "with no then= (only an action inside ctx.all may leave it out)",
                            STEP_MISSING)
        if nxt.then not in flow.steps:
            raise RunFailed(f"workflow {flow.name}: step {step_id!r} goes on to {nxt.then!r}, "
                            "which it does not define", STEP_MISSING)
        wf.then = nxt.then
        if nxt.kind == "all":
            # Each part keyed by the run id, the step id, its place and the steps executed.
            acts = tuple(
                Act(f"{step_id}#{wf.executed}.{i}", str(part.tool), part.arguments,
                    keys.workflow_step_key(str(state.run_id), f"{step_id}.{part_key(part, i)}",
                                           wf.executed))
                for i, part in enumerate(nxt.parts))
            wf.fan = [act.call_id for act in acts]
            state.counters["workflow"] = wf.to_json()
            return ActAll(acts)
        wf.call_id = f"{step_id}#{wf.executed}"
        state.counters["workflow"] = wf.to_json()
        # keyed by the run id, the step id and the steps executed
        key = keys.workflow_step_key(str(state.run_id), step_id, wf.executed)
        if nxt.kind == "first":
            # One call: its children each keyed as an all's part, by its key.
            children = [{"tool": part.tool, "arguments": part.arguments,
                         "key": part_key(part, i),
                         "step_key": keys.workflow_step_key(
                             str(state.run_id), f"{step_id}.{part_key(part, i)}", wf.executed)}
                        for i, part in enumerate(nxt.parts)]
            return Act(wf.call_id, FIRST_TOOL, {"children": children}, key)
        assert nxt.tool is not None
        return Act(wf.call_id, nxt.tool, nxt.arguments, key)
    raise RunFailed(f"workflow {flow.name}: {flow.max_code_steps} code steps from step "
                    f"{step_no} without an action or an end (a loop that never acts?)")


def output(state: RunState) -> Any:
    """The answer a workflow run ended with (sealed with its final step)."""
    wf = WorkflowState.of(state)
    return wf.answer if wf is not None else None
