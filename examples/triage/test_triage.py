"""The triage app under a real SIGKILL, tested as an app author tests an app.

Two workers over a fresh database; tickets come in through their fronts; the one
holding runs is killed with SIGKILL. Judged from the database (every run completed, a
loss and a resume for each run the kill caught) and from the ticket service's own
record (one comment landed per ticket). Run it from this folder::

    TICKETIQ_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1/postgres pytest test_triage.py

(the URL of a role that may create databases; unset, a private cluster is started).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ticketiq_pg import new_seal_key
from ticketiq_pg.testing import (
    WorkerProcess,
    calls,
    checkpoints,
    crash_resumes,
    fresh_database,
    make_api_key,
    wait_for,
    wait_for_runs,
)

HERE = Path(__file__).resolve().parent
TICKETS = 6
SEAL_KEYS = new_seal_key()  # every worker of one database shares it


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    """The ticket service, recording every request it receives; its URL."""
    proc = subprocess.Popen([sys.executable, "ticket_service.py", "--port", "0", "--record",
                             str(tmp_path / "record.jsonl")], cwd=HERE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline())["url"]
    finally:
        proc.kill()
        proc.wait()


def test_a_sigkilled_worker_loses_no_ticket_and_doubles_no_comment(
        service: str, tmp_path: Path) -> None:
    with fresh_database() as db:
        key = make_api_key(db, "triage-client")
        workers = [WorkerProcess("app:app", db, seal_keys=SEAL_KEYS, name=name, app_dir=HERE,
                                 http=True, log_dir=tmp_path,
                                 env={"TRIAGE_SERVICE_URL": service,
                                      "TRIAGE_THINK_SECONDS": "0.5"})
                   for name in ("victim", "survivor")]
        with workers[0] as victim, workers[1] as survivor:
            for n in range(1, TICKETS + 1):
                ticket = f"T-{n}"
                httpx.post(f"{service}/tickets", json={
                    "id": ticket, "title": "Export fails", "body": "An error page."},
                ).raise_for_status()
                front = (victim, survivor)[n % 2].url
                httpx.post(f"{front}/ticket-events", json={
                    "event_id": f"created:{ticket}", "ticket_id": ticket,
                    "type": "ticket.created"}, headers={"Authorization": f"Bearer {key}"},
                ).raise_for_status()

            def far_from_their_end() -> list[dict]:
                # Two model steps (0.5 s each) or more to go: still in flight at the kill.
                return [r for r in victim.held_runs() if r["last_step"] <= 1]

            caught = wait_for("the victim to hold a run in flight", far_from_their_end, 30)
            assert victim.kill() == -signal.SIGKILL

            ended = wait_for_runs(db, TICKETS, timeout=60)
            assert {r["status"] for r in ended} == {"completed"}, ended
            lost = {r["run_id"] for r in ended if r["loss_count"]}
            assert {r["run_id"] for r in caught} <= lost
            # One resume audited per run the kill caught, by the survivor.
            resumes = crash_resumes(db)
            assert Counter(r["run_id"] for r in resumes) == Counter(lost)
            assert {r["actor"] for r in resumes} == {"survivor"}
            for run_id in lost:
                # Steps 1 and 2 checkpointed once each (3 is the answer); the comment sent
                # with its step key and finished: made, or resent with the same key on resume.
                assert [c.step for c in checkpoints(db, run_id)] == [1, 2]
                (comment,) = [c for c in calls(db, run_id) if c.tool == "tickets.comment"]
                assert comment.step_key and comment.state in ("done", "settled"), comment
            assert survivor.stop() == 0

        # What landed, from the ticket service's own record: one comment per ticket.
        record = httpx.get(f"{service}/requests").json()["requests"]
        comments = Counter(r["path"].split("/")[2] for r in record if r["method"] == "POST"
                           and r["path"].endswith("/comments") and r["effect"] == "created")
        assert comments == Counter({f"T-{n}": 1 for n in range(1, TICKETS + 1)})

