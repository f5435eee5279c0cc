"""Entry points survive a crash: two real app processes, the owner SIGKILLed mid-run.

Each test runs ``ticketiq-pg worker`` processes serving the HTTP front; the
request goes to the *victim*, which claims it from the durable inbox and
SIGKILLs itself at a fault point; the *survivor* takes the run back (real
leases, shortened so the suite stays quick) and the outcome is judged from
the database and from the vendor service's own record: recorded or
delivered once.
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import pytest
from fronts import get, post, worker
from procs import KILLED, Stack

pytestmark = pytest.mark.slow

SCRIPT = {"seed": 31, "steps": 3, "plan": "mixed"}


def wait_for(stack: Stack, sql: str, *params: Any, timeout: float = 30.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = stack.query(sql, *params)
        if rows:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {sql} {params}")


def entry_done(stack: Stack, kind: str, sender_id: str, timeout: float = 30.0) -> tuple:
    ((state, run_id, outcome),) = wait_for(
        stack,
        "select state, run_id, outcome from ticketiq.entries where kind = %s and sender_id = %s "
        "and state not in ('pending', 'running')",
        kind, sender_id, timeout=timeout,
    )
    return state, run_id, outcome


def one_loss_one_resume(stack: Stack, run_id: Any) -> None:
    ((status, losses),) = stack.query(
        "select status, loss_count from ticketiq.runs where run_id = %s", run_id)
    assert (status, losses) == ("completed", 1)
    assert stack.query(
        "select count(*) from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id) == [(1,)]


REQUESTS = {
    "webhook": ("/webhooks/alertmanager", {"headers": {"X-Delivery-Id": "del-1"}, "json": SCRIPT},
                "alertmanager:del-1"),
    "ticket_event": ("/ticket-events", {"json": {"event_id": "ev-1", "ticket_id": "T-9",
                                                 "type": "created", **SCRIPT}}, "ev-1"),
    "copilot": ("/copilot/turns", {"json": {"turn_id": "turn-1", "conversation_id": "c-1",
                                            "user": "dana", "text": "summarise T-9"}}, "turn-1"),
    "playground": ("/playground/runs", {"json": {"run_key": "pg-1", "user": "erin",
                                                 "input": SCRIPT}}, "pg-1"),
}


@pytest.mark.parametrize("kind", list(REQUESTS))
def test_a_killed_entry_run_resumes_on_the_survivor(stack: Stack, kind: str) -> None:
    path, request, sender_id = REQUESTS[kind]
    victim, victim_url = worker(stack, "victim", faults="after_checkpoint@2")
    response = post(victim_url + path, timeout=10, **request)
    assert response.status_code == 202, response.text
    survivor, survivor_url = worker(stack, "survivor")
    assert victim.wait(30) == KILLED
    state, run_id, outcome = entry_done(stack, kind, sender_id)
    assert state == "answered" and outcome["text"].startswith("answer seed=")
    one_loss_one_resume(stack, run_id)
    # the answer lands on the run's transcript
    transcript = get(f"{survivor_url}/runs/{run_id}", timeout=10).json()["transcript"]
    assert [line["kind"] for line in transcript if line["kind"] != "step"] == [
        "resumed", "answer"]
    # the edge retries the request on the survivor: no second run
    retry = post(survivor_url + path, timeout=10, **request)
    assert retry.status_code == 200 and retry.json()["created"] is False
    assert stack.query("select count(*) from ticketiq.runs") == [(1,)]
    assert stack.duplicates() == {}
    survivor.terminate()


TEAMS = {
    "type": "message",
    "id": "act-7",
    "conversation": {"id": "19:ops-room"},
    "from": {"id": "user-frank"},
    "text": "what is open on the EU region?",
}


def teams_replies(stack: Stack) -> list[dict]:
    return [r for r in stack.vendor.requests("teams")
            if r["method"] == "POST" and r["effect"] == "created"]


@pytest.mark.parametrize("fault", ["after_checkpoint@2", "after_seal@3", "after_deliver@3"])
def test_a_teams_turn_is_handed_back_and_replied_to_once(stack: Stack, fault: str) -> None:
    victim, victim_url = worker(stack, "victim", faults=fault)
    assert post(victim_url + "/teams/messages", json=TEAMS, timeout=10).status_code == 200
    survivor, survivor_url = worker(stack, "survivor")
    assert victim.wait(30) == KILLED
    state, run_id, _ = entry_done(stack, "teams", "act-7")
    assert state == "answered"
    one_loss_one_resume(stack, run_id)
    replies = teams_replies(stack)
    assert len(replies) == 1, replies
    assert replies[0]["body"]["attachments"], "the reply carries its cards"
    # the same activity delivered again (a Bot Framework retry) starts nothing
    assert post(survivor_url + "/teams/messages", json=TEAMS, timeout=10).status_code == 200
    time.sleep(0.5)
    assert stack.query("select count(*) from ticketiq.runs") == [(1,)]
    assert len(teams_replies(stack)) == 1
    if fault in ("after_seal@3", "after_deliver@3"):
        # killed after the last step: the answer is handed on, no step asked again
        asks = stack.model_asks(run_id)
        assert asks[3] == 1, asks
    survivor.terminate()


def test_a2a_task_is_completed_by_the_survivor(stack: Stack) -> None:
    victim, victim_url = worker(stack, "victim", faults="after_checkpoint@2")
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"messageId": "task-1", "role": "user",
                    "parts": [{"kind": "text", "text": "go"}]},
        "metadata": dict(SCRIPT),
    }}
    first = post(victim_url + "/a2a", json=send, timeout=10).json()
    assert first["result"]["status"]["state"] == "submitted"
    survivor, survivor_url = worker(stack, "survivor")
    assert victim.wait(30) == KILLED
    state, run_id, outcome = entry_done(stack, "a2a", "task-1")
    assert state == "answered"
    got = post(survivor_url + "/a2a", timeout=10, json={
        "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "task-1"}}).json()
    assert got["result"]["status"]["state"] == "completed"
    assert got["result"]["artifacts"][0]["parts"][0]["text"] == outcome["text"]
    one_loss_one_resume(stack, run_id)
    survivor.terminate()


def test_a_cron_fire_is_handed_back_and_its_outcome_recorded_once(stack: Stack) -> None:
    stack.query("select * from ticketiq.upsert_cron_schedule('triage', 3600, %s, 'ops', 'ops')",
                psycopg_json(SCRIPT))
    victim, _ = worker(stack, "victim", faults="after_checkpoint@2")
    assert victim.wait(30) == KILLED
    survivor, _ = worker(stack, "survivor")
    ((sender_id,),) = stack.query("select sender_id from ticketiq.entries where kind = 'cron'")
    state, run_id, _ = entry_done(stack, "cron", sender_id)
    assert state == "answered"
    one_loss_one_resume(stack, run_id)
    assert stack.query("select count(*) from ticketiq.entries") == [(1,)]
    assert stack.duplicates() == {}
    survivor.terminate()


def test_without_crash_resume_entries_a_cron_run_is_not_resumed(stack: Stack) -> None:
    """TICKETIQ_CRASH_RESUME_ENTRIES=false: the cron run fails, a managed run still resumes."""
    env = {"TICKETIQ_CRASH_RESUME_ENTRIES": "false"}
    stack.query("select * from ticketiq.upsert_cron_schedule('nightly', 3600, %s, 'ops', 'ops')",
                psycopg_json(SCRIPT))
    victim, victim_url = worker(stack, "victim", faults="after_call@2.3", **env)
    # the cron run is not checkpointed: its fault is the third call of step 2
    assert victim.wait(30) == KILLED
    assert stack.query("select count(*) from ticketiq.checkpoints") == [(0,)]
    survivor, survivor_url = worker(stack, "survivor", **env)
    ((sender_id,),) = stack.query("select sender_id from ticketiq.entries where kind = 'cron'")
    state, run_id, outcome = entry_done(stack, "cron", sender_id)
    assert state == "failed" and outcome["reason"].startswith("interrupted")
    assert stack.query("select count(*) from ticketiq.audit where run_id = %s and event in "
                       "('agent.run.adopted', 'agent.run.crash_resumed')", run_id) == [(0,)]
    survivor.terminate()

    victim, victim_url = worker(stack, "victim2", faults="after_checkpoint@2", **env)
    response = post(victim_url + "/playground/runs", timeout=10,
                          json={"run_key": "pg-2", "user": "erin", "input": SCRIPT})
    assert response.status_code == 202
    survivor, _ = worker(stack, "survivor2", **env)
    assert victim.wait(30) == KILLED
    state, run_id, _ = entry_done(stack, "playground", "pg-2")
    assert state == "answered"
    one_loss_one_resume(stack, run_id)
    survivor.terminate()


def test_the_same_request_sent_to_both_processes_starts_one_run(stack: Stack) -> None:
    a, a_url = worker(stack, "a")
    b, b_url = worker(stack, "b")
    request = {"headers": {"X-Delivery-Id": "twice"}, "json": SCRIPT}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(post, url + "/webhooks/github", timeout=10, **request)
                   for url in (a_url, b_url) * 4]
        codes = sorted(f.result().status_code for f in futures)
    assert codes.count(202) == 1 and codes.count(200) == 7
    entry_done(stack, "webhook", "github:twice")
    assert stack.query("select count(*) from ticketiq.runs") == [(1,)]
    assert post(a_url + "/webhooks/github", content=b"[", timeout=10,
                      headers={"X-Delivery-Id": "bad"}).status_code == 422
    assert stack.query("select count(*) from ticketiq.entries") == [(1,)]
    a.terminate()
    b.terminate()


def psycopg_json(value: dict) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value)
