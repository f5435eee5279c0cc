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
