"""The escalation workflow under a real SIGKILL, tested as an app author tests an app.

One worker starts an escalation per P1 ticket through its front; each posts its
escalation comment and waits for an acknowledgement, holding nothing.  Two are
acknowledged and hand their ticket to the triage agent (a child run); the worker is
SIGKILLed while it holds them in flight.  A second worker takes them over, and the other
two are acknowledged through its front (one acknowledgement sent twice with its key).
Judged from the database (every run completed, a resume audited for each run the kill
caught, one child per workflow) and from the ticket service's own record (each ticket
got its escalation comment and its triage comment, once each).  From this folder::

    TICKETIQ_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1/postgres pytest test_escalation.py
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from test_triage import HERE, SEAL_KEYS, service

from ticketiq_pg.testing import (
    WorkerProcess,
    crash_resumes,
    fresh_database,
    make_api_key,
    runs,
    wait_for,
    wait_for_runs,
)

TICKETS = 4
_ = service  # the ticket service fixture, shared with test_triage.py


class Escalations:
    """A fresh database, a client's key, the ticket service: what each test below starts
    its workers on and judges by."""

    def __init__(self, db: str, service: str, log_dir: Path) -> None:
        self.db, self.service, self.log_dir = db, service, log_dir
        self.auth = {"Authorization": f"Bearer {make_api_key(db, 'escalation-client')}"}

    def worker(self, name: str, think_seconds: float = 0.2) -> WorkerProcess:
        # the ack wait outlasts every test: an acknowledgement is what ends a wait
        return WorkerProcess("escalation:app", self.db, seal_keys=SEAL_KEYS, name=name,
                             app_dir=HERE, http=True, log_dir=self.log_dir,
                             env={"TRIAGE_SERVICE_URL": self.service,
                                  "TRIAGE_THINK_SECONDS": str(think_seconds),
                                  "ESCALATION_ACK_SECONDS": "120"})

    def open_tickets(self, tickets: list[str]) -> None:
        for ticket in tickets:  # P1s: each is escalated
            httpx.post(f"{self.service}/tickets", json={
                "id": ticket, "title": "Checkout is down", "body": "An outage."},
            ).raise_for_status()

    def start(self, front: str, kind: str, key: str, run_input: dict[str, Any]) -> str:
        started = httpx.post(f"{front}/runs", headers={**self.auth, "Idempotency-Key": key},
                             json={"kind": kind, "input": run_input})
        started.raise_for_status()
        return str(started.json()["run_id"])

    def ack(self, front: str, run_id: str, payload: str = "on-call") -> httpx.Response:
        """Acknowledge the escalation ``run_id``, keyed by the run: sent again, it is the
        same acknowledgement."""
        response = httpx.post(f"{front}/runs/{run_id}/signals/ack", headers={
            **self.auth, "Idempotency-Key": f"ack-{run_id}"}, json={"payload": payload})
        response.raise_for_status()
        return response

    def answer(self, front: str, run_id: str) -> dict[str, Any]:
        return httpx.get(f"{front}/runs/{run_id}", headers=self.auth).json()

    def children(self, parent: str) -> list[dict[str, str]]:
        """The escalations ``parent`` started, each with its ticket, every one (a second
        child of one ticket is a second row)."""
        with psycopg.connect(self.db) as conn:
            rows = conn.execute(
                "select input ->> 'ticket_id', run_id::text, status::text "
                "from ticketiq.runs where parent_run_id = %s", (parent,)).fetchall()
        return [{"ticket_id": t, "run_id": r, "status": status} for t, r, status in rows]

    def comments_landed(self) -> Counter[str]:
        """Per ticket, the comments the ticket service's own record says it created."""
        record = httpx.get(f"{self.service}/requests").json()["requests"]
        return Counter(r["path"].split("/")[2] for r in record if r["method"] == "POST"
                       and r["path"].endswith("/comments") and r["effect"] == "created")


@pytest.fixture
def esc(service: str, tmp_path: Path) -> Iterator[Escalations]:  # noqa: F811
    with fresh_database() as db:
        yield Escalations(db, service, tmp_path)


def test_a_sigkilled_worker_escalates_every_ticket_once(esc: Escalations) -> None:
    esc.open_tickets([f"T-{n}" for n in range(1, TICKETS + 1)])
    run_ids = []
    # the triage agent thinks longer here: the acknowledged runs are still held at the kill
    with esc.worker("victim", think_seconds=0.5) as victim:
        for n in range(1, TICKETS + 1):
            run_ids.append(esc.start(victim.url, "escalation", f"esc-T-{n}",
                                     {"ticket_id": f"T-{n}"}))

        def waiting() -> bool:
            rows = runs(esc.db, statuses=["suspended"])
            return len([r for r in rows if str(r["run_id"]) in run_ids]) == TICKETS

        wait_for("every escalation to wait for its ack", waiting, 30)
        for run_id in run_ids[:2]:
            assert esc.ack(victim.url, run_id, f"on-call {run_id}").status_code == 202
        caught = wait_for("the victim to hold the acknowledged runs in flight",
                          lambda: victim.held_runs(), 30)
        assert victim.kill() == -signal.SIGKILL

    with esc.worker("survivor", think_seconds=0.5) as survivor:
        for run_id in run_ids[2:]:
            assert esc.ack(survivor.url, run_id, f"on-call {run_id}").status_code == 202
        # the same acknowledgement again (a retried request): delivered once
        again = esc.ack(survivor.url, run_ids[3], f"on-call {run_ids[3]}")
        assert again.status_code == 200 and again.json()["created"] is False

        ended = wait_for_runs(esc.db, 2 * TICKETS, timeout=90)  # the workflows, their children
        assert {r["status"] for r in ended} == {"completed"}, ended
        resumed = Counter(str(r["run_id"]) for r in crash_resumes(esc.db))
        assert {str(r["run_id"]) for r in caught} <= set(resumed)
        for run_id in run_ids:
            answer = esc.answer(survivor.url, run_id)
            assert answer["answer"]["output"]["acked_by"] == f"on-call {run_id}"
        assert survivor.stop() == 0

    # What landed, from the ticket service's own record: per ticket one escalation
    # comment and one triage comment (the child agent's), each once.
    assert esc.comments_landed() == Counter({f"T-{n}": 2 for n in range(1, TICKETS + 1)})


def test_a_batch_escalates_each_ticket_once_across_a_sigkill(esc: Escalations) -> None:
    """``escalation_batch``: one child escalation per ticket, all at once.  The worker is
    SIGKILLed while the children wait for their acknowledgements; the survivor's front
    takes them, and the batch ends with each ticket escalated by one child, once."""
    tickets = [f"B-{n}" for n in range(1, 4)]
    esc.open_tickets(tickets)

    with esc.worker("victim") as victim:
        batch = esc.start(victim.url, "escalation_batch", "batch-1", {"ticket_ids": tickets})
        # every child waits for its ack; the batch waits for them, holding nothing
        wait_for("the three escalations to wait for their ack", lambda: len(
            [c for c in esc.children(batch) if c["status"] == "suspended"]) == 3, 30)
        assert victim.kill() == -signal.SIGKILL

    with esc.worker("survivor") as survivor:
        for child in esc.children(batch):
            esc.ack(survivor.url, child["run_id"])
        # the batch, its three escalations and their three triage runs
        ended = wait_for_runs(esc.db, 7, timeout=90)
        assert {r["status"] for r in ended} == {"completed"}, ended
        escalations = esc.answer(survivor.url, batch)["answer"]["output"]["escalations"]
        assert sorted(e["ticket_id"] for e in escalations) == tickets
        assert {(e["status"], e["acked_by"]) for e in escalations} == {
            ("completed", "on-call")}
        assert len(esc.children(batch)) == 3  # one child per ticket, never a second
        assert survivor.stop() == 0

    assert esc.comments_landed() == Counter({ticket: 2 for ticket in tickets})


def test_the_first_escalation_to_end_owns_the_incident_across_a_sigkill(
        esc: Escalations) -> None:
    """``escalation_first``: the tickets of one incident escalated at once, the run going
    on from the first escalation to end.  The worker is SIGKILLed while they all wait for
    their acknowledgements (the run waiting for the first, holding nothing); on the
    survivor one ticket is acknowledged: its escalation is the first, the run ends with
    it, and the others, acknowledged later, end on their own, each once."""
    tickets = [f"F-{n}" for n in range(1, 4)]
    esc.open_tickets(tickets)

    def child_of(ticket: str) -> str:
        (run_id,) = [c["run_id"] for c in esc.children(incident) if c["ticket_id"] == ticket]
        return run_id

    with esc.worker("victim") as victim:
        incident = esc.start(victim.url, "escalation_first", "incident-1",
                             {"ticket_ids": tickets})
        wait_for("the three escalations to wait for their ack", lambda: len(
            [c for c in esc.children(incident) if c["status"] == "suspended"]) == 3, 30)
        assert victim.kill() == -signal.SIGKILL

    with esc.worker("survivor") as survivor:
        esc.ack(survivor.url, child_of("F-2"))
        wait_for("the incident to end", lambda: esc.answer(
            survivor.url, incident)["status"] == "completed", 90)
        owner = esc.answer(survivor.url, incident)["answer"]["output"]
        assert (owner["owner"], owner["ticket_id"], owner["acked_by"]) == (
            "ticket.F-2", "F-2", "on-call")
        assert sorted(owner["still_escalating"]) == sorted(
            child_of(t) for t in ("F-1", "F-3"))
        for ticket in ("F-1", "F-3"):
            esc.ack(survivor.url, child_of(ticket))
        # the incident, its three escalations and their three triage runs
        ended = wait_for_runs(esc.db, 7, timeout=90)
        assert {r["status"] for r in ended} == {"completed"}, ended
        assert len(esc.children(incident)) == 3  # one child per ticket, never a second
        assert survivor.stop() == 0

    assert esc.comments_landed() == Counter({ticket: 2 for ticket in tickets})
