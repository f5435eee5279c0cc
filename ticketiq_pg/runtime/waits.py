"""Calls that wait: an approval a person decides, a child run a delegation starts, a
workflow's durable sleep or signal.

:class:`Waits` is the part of the call executor (:mod:`ticketiq_pg.runtime.calls`) that
waits.  A run that may wait gives its lease up (suspends) instead of holding it; before it
does, the outcomes of the calls its step already made are recorded
(:func:`~ticketiq_pg.runtime.call_rows.record_made`), so the attempt that wakes it finds
them done.  A delegation starts its child through :class:`ChildRuns`, the engine's own
start/run/resume, handed in when the engine is built: a child is another run of the same
engine, never a call back into the step that asked for it.

A workflow wait (:meth:`Waits.workflow_wait`) is the one call of its step, classified a
read: ``ticketiq.wait_run`` keys it by the step key, so made again on a resume it finds the
timer its first attempt set (the same due time) or the signal it consumed (the same
payload): a timer fires once, a signal is consumed once.  A wait not over gives the lease
up in the same statement; the timer (``ticketiq.fire_due_timers``, called by every
process's entry pump) or the signal (``ticketiq.send_signal``) wakes it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from ticketiq_pg.agent import CallContext, Tool
from ticketiq_pg.db.rows import AdoptedRun
from ticketiq_pg.runtime import call_rows
from ticketiq_pg.runtime.run_state import (
    Drained,
    RunOutcome,
    RunState,
    Suspended,
)
from ticketiq_pg.runtime.setup import EngineSetup
from ticketiq_pg.runtime.workflow_engine import Workflows
from ticketiq_pg.workflow import CHILD_WORKFLOW_TOOL, FIRST_TOOL, SLEEP_TOOL

log = logging.getLogger(__name__)


class ChildRuns(Protocol):
    """How a delegation runs its child: the engine's own entry points."""

    #: The process's workflows: a child workflow run's kind.
    workflows: Workflows

    async def start(self, **kwargs: Any) -> RunState | RunOutcome: ...

    async def run(self, state: RunState) -> RunOutcome: ...

    async def resume(self, adopted: AdoptedRun, sent_at: float) -> RunOutcome: ...


class Waits:
    """Approvals, child runs and workflow waits, for the call executor."""

    def __init__(self, setup: EngineSetup, children: ChildRuns) -> None:
        self.setup = setup
        self.children = children

    async def before_suspend(self, state: RunState, step_no: int) -> None:
        """What a run records before it gives its lease up to wait."""
        await call_rows.record_made(self.setup.db, self.setup.sealer, state, step_no)

    # -- approvals --------------------------------------------------------

    async def await_approval(
        self, state: RunState, step_no: int, call: dict[str, Any], reason: str
    ) -> _Decision:
        """File (or find) the call's approval request and wait for a person's decision.

        The run keeps its lease while it waits (the process renews it); a
        run lost meanwhile is resumed elsewhere, where filing again
        coalesces with this request.
        """
        self.setup.leases.check(state.run_id, state.epoch)
        filed = await self.setup.db.waits.request_approval(
            state.run_id, state.epoch, step_no, call["call_id"],
            {"reason": reason, "tool": call["tool"]},
        )
        approval = filed
        if approval.state == "waiting" and state.info.may_wait:
            # A run that may wait gives its lease up; the decision wakes it.
            await self.before_suspend(state, step_no)
            await self.setup.db.suspend_run(
                state.run_id, state.epoch, f"approval:{filed.approval_id}",
                {"call_id": call["call_id"]},
            )
            raise Suspended(f"waiting for approval {filed.approval_id}")
        while approval.state == "waiting":
            if self.setup.draining:
                raise Drained(f"shut down while waiting for approval {filed.approval_id}")
            await self.setup.poll(state)
            self.setup.leases.check(state.run_id, state.epoch)
            approval = await self.setup.db.waits.get_approval(filed.approval_id)
        return _Decision(
            approval_id=filed.approval_id,
            state=approval.state,
            coalesced=filed.coalesced,
            first_state=filed.state,
            decided_by=approval.decided_by,
            reason=approval.reason,
        )


    # -- delegation -------------------------------------------------------

    async def delegate(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """Run a child agent (or workflow) for a delegation, or find the one its key
        started.

        The delegation key is the call's step key, so asking again (after a
        crash) finds the same child: its sealed answer, a child still alive
        (wait for it), or a child whose lease lapsed (take it over, once).
        A child workflow's run is of its workflow's entry kind, so it is adopted,
        listed and signalled as any run of that workflow.
        """
        if tool.name == FIRST_TOOL:
            return await self.delegate_first(state, context)
        key = context.step_key
        child_input = tool.child_input(context) if tool.child_input else context.arguments
        workflow = tool.name == CHILD_WORKFLOW_TOOL
        entry_point = self._entry_point(tool.name, context.arguments)
        if entry_point is None:  # checked when the step was decided; a definition gone since
            return _no_workflow(context.arguments)
        started = await self.children.start(
            **self._child(state, tool.name, context.call_id, entry_point, child_input, key))
        if isinstance(started, RunState):
            _waits_for_others(state)  # its child, driven here, goes first
            outcome = await self.children.run(started)
            if outcome.status in ("completed", "failed", "stopped"):
                return _child_result(started.run_id, outcome.status, outcome.answer,
                                     outcome.reason, workflow)
            # Released, lost or suspended: the child is not finished; its
            # answer is found by its key (and a lost parent stops here).
            self.setup.leases.check(state.run_id, state.epoch)
            if outcome.status == "released":
                raise Drained(f"child run {started.run_id} was released")
        if key is None:
            # A positional call id gives no delegation key: nothing to ask again by.
            return {"error": "the child run did not finish here and has no delegation key",
                    "outcome": "unknown"}
        return await self.await_child(state, key, workflow)


    def _entry_point(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """A child run's entry kind: its workflow's, or a delegation's (None: a workflow
        this process does not define)."""
        if tool != CHILD_WORKFLOW_TOOL:
            return "delegation"
        flow = self.children.workflows.child(str(arguments.get("workflow")))
        return None if flow is None else flow.kind

    @staticmethod
    def _child(state: RunState, tool: str, call_id: str, entry_point: str, child_input: Any,
               key: str | None) -> dict[str, Any]:
        """How a child run is started: its parent's owner and channel, its delegation key."""
        return {"owner": state.info.owner, "run_as": state.info.run_as,
                "channel": state.info.channel, "entry_point": entry_point,
                "may_wait": state.info.may_wait, "input": child_input, "idempotency_key": key,
                "correlation_id": f"{state.info.correlation_id}/{call_id}",
                "meta": {"parent_call_id": call_id, "tool": tool,
                         "parent_run_id": str(state.run_id)},
                "parent_run_id": state.run_id}

    async def delegate_first(self, state: RunState, context: CallContext) -> Any:
        """Start (or find, by their keys) a ``ctx.first``'s child runs; the first to end.

        A child started here joins the group, then is handed over at once (released:
        whichever process adopts it first runs it, each once; a child of a group is
        adopted whatever its parent is doing), so none of them is this run's to finish:
        the run waits for the first end holding no lease (suspended on the group's key),
        or, if it may not wait, polls.  The first end is written once by the database
        (``ticketiq.await_first``), so asking again after a crash gives the same child.
        """
        children = context.arguments.get("children") or []
        group = context.step_key
        if group is None or not children:
            return {"error": "a first of no child or with no step key", "outcome": "unknown"}
        starts = []
        for child in children:
            entry_point = self._entry_point(child["tool"], child["arguments"])
            if entry_point is None:
                return _no_workflow(child["arguments"])  # nothing started: checked first
            starts.append(self._child(state, child["tool"], f"{context.call_id}.{child['key']}",
                                      entry_point, child["arguments"].get("input"),
                                      child["step_key"]))
        run_ids: list[uuid.UUID] = []
        held: list[RunState] = []
        for kwargs in starts:
            started = await self.children.start(**kwargs)
            if isinstance(started, RunState):
                held.append(started)
            run_ids.append(started.run_id)
        self.setup.faults.reach("children_started", state.step)
        if state.info.may_wait:
            await self.before_suspend(state, state.step)
        while True:
            self.setup.leases.check(state.run_id, state.epoch)
            end = await self.setup.db.waits.await_first(
                state.run_id, state.epoch, group, run_ids, {"call_id": context.call_id})
            for child in held:
                # In the group now, so any process adopts it (never left to this run,
                # which does not run it): handed over as a released run, at once.
                await self.setup.db.release_run(child.run_id, child.epoch, "first of", {})
                self.setup.leases.drop(child.run_id, child.epoch)
            held = []
            if end.outcome == "first" and end.place is not None:
                break
            if end.outcome == "suspended":
                raise Suspended(f"waiting for the first of child runs {run_ids}")
            if self.setup.draining:
                raise Drained("shut down while waiting for the first of its child runs")
            await self.setup.poll(state)
        first = children[end.place]
        found = await self.setup.db.waits.delegation_status(first["step_key"])
        assert found is not None  # it ended: its row is there
        workflow = first["tool"] == CHILD_WORKFLOW_TOOL
        result = (_child_result(found.run_id, "completed", found.answer, "", workflow)
                  if found.answer is not None else
                  _child_result(found.run_id, found.status, None, found.failure_reason or "",
                                workflow))
        return {**result, "first": end.place, "key": first["key"],
                "children": [str(run_id) for run_id in run_ids]}

    async def await_child(self, state: RunState, key: str, workflow: bool = False) -> Any:
        while True:
            self.setup.leases.check(state.run_id, state.epoch)
            if self.setup.draining:
                raise Drained("shut down while waiting for a child run")
            child = await self.setup.db.waits.delegation_status(key)
            if child is None:
                return {"error": f"no child run for delegation key {key}", "outcome": "unknown"}
            if child.answer is not None:
                return _child_result(child.run_id, "completed", child.answer, "", workflow)
            if child.status in ("failed", "stopped", "completed"):
                return _child_result(child.run_id, child.status, None,
                                     child.failure_reason or "", workflow)
            if child.status == "claimed" or child.lease_lapsed:
                sent = self.setup.leases.sent_at()
                adopted = await self.setup.db.take_over_child(
                    state.run_id, state.epoch, child.run_id, self.setup.holder,
                    self.setup.leases.ttl,
                    max_losses=self.setup.max_losses,
                )
                if adopted is not None:
                    _waits_for_others(state)  # its child's resume goes first
                    await self.children.resume(adopted, sent)
                    continue
            elif state.info.may_wait and child.status in ("running", "suspended"):
                # A child that runs, or waits itself (a workflow's sleep, an approval):
                # its end wakes the parent, which holds nothing meanwhile.
                await self.before_suspend(state, state.step)
                await self.setup.db.suspend_run(state.run_id, state.epoch, f"child:{child.run_id}",
                                          {"delegation_key": key})
                raise Suspended(f"waiting for child run {child.run_id}")
            await self.setup.poll(state)


    # -- a workflow's sleep or signal -----------------------------------------

    async def workflow_wait(self, state: RunState, step_no: int, call: dict[str, Any]) -> Any:
        """Make a wait: its result when it is over, else suspend the run (raises Suspended)."""
        key = call["step_key"]
        args = call["arguments"]
        if call["tool"] == SLEEP_TOOL:
            wait_key, seconds = f"timer:{state.run_id}:{key}", args.get("seconds")
        else:
            wait_key, seconds = f"signal:{state.run_id}:{args.get('name')}", args.get("timeout")
        await self.before_suspend(state, step_no)
        self.setup.leases.check(state.run_id, state.epoch)
        waited = await self.setup.db.waits.wait_run(state.run_id, state.epoch, key, wait_key,
                                                    seconds,
                                              {"call_id": call["call_id"]})
        if waited.outcome == "suspended":
            raise Suspended(f"waiting on {wait_key}")
        if call["tool"] == SLEEP_TOOL:
            return {"slept": True, "due_at": waited.due_at.isoformat() if waited.due_at else None}
        return {"payload": waited.payload, "timed_out": waited.outcome == "timeout"}


@dataclass(frozen=True, slots=True)
class _Decision:
    approval_id: uuid.UUID
    state: str
    coalesced: bool
    first_state: str
    decided_by: str | None
    reason: str | None


def _waits_for_others(state: RunState) -> None:
    """A resume that waits for others leaves the takeover's order (ResumesFirst): what it
    waits for may be among the runs the order holds."""
    if state.resuming is not None:
        state.resuming.end()


def _no_workflow(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"error": f"no workflow {arguments.get('workflow')!r} here", "outcome": "not_applied"}


def _child_result(run_id: uuid.UUID, status: str, answer: Any, reason: str,
                  workflow: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"child_run_id": str(run_id), "status": status}
    if answer is not None and workflow:
        # what the child's code ended with (its sealed answer's output)
        result["output"] = answer.get("output") if isinstance(answer, dict) else None
    elif answer is not None:
        result["answer"] = answer
    if reason:
        result["reason"] = reason
    return result
