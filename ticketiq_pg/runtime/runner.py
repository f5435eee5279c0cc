"""The step engine: one loop that hands a run's state from part to part.

For each step of a run, :class:`Runner`

1. asks a decider what comes next: the model (:class:`~ticketiq_pg.runtime.deciders.ModelDecider`)
   or the workflow's code (:class:`~ticketiq_pg.runtime.deciders.WorkflowDecider`);
2. writes one sealed write-ahead checkpoint of the step (the conversation, the calls, the
   counters, history and delegation keys) before any call is made (I5);
3. hands each call to the call executor (:class:`~ticketiq_pg.runtime.calls.CallExecutor`:
   the gates, the in-doubt mark of a changing call, the fenced attempt, the outcome row);
4. carries the results into the next step's checkpoint;

and, at the end, hands the final answer to the ending (:class:`~ticketiq_pg.runtime.ending.Ending`:
sealed write-once, handed on at most once, I10).

A resumed run (adopted after a loss) goes through the resumer first
(:class:`~ticketiq_pg.runtime.resume.Resumer`): verified against its seal (I9), every gate
passed again as it stands now, the calls its last step left settled without blindly
sending a write again (I6, I7), the resume audited (I14); the resumer hands the state
back and the loop asks only for the steps after the last one written (I8).

The parts share one :class:`~ticketiq_pg.runtime.setup.EngineSetup` and call only parts
below them; a delegation's child run is started through the engine's own entry points
(:class:`~ticketiq_pg.runtime.waits.ChildRuns`).  docs/architecture.md draws it.
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
    RunInfo,
    Tools,
    user_message,
)
from ticketiq_pg.db.rows import AdoptedRun
from ticketiq_pg.errors import (
    InvalidPayload,
    LivenessUnconfirmed,
    NotOwner,
    StepConflict,
)
from ticketiq_pg.retries import MODEL_RETRY, TOOL_RETRY, RetryPolicy, describe
from ticketiq_pg.runtime import call_rows
from ticketiq_pg.runtime import workflow_engine as flows
from ticketiq_pg.runtime.calls import CallExecutor
from ticketiq_pg.runtime.deciders import (
    Decider,
    Decision,
    ModelDecider,
    WorkflowDecider,
    within_limits,
)
from ticketiq_pg.runtime.ending import Ending
from ticketiq_pg.runtime.faults import FaultPoints
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.resume import HandOn, Refuse, Resumer, Stop
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
from ticketiq_pg.runtime.setup import EngineSetup, ResumesFirst
from ticketiq_pg.runtime.store import RunStore
from ticketiq_pg.runtime.waits import Waits
from ticketiq_pg.seal import Sealer
from ticketiq_pg.workflow import Workflow

log = logging.getLogger(__name__)


__all__ = ["RunOutcome", "RunState", "Runner"]


class Runner:
    """Runs agent and workflow runs durably on behalf of one app process (the lease holder).

    One engine, two deciders: a step is decided by the model (an agent run) or by the
    workflow's code; the write-ahead checkpoint, the in-doubt mark, the fence, the gates
    and the settlement of a resume are the same parts for both.
    """

    def __init__(
        self,
        db: RunStore,
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
        calls_at_once: int = 8,
        vendor_suspend_after: float = 2.0,
        resumes_first_wait: float = 20.0,
    ) -> None:
        self.setup = EngineSetup(
            db=db, leases=leases, sealer=sealer, model=model, tools=flows.EngineTools(tools),
            gates=gates or AllowAll(), faults=faults or FaultPoints(), agent_loop=agent_loop,
            model_retry=model_retry, tool_retry=tool_retry, poll_interval=poll_interval,
            max_losses=max_losses, calls_at_once=max(1, calls_at_once),
            vendor_suspend_after=vendor_suspend_after,
            resumes=ResumesFirst(resumes_first_wait),
        )
        self.workflows = flows.Workflows(workflows)
        #: Whether a run may suspend for a vendor's token: a timer wakes it at its turn.
        self.vendor_turns = any(getattr(tools.get(name), "vendor", None)
                                for name in tools.names())
        #: A run's limits unless its start says otherwise: model steps, seconds.
        self.max_steps = max_steps
        self.deadline = deadline
        # The parts, each calling only those below it.
        self.ending = Ending(self.setup, answer_retention=answer_retention, deliver=deliver,
                             deliveries=deliveries)
        if any(getattr(d, "progress", None) for d in self.ending.deliveries.values()):
            self.setup.progress = self.ending.progress  # else a step shows nobody anything
        self.calls = CallExecutor(self.setup, Waits(self.setup, children=self))
        self.resumer = Resumer(self.setup, self.calls, self.workflows, self.fresh_counters)
        self.model_decider = ModelDecider(self.setup)
        self.workflow_decider = WorkflowDecider(self.setup, self.workflows)

    # The shared parts, by their old names: the app's model, tools and gates may be
    # wrapped after the engine is built (observability), draining is set at shutdown.

    @property
    def db(self) -> RunStore:
        return self.setup.db

    @property
    def leases(self) -> LeaseKeeper:
        return self.setup.leases

    @property
    def holder(self) -> str:
        return self.setup.holder

    @property
    def model(self) -> Model:
        return self.setup.model

    @model.setter
    def model(self, model: Model) -> None:
        self.setup.model = model

    @property
    def tools(self) -> Tools:
        return self.setup.tools

    @tools.setter
    def tools(self, tools: Tools) -> None:
        self.setup.tools = tools

    @property
    def gates(self) -> Gates:
        return self.setup.gates

    @gates.setter
    def gates(self, gates: Gates) -> None:
        self.setup.gates = gates

    @property
    def tool_retry(self) -> RetryPolicy:
        return self.setup.tool_retry

    @property
    def draining(self) -> bool:
        return self.setup.draining

    @draining.setter
    def draining(self, value: bool) -> None:
        self.setup.draining = value

    @property
    def deliver(self) -> Delivery | None:
        return self.ending.deliver

    @deliver.setter
    def deliver(self, deliver: Delivery | None) -> None:
        self.ending.deliver = deliver

    @property
    def max_malformed(self) -> int:
        return self.model_decider.max_malformed

    @max_malformed.setter
    def max_malformed(self, value: int) -> None:
        self.model_decider.max_malformed = value

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
            parent_run_id=parent_run_id,
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
        """The state of a run that has taken no step yet, with its limits."""
        workflow = self.workflows.for_run(info, input)
        return RunState(info=info, epoch=epoch, input=input,
                        conversation=[user_message(input)],
                        counters=self.fresh_counters(workflow, max_steps, deadline),
                        durable=durable, workflow=workflow)

    def fresh_counters(self, workflow: Workflow | None, max_steps: int | None = None,
                       deadline: float | None = None) -> dict[str, Any]:
        """A run's counters before its first step, with its limits (a start's own, or the
        engine's): also a resume's, of a run adopted before its first checkpoint.

        A workflow run has no deadline unless its start gives one (it may sleep for days).
        """
        counters: dict[str, Any] = {"model_steps": 0, "tool_calls": 0}
        counters["max_steps"] = max_steps if max_steps is not None else self.max_steps
        seconds = deadline if deadline is not None or workflow else self.deadline
        if seconds:
            # A deadline is not a lease: the wall clock of the process that starts the run
            # decides it, carried in the sealed checkpoints (seconds of skew at most).
            counters["deadline_at"] = time.time() + seconds
        return counters


    async def start_and_run(self, **kwargs: Any) -> RunOutcome:
        state = await self.start(**kwargs)
        if isinstance(state, RunOutcome):
            return state
        return await self.run(state)


    # -- running ----------------------------------------------------------

    async def run(self, state: RunState) -> RunOutcome:
        """Drive the run to its end in this process, or until it is no longer ours."""
        return await self._guarded(state.run_id, state.epoch, self._drive(state))

    async def resume(self, adopted: AdoptedRun, sent_at: float) -> RunOutcome:
        """Continue a run this process adopted, from its last written step."""
        self.leases.hold(adopted.run_id, adopted.epoch, sent_at)
        return await self._guarded(adopted.run_id, adopted.epoch, self._resume(adopted))

    async def _resume(self, adopted: AdoptedRun) -> RunOutcome:
        turn = self.setup.resumes.begin()
        try:
            resumed = await self.resumer.resume(adopted, turn)
            if isinstance(resumed, HandOn):
                return await self.ending.hand_on(resumed.info, resumed.epoch, resumed.step,
                                                 resumed.input, resumed.answer)
            if isinstance(resumed, Refuse):
                return await self.ending.fail(resumed.state, resumed.reason, resumed.event)
            if isinstance(resumed, Stop):
                return await self.ending.stop(resumed.state)
            return await self._drive(resumed)
        finally:
            turn.end()

    async def _guarded(self, run_id: uuid.UUID, epoch: int, work: Any) -> RunOutcome:
        """The run's outcome in this process, whatever ended the attempt."""
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
            return await self.ending.fail_now(run_id, epoch, exc.reason, exc.event)
        except (InvalidPayload, StepConflict) as exc:
            # The same step would fail the same way on every resume: fail now.
            return await self.ending.fail_now(run_id, epoch, describe(exc))
        except (psycopg.Error, OSError):
            # The database (or the network to it) failed, not the run: stop renewing;
            # the lease lapses and another attempt resumes from the last checkpoint.
            log.exception("run %s abandoned: the database failed", run_id)
            raise
        except Exception as exc:  # noqa: BLE001 - the app's code failed: an error, not a crash
            log.exception("run %s failed", run_id)
            return await self.ending.fail_now(run_id, epoch, describe(exc))
        finally:
            self.leases.drop(run_id, epoch)

    async def _drive(self, state: RunState) -> RunOutcome:
        """The loop: decide, write ahead, make the calls, carry their results; then end.

        A run adopted (``state.resuming``) takes its first step here before the later
        steps of other runs (:class:`~ticketiq_pg.runtime.setup.ResumesFirst`).
        """
        setup = self.setup
        while True:
            if setup.resumes.pending and (state.resuming is None or state.resuming.ended):
                await setup.resumes.turn()
            if setup.draining and state.durable:
                await call_rows.record_made(setup.db, setup.sealer, state, state.step)
                await setup.db.release_run(
                    state.run_id, state.epoch, "shutdown", state.last_results
                )
                return RunOutcome(state.run_id, "released", reason="shutdown")
            verdict = await setup.gates.check_run(state.info)
            if not verdict.allowed:
                return await self.ending.fail(state, verdict.reason, "agent.run.gate_refused")
            step_no = state.step + 1
            within_limits(state, step_no)
            decider: Decider = (self.model_decider if state.workflow is None
                                else self.workflow_decider)
            decision = await decider.decide(state, step_no)
            if decision.final:
                return await self.ending.finish(state, step_no, decision)
            if await self._write_ahead(state, step_no, decision):
                return await self.ending.stop(state)
            if state.resuming is not None:
                state.resuming.end()
                state.resuming = None
            try:
                results = await self.calls.make_all(state, step_no, decision.calls)
            except StopRequested:
                return await self.ending.stop(state)
            except Drained:
                await self._hand_over(state, step_no)
                raise
            carry_results(state, decision.calls, results)

    async def _write_ahead(self, state: RunState, step_no: int, decision: Decision) -> bool:
        """Write the step's sealed checkpoint (I5) and carry it into the state; True when a
        Stop was asked meanwhile."""
        setup = self.setup
        body = checkpoint_body(setup.agent_loop, state, step_no, decision)
        setup.faults.reach("before_checkpoint", step_no)
        setup.leases.check(state.run_id, state.epoch)
        stop = False
        if state.durable:
            # Where it can, the canonical text the seal covers is what is sent:
            # the body is encoded once.
            seal, key_id, to_send = setup.sealer.seal_encoded(
                "link", state.run_id, step_no, body, prev=state.chain_seal or ""
            )
            to_send = call_rows.with_pending_seals(
                setup.sealer, state.run_id, step_no, decision.calls, to_send
            )
            written = await setup.db.write_checkpoint(
                state.run_id, state.epoch, step_no, to_send, seal, key_id
            )
            state.chain_seal = seal
            setup.faults.reach("after_checkpoint", step_no)
            stop = written.stop_requested
        adopt_body(state, step_no, body)
        return stop

    async def _hand_over(self, state: RunState, step_no: int) -> None:
        """Shutting down while a call waits (an approval, a child): hand the run over with
        the results it has; the waiting call stays as it is, for the adopter to route or
        ask again."""
        made = {call["call_id"]: result for call, result, _ in state.made}
        await call_rows.record_made(self.setup.db, self.setup.sealer, state, step_no)
        await self.setup.db.release_run(state.run_id, state.epoch, "shutdown", made)
