"""An agent framework's app under a real SIGKILL, judged where it counts.

Shared by the integrations' example tests (examples/pydantic_ai/test_agent.py,
examples/openai_agents/test_agent.py): each example's ``app:app`` is the same triage agent
(read the ticket, post a keyed comment and an unclassified triage note, answer), asked
through its framework's OpenAI model against the local OpenAI-wire server
(:mod:`harness.provider_sim`, which records every request), its tools calling the triage
example's ticket service (which records every write it applied).  :func:`kill_round`
runs two workers and SIGKILLs the one holding runs mid model step or with a write in
flight, then judges: every run completed (0 lost), one comment per ticket and at most one
note by the service's own record (0 duplicates), no step the victim had written asked of
the model again, and the resume audit naming a call made before the loss
``already_made``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

from harness.provider_sim import (
    ProviderServer,
    Recorded,
    Reply,
    assistant_turns,
    openai_call_id,
    openai_completion,
    openai_error,
)
from ticketiq_pg.testing import (
    WorkerProcess,
    calls,
    checkpoints,
    crash_resumes,
    fresh_database,
    make_api_key,
    runs,
    wait_for,
    wait_for_runs,
)

TRIAGE = Path(__file__).resolve().parents[1] / "examples" / "triage"


@contextmanager
def ticket_service(record: Path) -> Iterator[str]:
    """The triage example's ticket service, recording every request in ``record``; its URL."""
    proc = subprocess.Popen([sys.executable, str(TRIAGE / "ticket_service.py"),
                             "--port", "0", "--record", str(record)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline())["url"]
    finally:
        proc.kill()
        proc.wait()


def ticket_of(body: Any) -> str:
    """The ticket a request is about: the run's input, its first user message."""
    first = next(m for m in body["messages"] if m["role"] == "user")
    return json.loads(first["content"])["ticket_id"]


def provider(think: float) -> Any:
    """OpenAI's side of every run: read the ticket, comment and note it, answer."""
    def answer(request: Recorded) -> Reply:
        if not isinstance(request.body, dict):  # cut off mid-send by the kill
            return openai_error(400, "the request body is not JSON")
        ticket, done = ticket_of(request.body), assistant_turns(request.body)
        if done == 0:
            calls = [(openai_call_id(), "get_ticket", {"ticket_id": ticket})]
        elif done == 1:
            calls = [(openai_call_id(), "post_comment", {"ticket_id": ticket, "text": "P2"}),
                     (openai_call_id(), "set_triage_note", {"ticket_id": ticket, "note": "P2"})]
        else:
            return openai_completion(f"{ticket} triaged.", delay=think)
        return openai_completion(None, calls, delay=think)
    return answer


def workers(app_dir: Path, db: str, service: str, sim: ProviderServer, log_dir: Path,
            seal_keys: str, victim_env: dict[str, str] | None = None,
            extra: dict[str, str] | None = None) -> list[WorkerProcess]:
    """Two workers of ``app_dir``'s ``app:app`` (the victim first), the agent's model
    pointed at the provider simulator."""
    env = {"TRIAGE_SERVICE_URL": service, "TRIAGE_AGENT_MODEL": "openai:gpt-4o-mini",
           "OPENAI_BASE_URL": sim.openai_url, "OPENAI_API_KEY": "test-key", **(extra or {})}
    return [WorkerProcess("app:app", db, seal_keys=seal_keys, name=name, app_dir=app_dir,
                          http=True, log_dir=log_dir, env={**env, **extra})
            for name, extra in (("victim", victim_env or {}), ("survivor", {}))]


def start(front: str | None, key: str, ticket: str, service: str) -> str:
    httpx.post(f"{service}/tickets", json={"id": ticket, "title": "Export fails",
                                           "body": "An error page."}).raise_for_status()
    started = httpx.post(f"{front}/runs", json={"input": {"ticket_id": ticket}},
                         headers={"Authorization": f"Bearer {key}",
                                  "Idempotency-Key": f"triage:{ticket}"})
    started.raise_for_status()
    return started.json()["run_id"]


def landed(service: str, kind: str) -> Counter[str]:
    """What the ticket service created, per ticket, from its own record."""
    record = httpx.get(f"{service}/requests").json()["requests"]
    return Counter(r["path"].split("/")[2] for r in record if r["method"] == "POST"
                   and r["path"].endswith(f"/{kind}") and r["effect"] == "created")


def in_flight(db: str, holder: str) -> list[Any]:
    """The runs ``holder`` holds with a write sent and not yet answered (in doubt) beside
    one of the same step that was answered and recorded (done)."""
    with psycopg.connect(db) as conn:
        return conn.execute(
            "select distinct r.run_id from ticketiq.calls as c join ticketiq.runs as r "
            "on r.run_id = c.run_id where c.state = 'in_doubt' and r.status = 'running' "
            "and r.lease_holder = %s and exists (select 1 from ticketiq.calls as d "
            "where d.run_id = c.run_id and d.step = c.step and d.state = 'done')",
            (holder,)).fetchall()


def kill_round(app_dir: Path, service: str, tmp_path: Path, *, seal_keys: str, tickets: int,
               think: float, tool_seconds: float, mid_tool_call: bool) -> dict[str, Any]:
    """Two workers of the app in ``app_dir``, ``tickets`` runs, the holder SIGKILLed mid-run
    (mid model step, or with a write in flight): 0 runs lost, no write doubled by what
    the ticket service recorded, no step the victim wrote asked of the model again."""
    with ProviderServer.start() as sim, fresh_database() as db:
        sim.respond("openai", provider(think=think))
        key = make_api_key(db, "triage-client")
        victim, survivor = workers(app_dir, db, service, sim, tmp_path, seal_keys,
                                   extra={"TRIAGE_TOOL_SECONDS": str(tool_seconds)})
        with victim, survivor:
            run_of = {f"T-{n}": start((victim, survivor)[n % 2].url, key, f"T-{n}", service)
                      for n in range(1, tickets + 1)}
            if mid_tool_call:  # the note in flight, the comment done: the kill lands there
                caught = wait_for("the victim to have a write in flight",
                                  lambda: in_flight(db, victim.name), 30)
            else:  # step 1 written, step 2 being asked: the kill lands mid model step
                caught = wait_for("the victim to hold a run in flight", lambda: [
                    r["run_id"] for r in victim.held_runs() if r["last_step"] == 1], 30)
            assert victim.kill() == -signal.SIGKILL

            ended = wait_for_runs(db, tickets, timeout=90)
            assert {r["status"] for r in ended} == {"completed"}, ended  # 0 lost
            lost = {r["run_id"] for r in ended if r["loss_count"]}
            assert {uuid.UUID(str(r[0] if isinstance(r, tuple) else r)) for r in caught} <= lost
            assert Counter(r["run_id"] for r in crash_resumes(db)) == Counter(lost)
            assert survivor.stop() == 0

        # The provider was asked each step the victim had written once, never again.
        # (A request the kill cut off mid-send was recorded without a body: never asked.)
        asked = Counter((ticket_of(r.body), assistant_turns(r.body) + 1)
                        for r in sim.requests("openai") if isinstance(r.body, dict))
        epochs = {r["run_id"]: r["epoch"] for r in runs(db)}
        written_before = 0
        for ticket, run_id in run_of.items():
            for c in checkpoints(db, run_id):
                if c.epoch < epochs[uuid.UUID(run_id)]:  # written before the run was lost
                    written_before += 1
                    assert asked[(ticket, c.step)] == 1, (ticket, c, asked)
            assert all(asked[(ticket, s)] <= 2 for s in (1, 2, 3)), asked
        assert written_before >= len(caught)
        # The resume audit names a call made before the loss 'already_made', never 'made'
        # (which is a call the resume itself made): the comment of each run caught with
        # its note in flight was made (and recorded) before the kill.
        resumes = crash_resumes(db)
        if mid_tool_call:
            for run_id in {r[0] for r in caught}:
                told = [s["settlement"] for r in resumes if r["run_id"] == run_id
                        for s in r["detail"]["settlements"]]
                assert "already_made" in told and "unknown" in told, (run_id, told)
        for resume in resumes:
            rows = {c.call_id: c for c in calls(db, resume["run_id"])
                    if c.step == resume["detail"]["step"]}
            for s in resume["detail"]["settlements"]:
                row = rows.get(s["call_id"])
                if row is not None and row.state == "done":
                    made_here = row.finished_epoch == resume["epoch"]
                    assert s["settlement"] == ("made" if made_here else "already_made"), s
        # What landed, from the service's own record: one comment per ticket, one note at
        # most (an unclassified write in doubt is never sent again): 0 duplicates.
        assert landed(service, "comments") == Counter({t: 1 for t in run_of})
        assert all(n <= 1 for n in landed(service, "triage").values())
        return {"runs": tickets, "lost": len(lost), "written_before": written_before,
                "settlements": dict(Counter(s["settlement"] for r in crash_resumes(db)
                                            for s in r["detail"]["settlements"]))}
