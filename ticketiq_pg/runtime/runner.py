"""The durable step loop: checkpoint before acting, resume from the last written step.

For each model step that answers with tool calls, the runner

1. writes one sealed write-ahead checkpoint (conversation, the calls, the
   counters, history and delegation keys) before any call is made (I5);
2. for each call, asks the gates, marks a changing call in doubt (one more
   statement; a read is never marked), then makes it with its step key;
3. carries the results into the next step's checkpoint.

A final answer is sealed (write-once) and handed on at most once (I10).

A resumed run (adopted after a loss) is verified against its seal first
(I9), passes every gate again as it stands now, settles the calls its last
step left without blindly sending a write again (I6, I7), audits the resume
(I14) and asks the model only for the steps after the last one written (I8).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ticketiq_pg.agent import (
    AllowAll,
    AnswerDelivery,
    CallContext,
    Delivery,
    Gates,
    Model,
    ModelStep,
    RunInfo,
    StepRequest,
    Tool,
    ToolCall,
    Tools,
    assistant_message,
    is_changing,
    tool_message,
    user_message,
)
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.rows import AdoptedRun
from ticketiq_pg.errors import (
    InvalidPayload,
    LivenessUnconfirmed,
    NotOwner,
    SealMismatch,
    StepConflict,
    TicketIQError,
)
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.seal import Sealer

log = logging.getLogger(__name__)

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
    #: While a resumed attempt settles its last step's calls: the settlements
    #: so far, not yet audited (``record_resume``).  A call that suspends the
    #: run meanwhile audits them first, so every resume has its audit row (I14).
    unaudited: list[dict[str, Any]] | None = None
    #: The calls of the current step made so far, with their results and how:
    #: recorded before the run suspends, so they are not left in doubt.
    made: list[tuple[dict[str, Any], Any, str]] = field(default_factory=list)

    @property
    def run_id(self) -> uuid.UUID:
        return self.info.run_id


class _StopRequested(Exception):
    pass


class _Suspended(Exception):
    pass


class _Drained(Exception):
    """The process is shutting down while the run waits: it was released."""


class Runner:
    """Runs agent runs durably on behalf of one app process (the lease holder)."""

    def __init__(
        self,
        db: TicketIQ,
        leases: LeaseKeeper,
        sealer: Sealer,
        model: Model,
        tools: Tools,
        *,
        gates: Gates | None = None,
        agent_loop: str = "main",
        answer_retention: float = 86400.0,
        deliver: Delivery | None = None,
        deliveries: Mapping[str, AnswerDelivery] | None = None,
        faults: FaultPoints | None = None,
        max_losses: int = 2,
        poll_interval: float = 0.5,
    ) -> None:
        self.db = db
        self.leases = leases
        self.sealer = sealer
        self.model = model
        self.tools = tools
        self.gates = gates or AllowAll()
        self.agent_loop = agent_loop
        self.answer_retention = answer_retention
        self.deliver = deliver
        self.deliveries = dict(deliveries or {})
        self.faults = faults or FaultPoints()
        self.max_losses = max_losses
        self.poll_interval = poll_interval
        #: Set by the process at graceful shutdown: each run is released at
        #: its next step boundary, with the results it already has.
        self.draining = False

    @property
    def holder(self) -> str:
        return self.leases.holder

    # -- starting ---------------------------------------------------------

    async def start(
        self,
        *,
        owner: str,
        run_as: str,
        channel: str,
        entry_point: str,
        may_wait: bool = False,
        input: Any = None,
        idempotency_key: str | None = None,
        correlation_id: str | None = None,
        meta: dict[str, Any] | None = None,
        run_id: uuid.UUID | None = None,
        parent_run_id: uuid.UUID | None = None,
        durable: bool = True,
    ) -> RunState | RunOutcome:
        """Write the run and its lease; a repeated idempotency key gives status 'exists'.

        With a liveness token (:mod:`ticketiq_pg.runtime.liveness`) it first waits
        until the token is confirmed, as adoption does: a peer that found
        this process's session ended would take a run started meanwhile over
        at once, a loss counted for nothing.  Still unconfirmed after the
        lease TTL, it raises :class:`~ticketiq_pg.errors.LivenessUnconfirmed`
        and writes nothing.  A child's start (``parent_run_id``) does not wait:
        it is its parent's call, which waited for the token and checked the
        parent's lease (:meth:`LeaseKeeper.ready`) just before it was made.
        """
        if parent_run_id is None:
            await self._until_live()
        sent = self.leases.sent_at()
        started = await self.db.start_run(
            holder=self.holder,
            owner=owner,
            run_as=run_as,
            channel=channel,
            entry_point=entry_point,
            may_wait=may_wait,
            ttl=self.leases.ttl,
            input=input,
            correlation_id=correlation_id,
            idempotency_key=idempotency_key,
            meta=meta,
            run_id=run_id,
            parent_run_id=parent_run_id,
            durable=durable,
        )
        if not started.created or started.epoch is None:
            return RunOutcome(started.run_id, "exists")
        self.leases.hold(started.run_id, started.epoch, sent)
        info = RunInfo(
            run_id=started.run_id,
            owner=owner,
            run_as=run_as,
            channel=channel,
            entry_point=entry_point,
            may_wait=may_wait,
            correlation_id=started.correlation_id,
        )
        return self.fresh_state(info, started.epoch, input, durable)

    async def _until_live(self) -> None:
        """Return once this process's liveness token is confirmed (at once without one)."""
        liveness = self.leases.liveness
        if liveness is None or liveness.may_call():
            return
        clock = liveness.clock
        deadline = clock() + self.leases.ttl

        def check() -> None:
            if self.draining:
                raise RuntimeError(f"process {self.holder} is shutting down; no run started")
            if clock() >= deadline:
                raise LivenessUnconfirmed(
                    f"process {self.holder}: liveness token unconfirmed for "
                    f"{self.leases.ttl:g}s; no run started"
                )

        await liveness.until_may_call(check, lambda: deadline - clock())

    @staticmethod
    def fresh_state(info: RunInfo, epoch: int, input: Any, durable: bool = True) -> RunState:
        """The state of a run that has taken no step yet."""
        return RunState(
            info=info,
            epoch=epoch,
            input=input,
            conversation=[user_message(input)],
            counters={"model_steps": 0, "tool_calls": 0},
            durable=durable,
        )

    async def start_and_run(self, **kwargs: Any) -> RunOutcome:
        state = await self.start(**kwargs)
        if isinstance(state, RunOutcome):
            return state
        return await self.run(state)

    # -- running ----------------------------------------------------------

    async def run(self, state: RunState) -> RunOutcome:
        """Drive the run to its end in this process, or until it is no longer ours."""
        return await self._guarded(state.run_id, state.epoch, self._drive(state))

    async def _guarded(self, run_id: uuid.UUID, epoch: int, work: Any) -> RunOutcome:
        try:
            return await work
        except NotOwner as exc:
            log.warning("run %s is no longer ours: %s", run_id, exc)
            return RunOutcome(run_id, "lost", reason=str(exc))
        except _Suspended as exc:
            return RunOutcome(run_id, "suspended", reason=str(exc))
        except _Drained as exc:
            return RunOutcome(run_id, "released", reason=str(exc))
        except (InvalidPayload, StepConflict) as exc:
            # The same step would fail the same way on every resume: fail now.
            reason = f"{type(exc).__name__}: {exc}"
            log.error("run %s failed: %s", run_id, reason)
            try:
                await self.db.fail_run(run_id, epoch, reason)
            except NotOwner:
                return RunOutcome(run_id, "lost", reason=reason)
            return RunOutcome(run_id, "failed", reason=reason)
        except Exception:
            # Stop renewing: the lease lapses, the sweep counts a loss and
            # another attempt resumes from the last checkpoint.
            log.exception("run %s abandoned after an error", run_id)
            raise
        finally:
            self.leases.drop(run_id, epoch)

    async def _drive(self, state: RunState) -> RunOutcome:
        while True:
            if self.draining and state.durable:
                await self.db.release_run(
                    state.run_id, state.epoch, "shutdown", state.last_results
                )
                return RunOutcome(state.run_id, "released", reason="shutdown")
            verdict = await self.gates.check_run(state.info)
            if not verdict.allowed:
                return await self._fail(state, verdict.reason, "agent.run.gate_refused")
            step_no = state.step + 1
            await self.leases.ready(state.run_id, state.epoch)  # the model is a call too
            answer = await self.model.step(
                StepRequest(
                    run_id=state.run_id,
                    step=step_no,
                    # A copy of the list: the model reads it, it must not change it.
                    conversation=list(state.conversation),
                    input=state.input,
                )
            )
            if answer.final:
                return await self._finish(state, step_no, answer)
            calls = self._plan_calls(state, step_no, answer)
            body = self._checkpoint_body(state, step_no, answer, calls)
            self.faults.reach("before_checkpoint", step_no)
            self.leases.check(state.run_id, state.epoch)
            if state.durable:
                # Where it can, the canonical text the seal covers is what is sent:
                # the body is encoded once.
                seal, key_id, to_send = self.sealer.seal_encoded(
                    "checkpoint", state.run_id, step_no, body
                )
                written = await self.db.write_checkpoint(
                    state.run_id, state.epoch, step_no, to_send, seal, key_id
                )
                self.faults.reach("after_checkpoint", step_no)
                if written.stop_requested:
                    self._adopt_body(state, step_no, body)
                    return await self._stop(state)
            self._adopt_body(state, step_no, body)
            results: list[tuple[Any, str]] = []
            state.made = []
            try:
                for call in calls:
                    results.append(await self._make_call(state, step_no, call))
                    state.made.append((call, *results[-1]))
            except _StopRequested:
                return await self._stop(state)
            except _Drained:
                # Shutting down while a call waits (an approval, a child): hand
                # the run over with the results it has; the waiting call stays
                # as it is, for the adopter to route or ask again.
                made = {c["call_id"]: r for c, (r, _) in zip(calls, results, strict=False)}
                await self.db.release_run(state.run_id, state.epoch, "shutdown", made)
                raise
            self._carry_results(state, calls, [result for result, _ in results])

    def _plan_calls(
        self, state: RunState, step_no: int, answer: ModelStep
    ) -> list[dict[str, Any]]:
        return [
            {
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": call.arguments,
                "classification": self.tools.classify(call.tool),
                "step_key": keys.agent_call_key(
                    state.info.correlation_id, self.agent_loop, step_no, call.call_id
                ),
            }
            for call in answer.calls
        ]

    def _checkpoint_body(
        self,
        state: RunState,
        step_no: int,
        answer: ModelStep,
        calls: list[dict[str, Any]],
    ) -> dict[str, Any]:
        delegation_keys = dict(state.delegation_keys)
        for call in calls:
            if call["classification"] in ("delegation", "subagent_with_tools", "remote_agent"):
                delegation_keys[call["call_id"]] = call["step_key"]
        return {
            "conversation": [*state.conversation, assistant_message(answer)],
            "calls": calls,
            "counters": {
                "model_steps": step_no,
                "tool_calls": int(state.counters.get("tool_calls", 0)) + len(calls),
                "agent_loop": self.agent_loop,
            },
            "history": [*state.history, {"step": step_no, "calls": [c["call_id"] for c in calls]}],
            "delegation_keys": delegation_keys,
            "outcomes": state.outcomes,
        }

    @staticmethod
    def _adopt_body(state: RunState, step_no: int, body: dict[str, Any]) -> None:
        state.step = step_no
        state.conversation = list(body["conversation"])
        state.counters = dict(body["counters"])
        state.history = list(body["history"])
        state.delegation_keys = dict(body["delegation_keys"])
        state.outcomes = {}
        state.last_results = {}

    @staticmethod
    def _carry_results(
        state: RunState, calls: list[dict[str, Any]], results: list[Any]
    ) -> None:
        for call, result in zip(calls, results, strict=True):
            state.conversation.append(tool_message(call["call_id"], result))
            state.last_results[call["call_id"]] = result
            if is_changing(call["classification"]):
                state.outcomes[call["call_id"]] = result

    def _context(
        self, state: RunState, step_no: int, call: dict[str, Any], classification: str,
        resumed: bool, approval_id: Any = None,
    ) -> CallContext:
        # An approved call is keyed by its approval, however often it is sent.
        step_key = keys.approval_key(str(approval_id)) if approval_id else call.get("step_key")
        return CallContext(
            run=state.info,
            step=step_no,
            call_id=call["call_id"],
            tool=call["tool"],
            arguments=call["arguments"],
            classification=classification,
            step_key=step_key,
            resumed=resumed,
        )

    async def _make_call(
        self, state: RunState, step_no: int, call: dict[str, Any], resumed: bool = False
    ) -> tuple[Any, str]:
        """Route one call through the gates, mark it if it changes something, make it.

        Returns the result and how it was obtained: made, skipped (refused,
        rejected, unknown tool) or, on a resume that found the call's
        approval request, coalesced (still waiting) or read_decision.
        """
        tool_call = ToolCall(call["call_id"], call["tool"], call["arguments"])
        recorded = call["classification"]
        tool = self.tools.get(call["tool"])
        current = tool.classification if tool else "write"
        verdict = await self.gates.check_call(state.info, tool_call, recorded)
        if not verdict.allowed:
            return {"error": "refused", "reason": verdict.reason}, "skipped"
        if tool is None:
            return {"error": f"unknown tool {call['tool']}"}, "skipped"
        how = "made"
        approval_id = None
        if verdict.needs_approval and (is_changing(recorded) or is_changing(current)):
            approval = await self._await_approval(state, step_no, call, verdict.reason)
            if approval.coalesced:
                how = "coalesced" if approval.first_state == "waiting" else "read_decision"
            if approval.state != "approved":
                result = {"rejected": True, "approval_id": str(approval.approval_id),
                          "by": approval.decided_by, "reason": approval.reason}
                return result, how if how != "made" else "skipped"
            approval_id = approval.approval_id
        classification = recorded
        if state.durable and (is_changing(recorded) or is_changing(current)):
            self.leases.check(state.run_id, state.epoch)
            mark = await self.db.mark_in_doubt(
                state.run_id, state.epoch, step_no, call["call_id"], current
            )
            self.faults.reach("after_mark", step_no)
            if mark.stop_requested:
                raise _StopRequested
            classification = mark.marked_classification
        await self.leases.ready(state.run_id, state.epoch)
        context = self._context(state, step_no, call, classification, resumed, approval_id)
        result = await self._invoke(state, tool, context)
        self.faults.reach("after_call", step_no)
        return result, how

    async def _invoke(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        try:
            if tool.subagent:
                return await self._delegate(state, tool, context)
            assert tool.invoke is not None
            return await tool.invoke(context)
        except (NotOwner, _Drained, _Suspended):
            raise
        except (psycopg.Error, TicketIQError):
            if tool.subagent:
                # The child may be alive: never turn that into a final
                # outcome; the run is resumed and asks again by its key.
                raise
            return {"error": "the database failed during the call", "outcome": "unknown"}
        except Exception as exc:  # noqa: BLE001 - the model is told what happened
            result: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}"}
            if is_changing(context.classification):
                result["outcome"] = "unknown"
            return result

    # -- approvals --------------------------------------------------------

    async def _await_approval(
        self, state: RunState, step_no: int, call: dict[str, Any], reason: str
    ) -> _Decision:
        """File (or find) the call's approval request and wait for a person's decision.

        The run keeps its lease while it waits (the process renews it); a
        run lost meanwhile is resumed elsewhere, where filing again
        coalesces with this request.
        """
        self.leases.check(state.run_id, state.epoch)
        filed = await self.db.request_approval(
            state.run_id, state.epoch, step_no, call["call_id"],
            {"reason": reason, "tool": call["tool"]},
        )
        approval = filed
        if approval.state == "waiting" and state.info.may_wait:
            # A run that may wait gives its lease up; the decision wakes it.
            await self._before_suspend(state, step_no)
            await self.db.suspend_run(
                state.run_id, state.epoch, f"approval:{filed.approval_id}",
                {"call_id": call["call_id"]},
            )
            raise _Suspended(f"waiting for approval {filed.approval_id}")
        while approval.state == "waiting":
            if self.draining:
                raise _Drained(f"shut down while waiting for approval {filed.approval_id}")
            await asyncio.sleep(self.poll_interval)
            self.leases.check(state.run_id, state.epoch)
            approval = await self.db.get_approval(filed.approval_id)
        return _Decision(
            approval_id=filed.approval_id,
            state=approval.state,
            coalesced=filed.coalesced,
            first_state=filed.state,
            decided_by=approval.decided_by,
            reason=approval.reason,
        )

    # -- delegation -------------------------------------------------------

    async def _delegate(self, state: RunState, tool: Tool, context: CallContext) -> Any:
        """Run a child agent for a delegation, or find the one its key started.

        The delegation key is the call's step key, so asking again (after a
        crash) finds the same child: its sealed answer, a child still alive
        (wait for it), or a child whose lease lapsed (take it over, once).
        """
        key = context.step_key
        child_input = tool.child_input(context) if tool.child_input else context.arguments
        started = await self.start(
            owner=state.info.owner,
            run_as=state.info.run_as,
            channel=state.info.channel,
            entry_point="delegation",
            may_wait=state.info.may_wait,
            input=child_input,
            idempotency_key=key,
            correlation_id=f"{state.info.correlation_id}/{context.call_id}",
            meta={"parent_call_id": context.call_id, "tool": tool.name},
            parent_run_id=state.run_id,
        )
        if isinstance(started, RunState):
            outcome = await self.run(started)
            if outcome.status in ("completed", "failed", "stopped"):
                return _child_result(started.run_id, outcome.status, outcome.answer,
                                     outcome.reason)
            # Released, lost or suspended: the child is not finished; its
            # answer is found by its key (and a lost parent stops here).
            self.leases.check(state.run_id, state.epoch)
            if outcome.status == "released":
                raise _Drained(f"child run {started.run_id} was released")
        if key is None:
            # A positional call id gives no delegation key: nothing to ask again by.
            return {"error": "the child run did not finish here and has no delegation key",
                    "outcome": "unknown"}
        return await self._await_child(state, key)

    async def _await_child(self, state: RunState, key: str) -> Any:
        while True:
            self.leases.check(state.run_id, state.epoch)
            if self.draining:
                raise _Drained("shut down while waiting for a child run")
            child = await self.db.delegation_status(key)
            if child is None:
                return {"error": f"no child run for delegation key {key}", "outcome": "unknown"}
            if child.answer is not None:
                return _child_result(child.run_id, "completed", child.answer, "")
            if child.status in ("failed", "stopped", "completed"):
                return _child_result(child.run_id, child.status, None, child.failure_reason or "")
            if child.status == "claimed" or child.lease_lapsed:
                sent = self.leases.sent_at()
                adopted = await self.db.take_over_child(
                    state.run_id, state.epoch, child.run_id, self.holder, self.leases.ttl,
                    max_losses=self.max_losses,
                )
                if adopted is not None:
                    await self.resume(adopted, sent)
                    continue
            elif state.info.may_wait and child.status == "running":
                await self._before_suspend(state, state.step)
                await self.db.suspend_run(state.run_id, state.epoch, f"child:{child.run_id}",
                                          {"delegation_key": key})
                raise _Suspended(f"waiting for child run {child.run_id}")
            await asyncio.sleep(self.poll_interval)

    # -- ending -----------------------------------------------------------

    async def _finish(self, state: RunState, step_no: int, answer: ModelStep) -> RunOutcome:
        body = {"text": answer.text, "step": step_no}
        self.leases.check(state.run_id, state.epoch)
        seal, key_id = self.sealer.seal("answer", state.run_id, step_no, body)
        await self.db.seal_answer(
            state.run_id, state.epoch, step_no, body, seal, key_id, self.answer_retention
        )
        self.faults.reach("after_seal", step_no)
        return await self._hand_on(state.info, state.epoch, step_no, state.input, body)

    async def _hand_on(
        self, info: RunInfo, epoch: int, step_no: int, request: Any, answer: Any
    ) -> RunOutcome:
        """Hand a sealed answer on, and deliver it to its entry point.

        A delivery with a reader is marked first and sent before the
        hand-on; a process that finds the mark (it replaced a dead one) reads
        the delivery back and sends it only if it is not there: made once.
        Any other delivery is made after the hand-on: at most once.
        """
        delivery = self.deliveries.get(info.entry_point)
        key = f"answer:{info.run_id}"
        if delivery is not None and delivery.read_back is not None:
            self.leases.check(info.run_id, epoch)
            mark = await self.db.mark_delivery(info.run_id, epoch)
            if mark.already_started:
                await self.leases.ready(info.run_id, epoch)
            landed = mark.already_started and await delivery.read_back(info, request, key)
            if not landed:
                await self.leases.ready(info.run_id, epoch)
                await delivery.send(info, request, answer, key)
            self.faults.reach("after_deliver", step_no)
            self.leases.check(info.run_id, epoch)
            handed = await self.db.hand_on_answer(info.run_id, epoch)
            self.leases.drop(info.run_id, epoch)
            self.faults.reach("after_hand_on", step_no)
            return RunOutcome(info.run_id, "completed", answer=handed.body)
        self.leases.check(info.run_id, epoch)
        handed = await self.db.hand_on_answer(info.run_id, epoch)
        self.leases.drop(info.run_id, epoch)
        self.faults.reach("after_hand_on", step_no)
        if info.entry_point != "delegation":
            if delivery is not None:
                await delivery.send(info, request, handed.body, key)
            elif self.deliver is not None:
                await self.deliver(info, handed.body)
        return RunOutcome(info.run_id, "completed", answer=handed.body)

    async def _fail(self, state: RunState, reason: str, event: str) -> RunOutcome:
        await self.db.fail_run(state.run_id, state.epoch, reason, event)
        return RunOutcome(state.run_id, "failed", reason=reason)

    async def _stop(self, state: RunState) -> RunOutcome:
        await self.db.stop_run(state.run_id, state.epoch)
        return RunOutcome(state.run_id, "stopped", reason="stop requested")

    # -- resuming ---------------------------------------------------------

    async def resume(self, adopted: AdoptedRun, sent_at: float) -> RunOutcome:
        """Continue a run this process adopted, from its last written step."""
        self.leases.hold(adopted.run_id, adopted.epoch, sent_at)
        return await self._guarded(adopted.run_id, adopted.epoch, self._resume(adopted))

    async def _resume(self, adopted: AdoptedRun) -> RunOutcome:
        info = RunInfo(
            run_id=adopted.run_id,
            owner=adopted.owner,
            run_as=adopted.run_as,
            channel=adopted.channel,
            entry_point=adopted.entry_point,
            may_wait=adopted.may_wait,
            correlation_id=adopted.correlation_id,
            loss_count=adopted.loss_count,
            resumed=True,
        )
        state = RunState(info=info, epoch=adopted.epoch, input=adopted.input)

        if adopted.answer_body is not None:
            try:
                self.sealer.verify(
                    "answer", adopted.run_id, adopted.last_step, adopted.answer_body,
                    adopted.answer_seal, adopted.answer_seal_key_id,
                )
            except SealMismatch as exc:
                return await self._fail(state, str(exc), "agent.run.seal_failed")
            await self.db.record_resume(adopted.run_id, adopted.epoch, [])
            return await self._hand_on(
                info, adopted.epoch, adopted.last_step, adopted.input, adopted.answer_body
            )

        if adopted.last_step >= 1:
            body = adopted.checkpoint_body
            try:
                self.sealer.verify(
                    "checkpoint", adopted.run_id, adopted.last_step, body,
                    adopted.checkpoint_seal, adopted.checkpoint_seal_key_id,
                )
                assert body is not None
                self._adopt_body(state, adopted.last_step, body)
            except (SealMismatch, KeyError, TypeError, AssertionError) as exc:
                reason = f"checkpoint failed verification: {exc}"
                return await self._fail(state, reason, "agent.run.seal_failed")
        else:
            body = None
            state.conversation = [user_message(adopted.input)]
            state.counters = {"model_steps": 0, "tool_calls": 0}

        if adopted.stop_requested:
            return await self._stop(state)
        verdict = await self.gates.check_run(info)
        if not verdict.allowed:
            return await self._fail(state, verdict.reason, "agent.run.gate_refused")

        state.unaudited = []
        if body is not None:
            try:
                await self._settle(state, body["calls"], adopted.calls)
            except _StopRequested:
                return await self._stop(state)
            except _Drained:
                await self.db.release_run(state.run_id, state.epoch, "shutdown", {})
                raise
        await self._audit_resume(state)
        return await self._drive(state)

    async def _before_suspend(self, state: RunState, step_no: int) -> None:
        """What a run records before it gives its lease up to wait.

        The resume's audit row, if this attempt is a resume still settling
        (I14), and the outcomes of the changing calls this step already made,
        so the attempt that wakes it finds them done instead of in doubt.  A
        call the checkpoint recorded as a read has no row (its result rides
        in the next checkpoint): nothing to send for it.
        """
        await self._audit_resume(state)
        made, state.made = state.made, []
        for call, result, how in made:
            if state.durable and how in ("made", "skipped") and is_changing(call["classification"]):
                await self.db.record_outcome(
                    state.run_id, state.epoch, step_no, call["call_id"], result, how
                )

    async def _audit_resume(self, state: RunState) -> None:
        """Write this resume's one audit row with the settlements so far, if not yet written."""
        if state.unaudited is None:
            return
        settlements, state.unaudited = state.unaudited, None
        await self.db.record_resume(state.run_id, state.epoch, settlements)

    async def _settle(
        self,
        state: RunState,
        calls: list[dict[str, Any]],
        recorded: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Settle each call the last step left; the results join the conversation."""
        by_id = {row["call_id"]: row for row in recorded}
        # Into the resume's unaudited list, so a call that suspends the run
        # can audit the settlements made before it.
        settlements: list[dict[str, Any]] = state.unaudited if state.unaudited is not None else []
        results: list[Any] = []
        for call in calls:
            row = by_id.get(call["call_id"], {})
            db_state = row.get("state", "pending")
            if db_state in ("done", "settled"):
                result, how = row.get("outcome"), row.get("settlement") or "made"
            elif db_state == "in_doubt":
                marked = row.get("marked_classification") or call["classification"]
                result, how = await self._settle_in_doubt(state, call, marked,
                                                          row.get("approval_id"))
            else:
                result, how = await self._make_call(state, state.step, call, resumed=True)
                if how == "made" and not is_changing(call["classification"]):
                    how = "redone"
            results.append(result)
            settlements.append({"call_id": call["call_id"], "settlement": how, "outcome": result})
        self._carry_results(state, calls, results)
        return settlements

    async def _settle_in_doubt(
        self, state: RunState, call: dict[str, Any], marked: str, approval_id: Any = None
    ) -> tuple[Any, str]:
        """A changing call that may or may not have reached its vendor: never resend blindly.

        The classification its mark recorded decides (I7); the tool's route
        decides which row of the table applies: a delegation asks again by
        its delegation key; a keyed write whose vendor dedupes for longer
        than a resume is sent again with the same key (an approved call's
        key is its approval's); otherwise the outcome is read back where a
        reader exists, or reported unknown and not sent again.
        """
        tool = self.tools.get(call["tool"])
        tool_call = ToolCall(call["call_id"], call["tool"], call["arguments"])
        verdict = await self.gates.check_call(state.info, tool_call, marked)
        context = self._context(state, state.step, call, marked, True, approval_id)
        if verdict.allowed and tool is not None and context.step_key:
            if tool.subagent and marked in ("delegation", "subagent_with_tools"):
                await self.leases.ready(state.run_id, state.epoch)
                return await self._invoke(state, tool, context), "asked_again"
            if tool.resend_safe:
                await self.leases.ready(state.run_id, state.epoch)
                result = await self._invoke(state, tool, context)
                if isinstance(result, dict) and result.get("outcome") == "unknown":
                    result["sent_again"] = True
                return result, "resent_same_key"
        if tool is not None and tool.read_back is not None:
            await self.leases.ready(state.run_id, state.epoch)
            try:
                found = await tool.read_back(context)
            except NotOwner:
                raise
            except Exception as exc:  # noqa: BLE001
                log.warning("read back of %s failed: %s", call["call_id"], exc)
            else:
                if found.found:
                    return found.outcome, "read_back"
                return {
                    "outcome": "not_found",
                    "sent_again": False,
                    "message": "The write was not found at its vendor on read back; "
                    "it was not sent again.",
                }, "read_back"
        result = dict(UNKNOWN_OUTCOME)
        if not verdict.allowed:
            result["refused_on_resume"] = verdict.reason
        return result, "unknown"


@dataclass(frozen=True, slots=True)
class _Decision:
    approval_id: uuid.UUID
    state: str
    coalesced: bool
    first_state: str
    decided_by: str | None
    reason: str | None


def _child_result(run_id: uuid.UUID, status: str, answer: Any, reason: str) -> dict[str, Any]:
    result: dict[str, Any] = {"child_run_id": str(run_id), "status": status}
    if answer is not None:
        result["answer"] = answer
    if reason:
        result["reason"] = reason
    return result
