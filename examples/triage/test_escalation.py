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

import httpx
import psycopg
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


def test_a_sigkilled_worker_escalates_every_ticket_once(service: str, tmp_path) -> None:  # noqa: F811
    with fresh_database() as db:
        key = make_api_key(db, "escalation-client")
        auth = {"Authorization": f"Bearer {key}"}

        def worker(name: str) -> WorkerProcess:
            return WorkerProcess("escalation:app", db, seal_keys=SEAL_KEYS, name=name,
                                 app_dir=HERE, http=True, log_dir=tmp_path,
                                 env={"TRIAGE_SERVICE_URL": service,
                                      "TRIAGE_THINK_SECONDS": "0.5",
                                      "ESCALATION_ACK_SECONDS": "120"})

        def ack(front: str, run_id: str, sender: str) -> httpx.Response:
            response = httpx.post(f"{front}/runs/{run_id}/signals/ack", headers={
                **auth, "Idempotency-Key": sender}, json={"payload": f"on-call {sender}"})
            response.raise_for_status()
            return response

        run_ids = []
        with worker("victim") as victim:
            for n in range(1, TICKETS + 1):
                httpx.post(f"{service}/tickets", json={
                    "id": f"T-{n}", "title": "Checkout is down", "body": "An outage."},
                ).raise_for_status()
                started = httpx.post(f"{victim.url}/runs", headers={
                    **auth, "Idempotency-Key": f"esc-T-{n}"},
                    json={"kind": "escalation", "input": {"ticket_id": f"T-{n}"}})
                started.raise_for_status()
                run_ids.append(started.json()["run_id"])

            def waiting() -> bool:
                rows = runs(db, statuses=["suspended"])
                return len([r for r in rows if str(r["run_id"]) in run_ids]) == TICKETS

            wait_for("every escalation to wait for its ack", waiting, 30)
            for run_id in run_ids[:2]:
                assert ack(victim.url, run_id, f"ack-{run_id}").status_code == 202
            caught = wait_for("the victim to hold the acknowledged runs in flight",
                              lambda: victim.held_runs(), 30)
            assert victim.kill() == -signal.SIGKILL

        with worker("survivor") as survivor:
            for run_id in run_ids[2:]:
                assert ack(survivor.url, run_id, f"ack-{run_id}").status_code == 202
            # the same acknowledgement again (a retried request): delivered once
            again = ack(survivor.url, run_ids[3], f"ack-{run_ids[3]}")
            assert again.status_code == 200 and again.json()["created"] is False

            ended = wait_for_runs(db, 2 * TICKETS, timeout=90)  # the workflows, their children
            assert {r["status"] for r in ended} == {"completed"}, ended
            resumed = Counter(str(r["run_id"]) for r in crash_resumes(db))
            assert {str(r["run_id"]) for r in caught} <= set(resumed)
            for run_id in run_ids:
                answer = httpx.get(f"{survivor.url}/runs/{run_id}", headers=auth).json()
                assert answer["answer"]["output"]["acked_by"] == f"on-call ack-{run_id}"
            assert survivor.stop() == 0

        # What landed, from the ticket service's own record: per ticket one escalation
        # comment and one triage comment (the child agent's), each once.
        record = httpx.get(f"{service}/requests").json()["requests"]
        comments = Counter(r["path"].split("/")[2] for r in record if r["method"] == "POST"
                           and r["path"].endswith("/comments") and r["effect"] == "created")
        assert comments == Counter({f"T-{n}": 2 for n in range(1, TICKETS + 1)})


def test_a_batch_escalates_each_ticket_once_across_a_sigkill(service: str, tmp_path) -> None:  # noqa: F811
    """``escalation_batch``: one child escalation per ticket, all at once.  The worker is
    SIGKILLed while the children wait for their acknowledgements; the survivor's front
    takes them, and the batch ends with each ticket escalated by one child, once."""
    with fresh_database() as db:
        key = make_api_key(db, "escalation-client")
        auth = {"Authorization": f"Bearer {key}"}

        def worker(name: str) -> WorkerProcess:
            return WorkerProcess("escalation:app", db, seal_keys=SEAL_KEYS, name=name,
                                 app_dir=HERE, http=True, log_dir=tmp_path,
                                 env={"TRIAGE_SERVICE_URL": service,
                                      "TRIAGE_THINK_SECONDS": "0.2",
                                      "ESCALATION_ACK_SECONDS": "120"})

        tickets = [f"B-{n}" for n in range(1, 4)]
        for ticket in tickets:
            httpx.post(f"{service}/tickets", json={
                "id": ticket, "title": "Checkout is down", "body": "An outage."},
            ).raise_for_status()

        def children(batch: str) -> list[dict]:
            return [r for r in runs(db) if str(r["parent_run_id"]) == batch]

        with worker("victim") as victim:
            started = httpx.post(f"{victim.url}/runs", headers={
                **auth, "Idempotency-Key": "batch-1"},
                json={"kind": "escalation_batch", "input": {"ticket_ids": tickets}})
            started.raise_for_status()
            batch = started.json()["run_id"]
            # every child waits for its ack; the batch waits for them, holding nothing
            wait_for("the three escalations to wait for their ack", lambda: len(
                [c for c in children(batch) if c["status"] == "suspended"]) == 3, 30)
            assert victim.kill() == -signal.SIGKILL

        with worker("survivor") as survivor:
            for child in children(batch):
                httpx.post(f"{survivor.url}/runs/{child['run_id']}/signals/ack", headers={
                    **auth, "Idempotency-Key": f"ack-{child['run_id']}"},
                    json={"payload": "on-call"}).raise_for_status()
            # the batch, its three escalations and their three triage runs
            ended = wait_for_runs(db, 7, timeout=90)
            assert {r["status"] for r in ended} == {"completed"}, ended
            answer = httpx.get(f"{survivor.url}/runs/{batch}", headers=auth).json()
            escalations = answer["answer"]["output"]["escalations"]
            assert sorted(e["ticket_id"] for e in escalations) == tickets
            assert {(e["status"], e["acked_by"]) for e in escalations} == {
                ("completed", "on-call")}
            assert len(children(batch)) == 3  # one child per ticket, never a second
            assert survivor.stop() == 0

        record = httpx.get(f"{service}/requests").json()["requests"]
        comments = Counter(r["path"].split("/")[2] for r in record if r["method"] == "POST"
                           and r["path"].endswith("/comments") and r["effect"] == "created")
        assert comments == Counter({ticket: 2 for ticket in tickets})


def test_the_first_escalation_to_end_owns_the_incident_across_a_sigkill(
        service: str, tmp_path) -> None:  # noqa: F811
    """``escalation_first``: the tickets of one incident escalated at once, the run going
    on from the first escalation to end.  The worker is SIGKILLed while they all wait for
    their acknowledgements (the run waiting for the first, holding nothing); on the
    survivor one ticket is acknowledged: its escalation is the first, the run ends with
    it, and the others, acknowledged later, end on their own, each once."""
    with fresh_database() as db:
        key = make_api_key(db, "escalation-client")
        auth = {"Authorization": f"Bearer {key}"}

        def worker(name: str) -> WorkerProcess:
            return WorkerProcess("escalation:app", db, seal_keys=SEAL_KEYS, name=name,
                                 app_dir=HERE, http=True, log_dir=tmp_path,
                                 env={"TRIAGE_SERVICE_URL": service,
                                      "TRIAGE_THINK_SECONDS": "0.2",
                                      "ESCALATION_ACK_SECONDS": "120"})

        tickets = [f"F-{n}" for n in range(1, 4)]
        for ticket in tickets:
            httpx.post(f"{service}/tickets", json={
                "id": ticket, "title": "Checkout is down", "body": "An outage."},
            ).raise_for_status()

        def children(parent: str) -> dict[str, dict]:
            with psycopg.connect(db) as conn:  # the escalations by ticket
                rows = conn.execute(
                    "select input ->> 'ticket_id', run_id::text, status::text "
                    "from ticketiq.runs where parent_run_id = %s", (parent,)).fetchall()
            return {t: {"run_id": r, "status": status} for t, r, status in rows}

        def ack(url: str, child: dict) -> None:
            httpx.post(f"{url}/runs/{child['run_id']}/signals/ack", headers={
                **auth, "Idempotency-Key": f"ack-{child['run_id']}"},
                json={"payload": "on-call"}).raise_for_status()

        with worker("victim") as victim:
            started = httpx.post(f"{victim.url}/runs", headers={
                **auth, "Idempotency-Key": "incident-1"},
                json={"kind": "escalation_first", "input": {"ticket_ids": tickets}})
            started.raise_for_status()
            incident = started.json()["run_id"]
            wait_for("the three escalations to wait for their ack", lambda: len(
                [c for c in children(incident).values() if c["status"] == "suspended"]) == 3,
                30)
            assert victim.kill() == -signal.SIGKILL

        with worker("survivor") as survivor:
            ack(survivor.url, children(incident)["F-2"])
            wait_for("the incident to end", lambda: httpx.get(
                f"{survivor.url}/runs/{incident}", headers=auth).json()["status"]
                == "completed", 90)
            answer = httpx.get(f"{survivor.url}/runs/{incident}", headers=auth).json()
            owner = answer["answer"]["output"]
            assert (owner["owner"], owner["ticket_id"], owner["acked_by"]) == (
                "ticket.F-2", "F-2", "on-call")
            assert sorted(owner["still_escalating"]) == sorted(
                str(children(incident)[t]["run_id"]) for t in ("F-1", "F-3"))
            for ticket in ("F-1", "F-3"):
                ack(survivor.url, children(incident)[ticket])
            # the incident, its three escalations and their three triage runs
            ended = wait_for_runs(db, 7, timeout=90)
            assert {r["status"] for r in ended} == {"completed"}, ended
            assert len(children(incident)) == 3  # one child per ticket, never a second
            assert survivor.stop() == 0

        record = httpx.get(f"{service}/requests").json()["requests"]
        comments = Counter(r["path"].split("/")[2] for r in record if r["method"] == "POST"
                           and r["path"].endswith("/comments") and r["effect"] == "created")
        assert comments == Counter({ticket: 2 for ticket in tickets})
