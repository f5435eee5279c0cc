"""Durable workflows: a routine written in code, resumed after a crash like an agent run.

A :class:`Workflow` is a set of named steps.  Each step is a function of a
:class:`WorkflowContext` that returns what comes next: plain code goes on to another
step (:meth:`~WorkflowContext.goto`: a sequence, a branch, a loop back) or ends the run
with an answer (:meth:`~WorkflowContext.end`); a step that acts calls one of the app's
tools (:meth:`~WorkflowContext.call`), sleeps (:meth:`~WorkflowContext.sleep`), waits
for a signal (:meth:`~WorkflowContext.wait_signal`), hands a question to an agent run
(:meth:`~WorkflowContext.agent`) or starts a child workflow run
(:meth:`~WorkflowContext.workflow`), or several calls and child runs at once
(:meth:`~WorkflowContext.all`: waiting for all; :meth:`~WorkflowContext.first`: several
child runs, waiting for the first to end), then goes on to the step it names.  A call of a tool
is the tool's in every way: its classification, gates (a hold waits for a person),
step key, reader and settlement.

A workflow run is a run: the same lease, checkpoints, sweep, loss counting and
``agent.run.crash_resumed`` audit.  Before each action the run writes a sealed
checkpoint with its state (the step, the steps executed, :attr:`WorkflowContext.vars`
and the results so far), so a resumed run settles the action it left and goes on from
there; the code before it is never run again.  Each action's step key is derived from
the run id, the step id and the steps executed: a retry and a resume send the same key,
a loop back to the step a new one.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.agent import RunInfo
from ticketiq_pg.errors import InvalidAction

__all__ = ["Workflow", "WorkflowContext", "WorkflowNext", "STEP_ID"]

#: A step id: a letter or underscore, then up to 99 of letters, digits, ``_ . -``.
STEP_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")

StepFunction = Callable[["WorkflowContext"], "WorkflowNext | Awaitable[WorkflowNext]"]


@dataclass(frozen=True, slots=True)
class WorkflowNext:
    """What a step returns: the next step, or the action to take before it.

    Built by the :class:`WorkflowContext` methods; ``kind`` is ``goto``, ``end``,
    ``call``, ``sleep``, ``signal``, ``agent``, ``workflow``, ``all`` or ``first``.
    """

    kind: str
    then: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    answer: Any = None
    #: The actions of an ``all`` or a ``first``: made at once, in this order.
    parts: tuple[WorkflowNext, ...] = ()
    #: A child run's key within an ``all`` or a ``first`` (None: its place).
    key: str | None = None


@dataclass
class WorkflowContext:
    """What a step sees: the run, its input, its durable variables and results.

    ``vars`` is the workflow's own state (JSON values): what a step puts there is
    carried in the run's sealed checkpoints and found again after a resume.
    ``results`` holds the last result of each acting step, by step id.
    """

    run: RunInfo
    input: Any
    step_id: str
    steps_executed: int
    vars: dict[str, Any]
    results: dict[str, Any]
    #: The run's recorded :meth:`patched` decisions (carried in its checkpoints).
    patches: dict[str, bool] = field(default_factory=dict)
    #: Whether the run meets this step's code for the first time (no code without a
    #: patch's check ran it before): what a first :meth:`patched` check answers.
    first_visit: bool = True

    def patched(self, patch_id: str) -> bool:
        """Whether this run takes the new branch of the change ``patch_id``.

        True for a run that has not passed this point: it meets this step's code for the
        first time, so no code without the check ran it.  False for a run that ran this
        step before, under code without the check (an older version's, in a loop or a
        deploy).  The first answer is recorded in the run's checkpoints and every later
        check of ``patch_id`` gives it again, on any process and after any resume.  A
        change that spans steps checks in its first step and keeps the answer in
        :attr:`vars` for the later ones (a run that passed that step under older code has
        no such var)::

            ctx.vars["sms"] = ctx.patched("sms-instead-of-mail")
        """
        if not isinstance(patch_id, str) or not STEP_ID.match(patch_id):
            raise ValueError(f"a patch id is a step id (letters, digits, _ . -): {patch_id!r}")
        if patch_id not in self.patches:
            if len(self.patches) >= MAX_PATCHES:
                raise ValueError(f"a run records at most {MAX_PATCHES} patch decisions")
            self.patches[patch_id] = self.first_visit
        return self.patches[patch_id]

    def goto(self, step: str) -> WorkflowNext:
        """Go on to ``step`` (later, or earlier: a loop back) without acting here."""
        return WorkflowNext("goto", then=_step_id(step))

    def end(self, answer: Any = None) -> WorkflowNext:
        """End the run with ``answer`` (a JSON value): sealed and handed on once."""
        return WorkflowNext("end", answer=answer)

    def call(self, tool: str, arguments: dict[str, Any] | None = None, *,
             then: str | None = None) -> WorkflowNext:
        """Call the app's tool ``tool`` with ``arguments``, then go on to ``then`` (left
        out only inside :meth:`all`).

        The result is ``results[<this step>]`` there.  A changing call is marked in doubt
        before it is made and settled, never blindly resent, if the process dies.
        """
        if not isinstance(tool, str) or not tool:
            raise ValueError("call: the tool is a non-empty name")
        if arguments is not None and not isinstance(arguments, dict):
            raise ValueError("call: the arguments are a JSON object")
        return WorkflowNext("call", then=_then(then), tool=tool, arguments=dict(arguments or {}))

    def sleep(self, seconds: float, *, then: str) -> WorkflowNext:
        """Sleep ``seconds`` (by the database clock), durably: no process holds the run
        meanwhile, and it wakes on whichever process is up when it is due."""
        if not isinstance(seconds, int | float) or not 0 <= seconds <= 1e9:
            raise ValueError("sleep: seconds from 0 to 1e9")
        return WorkflowNext("sleep", then=_step_id(then), tool=SLEEP_TOOL,
                            arguments={"seconds": float(seconds)})

    def wait_signal(self, name: str, *, then: str, timeout: float | None = None) -> WorkflowNext:
        """Wait for the signal ``name`` sent to this run (``POST /runs/{id}/signals/{name}``).

        The result is ``{"payload": ..., "timed_out": False}``, or ``{"payload": None,
        "timed_out": True}`` after ``timeout`` seconds without one.  Each signal is
        consumed once, by one wait.
        """
        if not isinstance(name, str) or not 0 < len(name) <= 200:
            raise ValueError("wait_signal: a name of 1 to 200 characters")
        if timeout is not None and (not isinstance(timeout, int | float)
                                    or not 0 <= timeout <= 1e9):
            raise ValueError("wait_signal: timeout in seconds from 0 to 1e9, or None")
        return WorkflowNext("signal", then=_step_id(then), tool=SIGNAL_TOOL,
                            arguments={"name": name, "timeout": timeout})

    def agent(self, input: Any, *, then: str | None = None, key: str | None = None
              ) -> WorkflowNext:
        """Start a child agent run of the app with ``input`` and wait for its answer, then
        go on to ``then`` (left out only inside :meth:`all` or :meth:`first`; ``key``:
        its name there, see :meth:`first`).

        Its delegation key is this step's key: a resumed workflow finds the child it
        started (its answer, or the child still running), never starts a second one.
        The result is ``{"child_run_id", "status", "answer"}``.
        """
        return WorkflowNext("agent", then=_then(then), tool=AGENT_TOOL,
                            arguments={"input": input}, key=_key(key))

    def workflow(self, name: str, input: Any = None, *, then: str | None = None,
                 key: str | None = None) -> WorkflowNext:
        """Start a child run of the app's workflow ``name`` with ``input`` and wait for it
        to end, then go on to ``then`` (left out only inside :meth:`all` or :meth:`first`;
        ``key``: its name there, see :meth:`first`).

        As :meth:`agent`: the child's delegation key is this step's key, so a resumed
        workflow finds the child it started (ended, running, or left by a lost process:
        taken over once), never starts a second one; a parent that may wait holds no
        lease while the child runs.  The result is ``{"child_run_id", "status",
        "output"}``: ``output`` is what the child's code ended with (``ctx.end``); a
        child that failed or was stopped gives ``status`` ``failed`` or ``stopped`` and
        its ``reason``, no ``output``.
        """
        if not isinstance(name, str) or not STEP_ID.match(name):
            raise ValueError(f"workflow: the name of one of the app's workflows: {name!r}")
        return WorkflowNext("workflow", then=_then(then), tool=CHILD_WORKFLOW_TOOL,
                            arguments={"workflow": name, "input": input}, key=_key(key))

    def all(self, *actions: WorkflowNext, then: str) -> WorkflowNext:
        """Make several calls and child runs at once and wait for all, then go on to
        ``then``.

        Each action is built by :meth:`call`, :meth:`agent` or :meth:`workflow` (its own
        ``then`` is not used); up to 64.  The result is the list of their results, in the
        order given: ``results[<this step>][i]``.  Each keeps its own guarantees: the changing calls
        are marked in doubt together just before they are sent, each child run has its
        own delegation key (a resumed workflow finds each child it started), and a
        resume settles each one on its own.
        """
        if not 1 <= len(actions) <= MAX_AT_ONCE:
            raise InvalidAction(f"all: 1 to {MAX_AT_ONCE} actions, not {len(actions)}")
        for action in actions:
            if not isinstance(action, WorkflowNext) or action.kind not in CHILD_OR_CALL:
                raise InvalidAction("all: each action is a ctx.call(...), a ctx.agent(...) "
                                    "or a ctx.workflow(...); sleep, wait_signal, goto and "
                                    "end are not made at once")
        _part_keys("all", actions)
        return WorkflowNext("all", then=_step_id(then), parts=tuple(actions))

    def first(self, *children: WorkflowNext, then: str) -> WorkflowNext:
        """Start several child runs at once and wait for the first of them to end, then
        go on to ``then``.

        Each child is built by :meth:`workflow` or :meth:`agent` (its own ``then`` is not
        used); 1 to 64.  The run holds no lease while it waits.  The result,
        ``results[<this step>]``, is the first child's result (as :meth:`workflow` or
        :meth:`agent` gives it: ``child_run_id``, ``status``, its ``output`` or
        ``answer``, or its ``reason``) with ``first``, its place in the order given,
        ``key``, its key (``key=`` on the child, else its place as a string), and
        ``children``, every child's run id in that order.  The first to end is the first
        whatever its status: a child that failed or was stopped first is the result.

        The choice is written once, in the database, as the child ends: a run resumed
        after a crash is told the same child, never another that ended meanwhile.  The
        other children keep running to their own end, each once (stop one by its run
        id if its work is no longer wanted); their ends wake nothing and are not this
        step's results.  A later step that wants them reads them by their run ids.

        Each child's delegation key is this step's key with its key, so a resumed
        workflow finds each child it started, never starts a second one; two children
        of one key are refused (:class:`~ticketiq_pg.errors.InvalidAction`), as is a
        ``first`` of no child.
        """
        if not 1 <= len(children) <= MAX_AT_ONCE:
            raise InvalidAction(f"first: 1 to {MAX_AT_ONCE} child runs, not {len(children)}")
        for child in children:
            if not isinstance(child, WorkflowNext) or child.kind not in CHILDREN:
                raise InvalidAction("first: each child is a ctx.workflow(...) or a "
                                    "ctx.agent(...); calls, waits, goto and end do not race")
        _part_keys("first", children)
        return WorkflowNext("first", then=_step_id(then), parts=tuple(children))


#: The names of the actions that are not the app's tools (a workflow's waits and child runs).
SLEEP_TOOL = "workflow.sleep"
SIGNAL_TOOL = "workflow.signal"
AGENT_TOOL = "workflow.agent"
CHILD_WORKFLOW_TOOL = "workflow.child"
#: The action of a :meth:`WorkflowContext.first` (its children in its arguments).
FIRST_TOOL = "workflow.first"
#: The actions :meth:`WorkflowContext.all` makes at once.
CHILD_OR_CALL = ("call", "agent", "workflow")
#: The child runs :meth:`WorkflowContext.first` starts.
CHILDREN = ("agent", "workflow")
#: The most actions one ``all`` makes at once.
MAX_AT_ONCE = 64
#: The most :meth:`WorkflowContext.patched` decisions one run records.
MAX_PATCHES = 100


class Workflow:
    """A workflow definition: named steps, a first step, a name and a version.

    ::

        flow = Workflow("escalation", version="2")

        @flow.step(first=True)
        def read(ctx):
            return ctx.call("get_ticket", {"ticket_id": ctx.input["ticket"]}, then="decide")

    The name and version are recorded with each run, and a run stays on the version it
    started with: it is resumed, woken and adopted only by a process whose code runs
    that version (its own, or one of ``compatible``: earlier versions whose steps it
    keeps, its changes behind :meth:`WorkflowContext.patched`).  In a rolling deploy a
    run the new code cannot run waits for a worker that can (``ticketiq-pg status``
    lists it), never failed for the deploy.  A resume that finds a step missing fails
    the run (``agent.run.workflow_step_missing``) rather than jump elsewhere.
    ``signals`` names the signals the workflow waits for: a signal of another name is
    refused (``UnknownSignal``, HTTP 422), and a step that waits for one is a bug that
    fails the run; None (the default) takes any name.  ``kind`` is the entry kind that
    starts it (``POST /runs`` with ``"kind"``; default: the name); a cron schedule
    starts it with ``{"workflow": name, ...}`` in its payload.
    """

    def __init__(self, name: str, version: str = "1", *, kind: str | None = None,
                 max_code_steps: int = 1000, signals: Iterable[str] | None = None,
                 compatible: Iterable[str] = ()) -> None:
        if not isinstance(name, str) or not STEP_ID.match(name):
            raise ValueError(f"a workflow name is a step id (letters, digits, _ . -): {name!r}")
        if not _version_ok(version):
            raise ValueError("a workflow version is a string of 1 to 100 characters")
        if isinstance(compatible, str):
            raise ValueError("compatible: a list of versions, not one string")
        compatible = tuple(dict.fromkeys(compatible))
        if len(compatible) > 99 or not all(_version_ok(v) for v in compatible):
            raise ValueError("compatible: at most 99 versions, each of 1 to 100 characters")
        if signals is not None:
            if isinstance(signals, str):
                raise ValueError("signals: a list of names, not one string")
            signals = tuple(dict.fromkeys(signals))
            if len(signals) > 100 or not all(isinstance(s, str) and 0 < len(s) <= 200
                                              for s in signals):
                raise ValueError("signals: at most 100 names of 1 to 200 characters")
        self.name = name
        self.version = version
        #: Earlier versions whose runs this code runs too (their steps kept).
        self.compatible: tuple[str, ...] = tuple(v for v in compatible if v != version)
        #: The signals its steps wait for (None: not declared, any name).
        self.signals: tuple[str, ...] | None = signals
        self.kind = kind or name.lower()
        self.steps: dict[str, StepFunction] = {}
        self.first: str | None = None
        #: Code steps one decision may take before an action or the end (a loop guard).
        self.max_code_steps = max_code_steps

    def step(self, name: str | None = None, *, first: bool = False
             ) -> Callable[[StepFunction], StepFunction]:
        """Decorator: register a step (its id: ``name``, or the function's name).

        ``first=True`` marks where a run starts (default: the first step registered).
        The function is returned unchanged; it may be ``async``.
        """
        if name is not None:
            _step_id(name)

        def register(fn: StepFunction) -> StepFunction:
            step_id = _step_id(name or fn.__name__)
            if step_id in self.steps:
                raise ValueError(f"workflow {self.name}: step {step_id!r} is defined twice")
            self.steps[step_id] = fn
            if first or self.first is None:
                self.first = step_id
            return fn

        return register

    async def run_step(self, step_id: str, ctx: WorkflowContext) -> WorkflowNext:
        """Run one step's code; what it returns must be a :class:`WorkflowNext`."""
        result = self.steps[step_id](ctx)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, WorkflowNext):
            raise TypeError(f"workflow {self.name}: step {step_id!r} returned "
                            f"{type(result).__name__}, not what a ctx method builds")
        return result

    def runs_versions(self) -> tuple[str, ...]:
        """The versions whose runs this code runs: its own, then the compatible ones."""
        return (self.version, *self.compatible)

    def declaration(self) -> dict[str, Any]:
        """What a process says of this workflow at its start (``ticketiq.declare_workflows``)."""
        return {"name": self.name, "version": self.version, "kind": self.kind,
                "runs": list(self.runs_versions()),
                "signals": None if self.signals is None else list(self.signals)}

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, version={self.version!r}, steps={list(self.steps)})"


def _version_ok(version: object) -> bool:
    return isinstance(version, str) and 0 < len(version) <= 100


def part_key(action: WorkflowNext, place: int) -> str:
    """The key of an action of an ``all`` or a ``first``: its ``key=``, else its place."""
    return action.key if action.key is not None else str(place)


def _part_keys(what: str, actions: tuple[WorkflowNext, ...]) -> None:
    seen: set[str] = set()
    for place, action in enumerate(actions):
        key = part_key(action, place)
        if key in seen:
            raise InvalidAction(f"{what}: two actions of the key {key!r} (each child's key "
                                "is its key= or its place, and keys one delegation)")
        seen.add(key)


def _key(key: str | None) -> str | None:
    if key is not None and (not isinstance(key, str) or not STEP_ID.match(key)):
        raise InvalidAction(f"a child's key is a step id (letters, digits, _ . -): {key!r}")
    return key


def _then(step: str | None) -> str | None:
    return None if step is None else _step_id(step)


def _step_id(step: str) -> str:
    if not isinstance(step, str) or not STEP_ID.match(step):
        raise ValueError(f"a step id is a letter or _ then letters, digits, _ . -: {step!r}")
    return step
