"""A Teams turn shows the person that the agent works: a typing activity as each step starts.

Real worker processes and the vendor service, which records every request it gets: each
model step asked sends one Bot Framework ``typing`` activity in reply to the person's
message (``Teams.typing``, through the same client as the reply), and the reply is still
posted once, also when the process holding the run is SIGKILLed in the middle of it and
when every typing activity fails.  In-process: the engine never waits for a typing
activity, and one that hangs is dropped after its bound.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, cast

import pytest
from fronts import post, worker
from procs import KILLED, Stack

from ticketiq_pg.agent import AnswerDelivery, RunInfo
from ticketiq_pg.runtime import ending

ACTIVITY = {
    "type": "message",
    "id": "act-typing-1",
    "conversation": {"id": "19:typing-room"},
    "from": {"id": "user-gale"},
    "text": "what is open on the EU region?",
    # The scripted model's script: four steps, each taking a second.
    "script": {"seed": 23, "steps": 4, "plan": "mixed", "model_delay": 1.0},
}


def teams_posts(stack: Stack) -> list[dict[str, Any]]:
    return [r for r in stack.vendor.requests("teams") if r["method"] == "POST"]


def typing(stack: Stack) -> list[dict[str, Any]]:
    return [r for r in teams_posts(stack) if r["body"].get("type") == "typing"]


def replies(stack: Stack) -> list[dict[str, Any]]:
    return [r for r in teams_posts(stack) if r["effect"] == "created"]


def answered(stack: Stack, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = stack.query("select state, run_id from ticketiq.entries where kind = 'teams' "
                           "and sender_id = %s and state not in ('pending', 'running')",
                           ACTIVITY["id"])
        if rows:
            assert rows[0][0] == "answered", rows
            return str(rows[0][1])
        time.sleep(0.05)
    raise AssertionError("the Teams turn was not answered")


def typing_per_step(stack: Stack, run_id: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The typing activities, once there is one per model step asked (the last may land
    just after the reply: it is sent beside the step, not before it)."""
    asked = sum(stack.model_asks(run_id).values())
    deadline = time.monotonic() + timeout
    while len(found := typing(stack)) < asked and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) == asked, (len(found), stack.model_asks(run_id))
    return found


@pytest.mark.slow
def test_each_step_shows_typing_and_the_reply_is_posted_once(stack: Stack) -> None:
    only, url = worker(stack, "only")
    assert post(url + "/teams/messages", json=ACTIVITY, timeout=10).status_code == 200
    run_id = answered(stack)
    shown = typing_per_step(stack, run_id)
    assert len(shown) == 4
    assert {(r["path"], r["effect"], r["body"]["replyToId"]) for r in shown} == {
        ("/teams/v3/conversations/19%3Atyping-room/activities/act-typing-1", "shown",
         "act-typing-1")}
    (reply,) = replies(stack)
    assert reply["body"]["type"] == "message" and reply["body"]["replyToId"] == "act-typing-1"
    # The person saw the bot typing before the reply came.
    assert min(r["id"] for r in shown) < reply["id"]
    only.terminate()


@pytest.mark.slow
def test_the_holder_killed_mid_run_the_reply_is_still_posted_once(stack: Stack) -> None:
    victim, victim_url = worker(stack, "victim", faults="after_checkpoint@2")
    assert post(victim_url + "/teams/messages", json=ACTIVITY, timeout=10).status_code == 200
    survivor, _ = worker(stack, "survivor")
    assert victim.wait(30) == KILLED
    run_id = answered(stack)
    assert stack.query("select loss_count from ticketiq.runs where run_id = %s",
                       run_id) == [(1,)]
    shown = typing_per_step(stack, run_id)
    assert {r["effect"] for r in shown} == {"shown"}
    assert len(replies(stack)) == 1, replies(stack)
    # Typing from both processes: the survivor's steps show it too.
    killed_at = max(r["id"] for r in shown[:2])
    assert [r for r in shown if r["id"] > killed_at]
    survivor.terminate()


@pytest.mark.slow
def test_typing_that_fails_does_not_fail_the_run(stack: Stack) -> None:
    stack.vendor.fault("teams", "fail", path_regex=r"/activities/[^/]+$", method="POST",
                       count=100)
    only, url = worker(stack, "only")
    assert post(url + "/teams/messages", json=ACTIVITY, timeout=10).status_code == 200
    run_id = answered(stack)
    failed = typing_per_step(stack, run_id)
    assert {(r["effect"], r["status"]) for r in failed} == {("failed", 503)}
    assert len(replies(stack)) == 1
    assert stack.query("select status, loss_count from ticketiq.runs where run_id = %s",
                       run_id) == [("completed", 0)]
    only.terminate()


async def test_a_step_never_waits_for_its_typing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Ending.progress`` returns at once while the typing hangs; the bound drops it."""
    monkeypatch.setattr(ending, "PROGRESS_TIMEOUT", 0.2)
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hangs(run: RunInfo, request: Any) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    async def send(*_: Any) -> None:
        return None

    end = ending.Ending(cast(Any, None), deliveries={
        "teams": AnswerDelivery(send=send, progress=hangs)})
    info = RunInfo(run_id=uuid.uuid4(), owner="o", run_as="o", channel="teams",
                   entry_point="teams", may_wait=False, correlation_id="c")
    assert end.progress(info, {}) is None  # a plain function: nothing to wait for
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(cancelled.wait(), 5)  # dropped at its bound, quietly
    await asyncio.sleep(0)
    assert not end._progressing
    # Another entry point's run (no progress in its delivery) shows nothing.
    end.progress(RunInfo(run_id=uuid.uuid4(), owner="o", run_as="o", channel="x",
                         entry_point="webhook", may_wait=False, correlation_id="c"), {})
    assert not end._progressing
