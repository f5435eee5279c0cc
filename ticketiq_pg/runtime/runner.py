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

import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import psycopg

from ticketiq_pg.agent import (
    AllowAll,
    AnswerDelivery,
    Delivery,
    Gates,
    Model,
    ModelStep,
    RunInfo,
    ToolCall,
    Tools,
    is_changing,
    user_message,
)
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import (
    InvalidPayload,
    LivenessUnconfirmed,
    NotOwner,
    StepConflict,
)
from ticketiq_pg.retries import (
    MODEL_RETRY,
    TOOL_RETRY,
    RetryPolicy,
    describe,
)
from ticketiq_pg.runtime import call_rows, malformed
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.attempts import Attempting
from ticketiq_pg.runtime.ending import Ending
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.resume import Resuming
from ticketiq_pg.runtime.run_state import (
    Drained,
    RunFailed,
    RunOutcome,
    RunState,
    StopRequested,
    Suspended,
    adopt_body,
    carry_results,
    checkpoint_body,
)
from ticketiq_pg.runtime.waits import Waiting
from ticketiq_pg.runtime.workflow_waits import WorkflowWaiting
from ticketiq_pg.seal import Sealer
from ticketiq_pg.workflow import Workflow

log = logging.getLogger(__name__)


__all__ = ["RunOutcome", "RunState", "Runner"]


class Runner(Attempting, Resuming, Waiting, WorkflowWaiting, Ending):
    """Runs agent and workflow runs durably on behalf of one app process (the lease holder).

    One step engine, two drivers: a step is decided by the model (an agent run) or by
    the workflow's code (:mod:`ticketiq_pg.runtime.workflow_engine`); the write-ahead
    checkpoint, the in-doubt marks, the fence, the gates and the settlement of a resume
    are the same code for both.
    """

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
        model_retry: RetryPolicy = MODEL_RETRY,
        tool_retry: RetryPolicy = TOOL_RETRY,
        max_steps: int = 50,
        deadline: float | None = 3600.0,
        workflows: Iterable[Workflow] = (),
    ) -> None:
        self.db = db
        self.leases = leases
        self.sealer = sealer
        self.model = model
        self.tools = flows.EngineTools(tools)
        self.workflows = flows.Workflows(workflows)
        self.gates = gates or AllowAll()
        self.agent_loop = agent_loop
        self.answer_retention = answer_retention
        self.deliver = deliver
        self.deliveries = dict(deliveries or {})
        self.faults = faults or FaultPoints()
        self.max_losses = max_losses
        self.poll_interval = poll_interval
        #: How a failing model step and tool call are tried again (a tool's own wins).
        self.model_retry = model_retry
        self.tool_retry = tool_retry
        #: A run's limits unless its start says otherwise: model steps, seconds.
        self.max_steps = max_steps
        self.deadline = deadline
        #: (run, key) pairs whose downgraded guarantee this process has audited.
        self._downgrades: set[tuple[uuid.UUID, str]] = set()
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
        max_steps: int | None = None,
        deadline: float | None = None,
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
        return self.fresh_state(info, started.epoch, input, durable,
                                max_steps=max_steps, deadline=deadline)


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


    def fresh_state(self, info: RunInfo, epoch: int, input: Any, durable: bool = True, *,
                    max_steps: int | None = None, deadline: float | None = None) -> RunState:
        """The state of a run that has taken no step yet, with its limits.

        A workflow run has no deadline unless its start gives one (it may sleep for days).
        """
        workflow = self.workflows.for_run(info, input)
        counters: dict[str, Any] = {"model_steps": 0, "tool_calls": 0}
        counters["max_steps"] = max_steps if max_steps is not None else self.max_steps
        seconds = deadline if deadline is not None or workflow else self.deadline
        if seconds:
            # A deadline is not a lease: the wall clock of the process that starts the run
            # decides it, carried in the sealed checkpoints (seconds of skew at most).
            counters["deadline_at"] = time.time() + seconds
        return RunState(info=info, epoch=epoch, input=input,
                        conversation=[user_message(input)], counters=counters, durable=durable,
                        workflow=workflow)


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
        except Suspended as exc:
            return RunOutcome(run_id, "suspended", reason=str(exc))
        except Drained as exc:
            return RunOutcome(run_id, "released", reason=str(exc))
        except RunFailed as exc:
            return await self._fail_now(run_id, epoch, exc.reason, exc.event)
        except (InvalidPayload, StepConflict) as exc:
            # The same step would fail the same way on every resume: fail now.
            return await self._fail_now(run_id, epoch, describe(exc))
        except (psycopg.Error, OSError):
            # The database (or the network to it) failed, not the run: stop renewing;
            # the lease lapses and another attempt resumes from the last checkpoint.
            log.exception("run %s abandoned: the database failed", run_id)
            raise
        except Exception as exc:  # noqa: BLE001 - the app's code failed: an error, not a crash
            log.exception("run %s failed", run_id)
            return await self._fail_now(run_id, epoch, describe(exc))
        finally:
            self.leases.drop(run_id, epoch)


    async def _fail_now(self, run_id: uuid.UUID, epoch: int, reason: str,
                        event: str = "agent.run.failed") -> RunOutcome:
        """Fail the run with its reason in one statement: the lease released, no loss counted."""
        log.error("run %s failed: %s", run_id, reason)
        try:
            await self.db.fail_run(run_id, epoch, reason[:2000], event)
        except NotOwner:
            return RunOutcome(run_id, "lost", reason=reason)
        return RunOutcome(run_id, "failed", reason=reason)

    async def _drive(self, state: RunState) -> RunOutcome:
        while True:
            if self.draining and state.durable:
                await self._record_made(state, state.step)
                await self.db.release_run(
                    state.run_id, state.epoch, "shutdown", state.last_results
                )
                return RunOutcome(state.run_id, "released", reason="shutdown")
            verdict = await self.gates.check_run(state.info)
            if not verdict.allowed:
                return await self._fail(state, verdict.reason, "agent.run.gate_refused")
            step_no = state.step + 1
            self._within_limits(state, step_no)
            answer = await self._decide(state, step_no)
            if answer.final:
                return await self._finish(state, step_no, answer)
            calls = self._plan_calls(state, step_no, answer)
            body = checkpoint_body(self.agent_loop, state, step_no, answer, calls)
            self.faults.reach("before_checkpoint", step_no)
            self.leases.check(state.run_id, state.epoch)
            if state.durable:
                # Where it can, the canonical text the seal covers is what is sent:
                # the body is encoded once.
                seal, key_id, to_send = self.sealer.seal_encoded(
                    "link", state.run_id, step_no, body, prev=state.chain_seal or ""
                )
                to_send = call_rows.with_pending_seals(
                    self.sealer, state.run_id, step_no, calls, to_send
                )
                written = await self.db.write_checkpoint(
                    state.run_id, state.epoch, step_no, to_send, seal, key_id
                )
                state.chain_seal = seal
                self.faults.reach("after_checkpoint", step_no)
                if written.stop_requested:
                    adopt_body(state, step_no, body)
                    return await self._stop(state)
            adopt_body(state, step_no, body)
            results: list[tuple[Any, str]] = []
            state.made = []
            try:
                for call in calls:
                    results.append(await self._make_call(state, step_no, call))
                    state.made.append((call, *results[-1]))
            except StopRequested:
                return await self._stop(state)
            except Drained:
                # Shutting down while a call waits (an approval, a child): hand
                # the run over with the results it has; the waiting call stays
                # as it is, for the adopter to route or ask again.
                made = {c["call_id"]: r for c, (r, _) in zip(calls, results, strict=False)}
                await self._record_made(state, step_no)
                await self.db.release_run(state.run_id, state.epoch, "shutdown", made)
                raise
            carry_results(state, calls, [result for result, _ in results])


    async def _decide(self, state: RunState, step_no: int) -> ModelStep:
        """The next step: the workflow's code decides it, or the model answers it."""
        if state.workflow is None:
            return await self._ask_model(state, step_no)
        self.faults.reach("before_model", step_no)
        return await flows.decide(state.workflow, state, step_no)

    def _plan_calls(
        self, state: RunState, step_no: int, answer: ModelStep
    ) -> list[dict[str, Any]]:
        if state.workflow is not None:
            # a workflow's action: keyed by the run id, the step id and the steps executed
            (call,) = answer.calls
            return [{"call_id": call.call_id, "tool": call.tool, "arguments": call.arguments,
                     "classification": self.tools.classify(call.tool),
                     "step_key": flows.step_key(state)}]
        return [
            {
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": call.arguments,
                "classification": self.tools.classify(call.tool),
                "step_key": keys.agent_call_key(
                    state.info.correlation_id, self.agent_loop, step_no, call.call_id
                ),
                **({"malformed": m} if (m := malformed.reason_of(call)) else {}),
            }
            for call in answer.calls
        ]


    async def _make_call(
        self, state: RunState, step_no: int, call: dict[str, Any], resumed: bool = False
    ) -> tuple[Any, str]:
        """Route one call through the gates, mark it if it changes something, make it.

        Returns the result and how it was obtained: made, skipped (refused,
        rejected, unknown tool) or, on a resume that found the call's
        approval request, coalesced (still waiting) or read_decision.
        """
        if state.workflow is not None and call["tool"] in flows.WAITS:
            return await self._workflow_wait(state, step_no, call), "made"
        tool_call = ToolCall(call["call_id"], call["tool"], call["arguments"])
        recorded = call["classification"]
        tool = self.tools.get(call["tool"])
        current = tool.classification if tool else "write"
        # The gate sees the stricter of the two: a write stays a write (I7), and a call
        # recorded as a read whose tool is a write by now is judged as a write.
        judged = recorded if is_changing(recorded) or not is_changing(current) else current
        verdict = await self.gates.check_call(state.info, tool_call, judged)
        if not verdict.allowed:
            return {"error": "refused", "reason": verdict.reason}, "skipped"
        if tool is None:
            return {"error": f"unknown tool {call['tool']}"}, "skipped"
        invalid = call.get("malformed") or tool.validate(call["arguments"])
        if invalid is not None:
            # Against the tool's schema: told back to the model, never sent to the vendor.
            return {"error": f"invalid arguments: {invalid}"}, "skipped"
        how = "made"
        approval_id = None
        if verdict.needs_approval and not is_changing(judged):
            # Reads are never held (nothing to file them against): a hold refuses it.
            return {"error": "refused", "reason": verdict.reason}, "skipped"
        if verdict.needs_approval and state.durable and not is_changing(recorded):
            # Recorded as a read, a write by now: its mark gives it the row its approval
            # request is filed on (mark_in_doubt creates it from the checkpoint).
            self.leases.check(state.run_id, state.epoch)
            await call_rows.mark(self.db, self.sealer, state, step_no, call, current)
        if verdict.needs_approval:
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
            mark = await call_rows.mark(self.db, self.sealer, state, step_no, call, current)
            self.faults.reach("after_mark", step_no)
            if mark.stop_requested:
                raise StopRequested
            classification = mark.marked_classification
        context = self._context(state, step_no, call, classification, resumed, approval_id)
        changing = state.durable and is_changing(classification)
        if changing:
            await self._audit_downgrade(state, tool, call,
                                        context.step_key if approval_id else call.get("step_key"))
        await self.leases.ready(state.run_id, state.epoch)
        result, ended = await self._call_tool(state, tool, context)
        self.faults.reach("after_call", step_no)
        if changing and not tool.subagent:
            # Recorded as it returns: a crash during the next model step finds the
            # outcome instead of a call in doubt.
            self.leases.check(state.run_id, state.epoch)
            await call_rows.record(self.db, self.sealer, state, step_no, call, result, ended)
        return result, how


    async def _fail(self, state: RunState, reason: str, event: str) -> RunOutcome:
        await self.db.fail_run(state.run_id, state.epoch, reason, event)
        return RunOutcome(state.run_id, "failed", reason=reason)


    async def _stop(self, state: RunState) -> RunOutcome:
        await self.db.stop_run(state.run_id, state.epoch)
        return RunOutcome(state.run_id, "stopped", reason="stop requested")
