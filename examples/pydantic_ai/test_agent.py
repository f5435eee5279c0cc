"""The Pydantic AI agent under a real SIGKILL, asked through Pydantic AI's OpenAI model.

Two workers over a fresh database run ``app:app`` with ``TRIAGE_AGENT_MODEL=openai:...``
pointed at ticketiq-pg's local server that speaks OpenAI's wire format (it records every
request); tickets come in as ``POST /runs``; the worker holding runs is killed with
SIGKILL.  Judged from the database (every run completed, a resume for each run the kill
caught, no step whose checkpoint the victim wrote asked again) and from the ticket
service's own record (one comment per ticket; the unclassified triage note never sent
twice).  A second test kills a worker right after the unclassified write returned: the
resume settles it ``unknown`` and does not send it again.  Run it from this folder::

    TICKETIQ_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1/postgres pytest test_agent.py
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from harness.provider_sim import (
    ProviderServer,
    Recorded,
    Reply,
    assistant_turns,
    openai_call_id,
    openai_completion,
)
from ticketiq_pg import new_seal_key
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

HERE = Path(__file__).resolve().parent
TICKETS = 6
SEAL_KEYS = new_seal_key()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    """The triage example's ticket service, recording every request; its URL."""
    proc = subprocess.Popen([sys.executable, str(HERE.parent / "triage" / "ticket_service.py"),
                             "--port", "0", "--record", str(tmp_path / "record.jsonl")],
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


def workers(db: str, service: str, sim: ProviderServer, log_dir: Path,
            victim_env: dict[str, str] | None = None,
            extra: dict[str, str] | None = None) -> list[WorkerProcess]:
    env = {"TRIAGE_SERVICE_URL": service, "TRIAGE_AGENT_MODEL": "openai:gpt-4o-mini",
           "OPENAI_BASE_URL": sim.openai_url, "OPENAI_API_KEY": "test-key", **(extra or {})}
    return [WorkerProcess("app:app", db, seal_keys=SEAL_KEYS, name=name, app_dir=HERE,
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
    """The runs ``holder`` holds with a write sent and not yet answered (in doubt)."""
    with psycopg.connect(db) as conn:
        return conn.execute(
            "select distinct r.run_id from ticketiq.calls as c join ticketiq.runs as r "
            "on r.run_id = c.run_id where c.state = 'in_doubt' and r.status = 'running' "
            "and r.lease_holder = %s", (holder,)).fetchall()


def kill_round(service: str, tmp_path: Path, *, tickets: int, think: float,
               tool_seconds: float, mid_tool_call: bool) -> None:
    """Two workers, ``tickets`` runs, the victim SIGKILLed mid-run (mid model step, or
    with a write in flight); judged from the database and the services' own records."""
    with ProviderServer.start() as sim, fresh_database() as db:
        sim.respond("openai", provider(think=think))
        key = make_api_key(db, "triage-client")
        victim, survivor = workers(db, service, sim, tmp_path,
                                   extra={"TRIAGE_TOOL_SECONDS": str(tool_seconds)})
        with victim, survivor:
            run_of = {f"T-{n}": start((victim, survivor)[n % 2].url, key, f"T-{n}", service)
                      for n in range(1, tickets + 1)}
            if mid_tool_call:  # a write sent, its answer on its way: the kill lands there
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
        asked = Counter((ticket_of(r.body), assistant_turns(r.body) + 1)
                        for r in sim.requests("openai"))
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
        # (which is a call the resume itself made).
        for resume in crash_resumes(db):
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


def test_a_sigkilled_worker_asks_no_finished_step_again_and_doubles_no_write(
        service: str, tmp_path: Path) -> None:
    kill_round(service, tmp_path, tickets=TICKETS, think=1.0, tool_seconds=0.0,
               mid_tool_call=False)


def test_a_worker_sigkilled_mid_tool_call_loses_no_run_and_doubles_no_write(
        service: str, tmp_path: Path) -> None:
    """Ten runs over two workers; the victim is killed while a write it sent is in
    flight (applied by the service, its answer not yet back)."""
    kill_round(service, tmp_path, tickets=10, think=0.2, tool_seconds=1.5,
               mid_tool_call=True)


def test_an_unclassified_write_in_doubt_is_settled_unknown_never_sent_again(
        service: str, tmp_path: Path) -> None:
    with ProviderServer.start() as sim, fresh_database() as db:
        sim.respond("openai", provider(think=0.0))
        key = make_api_key(db, "triage-client")
        # SIGKILL right after the second call of step 2 (the note) returned: it landed,
        # and nothing recorded it.
        victim, survivor = workers(db, service, sim, tmp_path,
                                   victim_env={"TICKETIQ_FAULTS": "after_call@2.2"})
        with victim:
            run_id = start(victim.url, key, "T-1", service)
            assert victim.popen is not None and victim.popen.wait(60) == -signal.SIGKILL
        with survivor:
            (ended,) = wait_for_runs(db, 1, timeout=60)
            assert ended["status"] == "completed" and ended["loss_count"] == 1
            assert survivor.stop() == 0
        note = next(c for c in calls(db, run_id) if c.tool == "set_triage_note")
        assert (note.classification, note.step_key is not None) == ("write", True)
        assert (note.state, note.settlement) == ("settled", "unknown"), note
        assert note.outcome["sent_again"] is False
        assert landed(service, "triage") == Counter({"T-1": 1})  # sent once, not again
        assert landed(service, "comments") == Counter({"T-1": 1})
