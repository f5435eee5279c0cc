"""The console's run page stops, restarts and forks a run, in a real browser (issue 42).

Debian's chromium, driven by selenium, against the triage example's worker: a person
stops a ticket's run while it thinks, restarts it from the page (it goes on from its last
written step and comments once), then forks the finished run from its step 2 (the
comment step): the fork comments again under its own key, which the ticket service's
own record shows beside the source's, each applied once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import psycopg
from test_console import browser, left_page, service, shows  # noqa: F401 - the fixtures
from test_example_app import EXAMPLE, Example, comment_requests

from ticketiq_pg import new_seal_key
from ticketiq_pg.testing import WorkerProcess, fresh_database, make_api_key, wait_for


def status(db: str, run_id: str) -> str:
    with psycopg.connect(db) as conn:
        row = conn.execute("select status::text from ticketiq.runs where run_id = %s",
                           (run_id,)).fetchone()
    return str(row[0]) if row else ""


def test_an_admin_stops_restarts_and_forks_a_run_in_the_browser(
        pg_server_url: str, browser: Any, service: Example, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    httpx.post(f"{service.service_url}/tickets", json={
        "id": "T-1", "title": "Export fails", "body": "An error."}).raise_for_status()
    with fresh_database(pg_server_url) as db:
        client = make_api_key(db, "triage-client")
        admin = make_api_key(db, "dana", scopes=["admin"])
        with WorkerProcess("app:app", db, seal_keys=new_seal_key(), app_dir=EXAMPLE,
                           http=True, log_dir=tmp_path,
                           env={"TRIAGE_SERVICE_URL": service.service_url,
                                "TRIAGE_THINK_SECONDS": "1.5"}) as worker:
            run_id = httpx.post(f"{worker.url}/ticket-events", json={
                "event_id": "created:T-1", "ticket_id": "T-1", "type": "ticket.created"},
                headers={"Authorization": f"Bearer {client}"}).raise_for_status().json()["run_id"]
            browser.get(f"{worker.url}/console/login")
            browser.find_element(By.NAME, "token").send_keys(admin)
            browser.find_element(By.TAG_NAME, "button").click()
            shows(browser, "Signed in as dana")

            def click(element_id: str, then: str) -> None:
                before = browser.find_element(By.TAG_NAME, "body")
                browser.find_element(By.ID, element_id).click()
                left_page(browser, before)
                shows(browser, then)

            wait_for("the run to start", lambda: status(db, run_id) == "running", 30)
            browser.get(f"{worker.url}/console/runs/{run_id}")
            stop = browser.find_element(By.NAME, "stop")
            stop.click()
            wait_for("the run to stop", lambda: status(db, run_id) == "stopped", 30)
            browser.get(f"{worker.url}/console/runs/{run_id}")
            browser.find_element(By.NAME, "reason").send_keys("stopped by mistake")
            click("restart-run", "The run")
            wait_for("the restarted run to end", lambda: status(db, run_id) == "completed", 60)

            browser.get(f"{worker.url}/console/runs/{run_id}")
            step = browser.find_element(By.ID, "fork-step")
            step.clear()
            step.send_keys("2")
            click("fork-run", "The run")
            fork = browser.current_url.rsplit("/", 1)[1]
            assert fork != run_id
            wait_for("the fork to end", lambda: status(db, fork) == "completed", 60)

        with psycopg.connect(db) as conn:
            audit = dict(conn.execute(
                "select event, actor from ticketiq.audit where event in"
                " ('agent.run.stop_requested', 'agent.run.restarted', 'agent.run.forked')"
            ).fetchall())
            keys = dict(conn.execute("select run_id::text, step_key from ticketiq.calls"
                                     " where tool = 'tickets.comment'").fetchall())
    assert audit == {"agent.run.stop_requested": "dana", "agent.run.restarted": "dana",
                     "agent.run.forked": "dana"}
    landed = [(r["idempotency_key"], r["effect"])
              for r in comment_requests(service.requests(), "T-1")]
    assert sorted(landed) == sorted([(keys[run_id], "created"), (keys[fork], "created")])
    assert keys[run_id] != keys[fork]
