"""runtime/deciders.py without a database: the limits a run is held to, and the Decision
a workflow's code leaves (a planned call with its step key, or the end).  The deciders'
work with a real database and model is in test_step_loop, test_failures and
test_workflows."""

from __future__ import annotations

import uuid

import pytest

from ticketiq_pg.agent import RunInfo
from ticketiq_pg.runtime.deciders import Decision, within_limits
from ticketiq_pg.runtime.run_state import RunFailed, RunState


def state(workflow: object = None, **counters: object) -> RunState:
    info = RunInfo(uuid.uuid4(), "alice", "alice", "playground", "test", False, "c")
    return RunState(info=info, epoch=1, input=None, counters=dict(counters), workflow=workflow)


@pytest.mark.parametrize(("workflow", "said"), [(None, "limit of 3 model steps"),
                                                 (object(), "limit of 3 workflow steps")])
def test_past_its_step_limit_a_run_fails_naming_what_it_counts(workflow: object, said: str
                                                               ) -> None:
    within_limits(state(workflow, max_steps=3), 3)
    with pytest.raises(RunFailed) as failed:
        within_limits(state(workflow, max_steps=3), 4)
    assert said in failed.value.reason and failed.value.event == "agent.run.limit_reached"


def test_past_its_deadline_a_run_fails() -> None:
    with pytest.raises(RunFailed, match="deadline"):
        within_limits(state(deadline_at=0.0), 1)


def test_a_decision_records_its_calls_as_the_conversation_does() -> None:
    call = {"call_id": "c1", "tool": "crm.read", "arguments": {"id": 1},
            "classification": "read", "step_key": "k"}
    decision = Decision([call], "looking")
    assert not decision.final and Decision(text="done").final
    assert decision.message() == {"role": "assistant", "content": "looking", "tool_calls": [
        {"call_id": "c1", "tool": "crm.read", "arguments": {"id": 1}}]}


async def test_newer_code_that_steps_a_run_pins_it_and_the_older_code_hands_it_back() -> None:
    """A worker running version 2 with version 1 compatible takes a step of a version 1
    run: the run records that code (counters.workflow.code), and a worker of the older
    code, which might lack the step the newer code led it to, hands it back instead of
    failing it (``adopt_run`` leaves it to the newer code, ``_can_run_workflow``)."""
    from ticketiq_pg.runtime import workflow_engine as flows
    from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

    def release(version: str, compatible: tuple[str, ...] = ()) -> Workflow:
        flow = Workflow("onboard", version=version, compatible=list(compatible))

        @flow.step(first=True)
        def begin(ctx: WorkflowContext) -> WorkflowNext:
            return ctx.sleep(1, then="after")

        @flow.step()
        def after(ctx: WorkflowContext) -> WorkflowNext:
            if version == "1":
                return ctx.end({"by": version})
            return ctx.sleep(1, then="only_in_2")  # where version 1's code has no step

        if version == "2":
            @flow.step()
            def only_in_2(ctx: WorkflowContext) -> WorkflowNext:
                return ctx.end({"by": version})

        return flow

    old, new = release("1"), release("2", ("1",))
    run = state(old)
    await flows.decide(old, run, 1)  # begun on version 1's code: not pinned
    assert "code" not in run.counters["workflow"]
    run.last_results = {run.counters["workflow"]["call_id"]: None}
    await flows.decide(new, run, 2)  # the new code steps it on
    assert run.counters["workflow"]["version"] == "1"
    assert run.counters["workflow"]["code"] == "2"
    with pytest.raises(flows.NotRunnableHere, match="pinned to version '2'"):
        flows.Workflows([old]).for_resume(run.info, None, run.counters)
    assert flows.Workflows([new]).for_resume(run.info, None, run.counters) is new
