"""The operator's console (``/console`` on the front, ticketiq_pg/front/console.py).

Over HTTP: only an admin's credential gets in, a form from another origin is refused,
and a refusal writes nothing (checked from the database).  In a real browser (Debian's
chromium, driven by selenium): the triage example's worker holding a security ticket's
comment for approval is SIGKILLed; the other worker takes the run over, and on its
console a person signs in, sees the approval, approves it, and the run ends there with
its comment landed once.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from helpers import body, call, fingerprint_sync, start
from test_example_app import EXAMPLE, Example, comment_requests

from ticketiq_pg import new_seal_key
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.console import COOKIE
from ticketiq_pg.testing import (
    WorkerProcess,
    crash_resumes,
    fresh_database,
    make_api_key,
    runs,
    wait_for,
)

ORIGIN = {"Origin": "http://app"}


@pytest.fixture
async def console(db_url: str) -> AsyncIterator[dict[str, Any]]:
    db = await TicketIQ.connect(db_url)
    user, _ = await create_api_key(db, "alice")
    admin, _ = await create_api_key(db, "ops", scopes=["admin"])
    run = await start(db, holder="p1", ttl=3600, may_wait=True)
    await db.write_checkpoint(run.run_id, 1, 1, body(call("w-app")), "s", "key-a")
    approval = await db.waits.request_approval(run.run_id, 1, 1, "w-app", {"title": "close"})
    await db.suspend_run(run.run_id, 1, f"approval:{approval.approval_id}")
    other = await start(db, holder="p1", ttl=3600, owner="<script>alert(1)</script>")
    app = create_app(db)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
        yield {"http": http, "user": user, "admin": admin, "run_id": run.run_id,
               "running": other.run_id,
               "approval_id": approval.approval_id, "url": db_url}
    await app.state.waiter.stop()
    await db.close()


def tables(url: str) -> dict[str, tuple[int, str]]:
    with psycopg.connect(url) as conn:
        return fingerprint_sync(conn)


async def sign_in(http: httpx.AsyncClient, token: str) -> httpx.Response:
    return await http.post("/console/login", content=f"token={token}", headers={
        **ORIGIN, "Content-Type": "application/x-www-form-urlencoded"})


async def test_without_an_admin_credential_the_console_shows_nothing_and_writes_nothing(
        console: dict[str, Any]) -> None:
    http, before = console["http"], tables(console["url"])
    approve = f"/console/approvals/{console['approval_id']}"
    for path in ("/console/", f"/console/runs/{console['run_id']}"):
        got = await http.get(path)
        assert (got.status_code, got.headers["location"]) == (303, "/console/login"), path
    got = await http.post(approve, content="decision=approve", headers=ORIGIN)
    assert (got.status_code, got.headers["location"]) == (303, "/console/login")
    # A bad key, and a good key without the admin scope: refused, no cookie.
    assert (await sign_in(http, "tiq_0123456789abcdef_no-such-secret")).status_code == 401
    assert (await sign_in(http, "not a key")).status_code == 401
    refused = await sign_in(http, console["user"])
    assert refused.status_code == 403 and "has no admin scope" in refused.text
    # An admin's key, from another origin's form: refused too.
    elsewhere = await http.post("/console/login", content=f"token={console['admin']}",
                                headers={"Origin": "http://evil.example"})
    assert elsewhere.status_code == 403
    assert COOKIE not in http.cookies
    # The cookie of a user without the scope gets no page either.
    http.cookies.set(COOKIE, console["user"], path="/console")
    assert (await http.get("/console/")).status_code == 403
    got = await http.post(approve, content="decision=approve", headers=ORIGIN)
    assert got.status_code == 403
    assert tables(console["url"]) == before


async def test_an_admin_signs_in_sees_the_approval_and_decides_it(
        console: dict[str, Any]) -> None:
    http = console["http"]
    signed = await sign_in(http, console["admin"])
    assert (signed.status_code, signed.headers["location"]) == (303, "/console/")
    cookie = signed.headers["set-cookie"]
    assert all(part in cookie for part in ("HttpOnly", "SameSite=strict", "Path=/console"))
    page = await http.get("/console/")
    assert page.status_code == 200
    assert str(console["approval_id"]) in page.text and "Signed in as <b>ops</b>" in page.text
    # What the database holds is shown as text, never as markup.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>" not in page.text
    shown = await http.get(f"/console/runs/{console['run_id']}")
    assert shown.status_code == 200 and "suspended" in shown.text

    approve = f"/console/approvals/{console['approval_id']}"
    before = tables(console["url"])
    # From another origin, or with no origin at all: refused, nothing written.
    for headers in ({"Origin": "http://evil.example"}, {}):
        got = await http.post(approve, content="decision=approve", headers=headers)
        assert got.status_code == 403, headers
    assert (await http.post(approve, content="decision=maybe", headers=ORIGIN)
            ).status_code == 422
    assert (await http.post("/console/approvals/not-a-uuid", content="decision=approve",
                            headers=ORIGIN)).status_code == 404
    assert (await http.get("/console/runs/00000000-0000-0000-0000-000000000000")
            ).status_code == 404
    assert tables(console["url"]) == before

    got = await http.post(approve, content="decision=approve", headers=ORIGIN)
    assert (got.status_code, got.headers["location"]) == (303, "/console/")
    with psycopg.connect(console["url"]) as conn:
        assert conn.execute("select state, decided_by from ticketiq.approval_requests"
                            " where approval_id = %s", (console["approval_id"],)
                            ).fetchone() == ("approved", "ops")
    again = await http.post(approve, content="decision=reject", headers=ORIGIN)
    assert again.status_code == 409
    # The decision is in the audit the overview shows.
    assert "approval.approved" in (await http.get("/console/")).text
    # Signed out: the cookie is gone and the pages with it.
    await http.post("/console/logout", headers=ORIGIN)
    assert (await http.get("/console/")).status_code == 303


async def test_an_admin_stops_a_run_from_its_page(console: dict[str, Any]) -> None:
    http, run_id = console["http"], console["running"]
    stop = f"/console/runs/{run_id}/stop"
    assert (await http.post(stop, headers=ORIGIN)).status_code == 303  # to sign in
    await sign_in(http, console["admin"])
    page = await http.get(f"/console/runs/{run_id}")
    assert f'action="{stop}"' in page.text
    before = tables(console["url"])
    assert (await http.post(stop, headers={"Origin": "http://evil.example"})).status_code == 403
    assert tables(console["url"]) == before
    stopped = await http.post(stop, headers=ORIGIN)
    assert (stopped.status_code, stopped.headers["location"]) == (303, f"/console/runs/{run_id}")
    with psycopg.connect(console["url"]) as conn:
        assert conn.execute("select stop_requested_at is not null, stop_requested_by"
                            " from ticketiq.runs where run_id = %s", (run_id,)
                            ).fetchone() == (True, "ops")
    unknown = "/console/runs/00000000-0000-0000-0000-000000000000/stop"
    assert (await http.post(unknown, headers=ORIGIN)).status_code == 404


async def test_inspector_calls_and_fenced_calls_are_in_the_audit_the_console_shows(
        console: dict[str, Any]) -> None:
    """A run's page shows every audit row of the run; the overview's recent audit keeps
    the inspector's calls and the calls a vendor fenced among the events it lists."""
    http, run_id = console["http"], console["running"]
    db = await TicketIQ.connect(console["url"])
    try:
        await db.audit.audit_inspector_call("dana", run_id, "tickets.get", "0" * 64,
                                      "tiq1-adhoc-console", "made")
        await db.audit_once(run_id, 1, "agent.run.call_fenced", "1:call_fenced1",
                            {"step": 1, "call_id": "call_fenced1", "tool": "jira.comment"})
    finally:
        await db.close()
    await sign_in(http, console["admin"])
    page = (await http.get(f"/console/runs/{run_id}")).text
    overview = (await http.get("/console/")).text
    for text in (page, overview):
        assert "inspector.call" in text and "tiq1-adhoc-console" in text
        assert "agent.run.call_fenced" in text and "call_fenced1" in text


async def test_a_revoked_key_is_out_at_once(console: dict[str, Any]) -> None:
    http = console["http"]
    await sign_in(http, console["admin"])
    assert (await http.get("/console/")).status_code == 200
    key_id = console["admin"].split("_")[1]
    with psycopg.connect(console["url"], autocommit=True) as conn:
        conn.execute("select ticketiq.revoke_api_key(%s)", (key_id,))
    gone = await http.get("/console/")
    assert (gone.status_code, gone.headers["location"]) == (303, "/console/login")


async def test_under_a_prefix_and_behind_a_proxy_the_console_keeps_to_its_mount(
        console: dict[str, Any], db_url: str) -> None:
    from fastapi import FastAPI

    db = await TicketIQ.connect(db_url)
    outer = FastAPI()
    outer.mount("/ticketiq", create_app(db))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=outer),
                                     base_url="http://backend:8080") as http:
            got = await http.get("/ticketiq/console/")
            assert got.headers["location"] == "/ticketiq/console/login"
            # The browser's origin is the proxy's; the proxy names it in X-Forwarded-Host.
            signed = await http.post("/ticketiq/console/login",
                                     content=f"token={console['admin']}", headers={
                                         "Origin": "https://ops.example",
                                         "X-Forwarded-Host": "ops.example",
                                         "X-Forwarded-Proto": "https"})
            assert signed.headers["location"] == "/ticketiq/console/"
            assert "Path=/ticketiq/console" in signed.headers["set-cookie"]
            assert "Secure" in signed.headers["set-cookie"]
            http.cookies.set(COOKIE, console["admin"], path="/ticketiq/console")
            page = await http.get("/ticketiq/console/")
            assert f'href="/ticketiq/console/runs/{console["run_id"]}"' in page.text
            assert f'action="/ticketiq/console/approvals/{console["approval_id"]}"' in page.text
    finally:
        await db.close()


# -- in a real browser, across a SIGKILL ----------------------------------------------


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = {name: shutil.which(name) for name in ("chromium", "chromedriver")}
    assert all(found.values()), f"make deps installs Debian's chromium: {found}"
    options = webdriver.ChromeOptions()
    options.binary_location = str(found["chromium"])
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(found["chromedriver"])), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Example]:
    """The example's ticket service (with its own record of every request)."""
    world = Example("", tmp_path)
    try:
        world.start_service()
        yield world
    finally:
        world.close()


def shows(browser: Any, text: str, timeout: float = 15.0) -> None:
    """Wait until the page the browser shows (after a click's navigation) holds ``text``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, timeout).until(
        expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "body"), text))


def left_page(browser: Any, element: Any, timeout: float = 15.0) -> None:
    """Wait until ``element`` of the page before a click's navigation is gone.  Chromium
    may say so as "Node with given id does not belong to the document" rather than as a
    stale element, which ``staleness_of`` does not take for gone."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def gone(_: Any) -> bool:
        try:
            element.is_enabled()
        except WebDriverException:
            return True
        return False

    WebDriverWait(browser, timeout).until(gone)


def waiting(db: str) -> list[dict[str, Any]]:
    """The runs with an approval waiting (as the console lists them)."""
    with psycopg.connect(db) as conn:
        rows = conn.execute("select distinct run_id from ticketiq.approvals_waiting").fetchall()
    return [{"run_id": run_id} for (run_id,) in rows]


@pytest.mark.slow
def test_a_person_approves_in_the_browser_after_the_holding_worker_was_killed(
        pg_server_url: str, browser: Any, service: Example, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    keys = new_seal_key()
    with fresh_database(pg_server_url) as db:
        client = make_api_key(db, "triage-client")
        admin = make_api_key(db, "dana", scopes=["admin"])

        def worker(name: str) -> WorkerProcess:
            return WorkerProcess("app:app", db, seal_keys=keys, name=name, app_dir=EXAMPLE,
                                 http=True, log_dir=tmp_path,
                                 env={"TRIAGE_SERVICE_URL": service.service_url,
                                      "TRIAGE_THINK_SECONDS": "0.1"})

        httpx.post(f"{service.service_url}/tickets", json={
            "id": "S-1", "title": "Phishing mail",
            "body": "A mail pretending to be us asks for passwords."}).raise_for_status()
        with worker("first") as first:
            httpx.post(f"{first.url}/ticket-events", json={
                "event_id": "created:S-1", "ticket_id": "S-1", "type": "ticket.created"},
                headers={"Authorization": f"Bearer {client}"}).raise_for_status()
            # A ticket event's run may not suspend: it waits for the decision on its lease.
            (run,) = wait_for("the comment held for approval", lambda: waiting(db), 30)
            assert first.kill() < 0  # SIGKILL, while it waited

        with worker("second") as second:
            browser.get(f"{second.url}/console/")
            assert browser.current_url.endswith("/console/login")
            browser.find_element(By.NAME, "token").send_keys(admin)
            browser.find_element(By.TAG_NAME, "button").click()
            shows(browser, "Signed in as dana")
            assert str(run["run_id"]) in browser.page_source
            browser.find_element(By.XPATH, "//button[@value='approve']").click()
            shows(browser, "Approvals waiting (0)")

            ended = wait_for("the run to end on the second worker",
                             lambda: runs(db, statuses=["completed", "failed"]), 30)
            assert [(r["run_id"], r["status"], r["loss_count"]) for r in ended] == [
                (run["run_id"], "completed", 1)]
            assert [r["actor"] for r in crash_resumes(db)] == ["second"]
            browser.refresh()
            shows(browser, "Runs ended lately")
            browser.find_element(By.LINK_TEXT, str(run["run_id"])).click()
            shows(browser, f"Run {run['run_id']}")
            page = browser.find_element(By.TAG_NAME, "body").text
            assert "completed" in page and "approved" in page

        landed = [r for r in comment_requests(service.requests(), "S-1")
                  if r["effect"] == "created"]
        assert len(landed) == 1


@pytest.mark.slow
def test_an_admin_calls_a_tool_from_a_runs_page_in_the_browser(
        pg_server_url: str, browser: Any, service: Example, tmp_path: Path) -> None:
    """The inspector on a run's page: two calls, two keys, both audited as the person;
    the gates refuse a comment on a frozen ticket (nothing sent).  The screenshot goes to
    ``$TICKETIQ_SCREENSHOT_DIR`` when set (docs/img/console-inspector.png is one)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    comment = {"ticket_id": "T-1", "team": "support", "text": "Checked by hand: P3."}
    for ticket, title in (("T-1", "Export fails"), ("F-1", "Legal hold")):
        httpx.post(f"{service.service_url}/tickets", json={
            "id": ticket, "title": title, "body": "An error."}).raise_for_status()
    with fresh_database(pg_server_url) as db:
        client = make_api_key(db, "triage-client")
        admin = make_api_key(db, "dana", scopes=["admin"])
        with WorkerProcess("app:app", db, seal_keys=new_seal_key(), app_dir=EXAMPLE,
                           http=True, log_dir=tmp_path,
                           env={"TRIAGE_SERVICE_URL": service.service_url,
                                "TRIAGE_THINK_SECONDS": "0.1",
                                "TRIAGE_FROZEN_TICKETS": "F-1"}) as worker:
            httpx.post(f"{worker.url}/ticket-events", json={
                "event_id": "created:T-1", "ticket_id": "T-1", "type": "ticket.created"},
                headers={"Authorization": f"Bearer {client}"}).raise_for_status()
            (run,) = wait_for("the run to end", lambda: runs(db, statuses=["completed"]), 30)
            with psycopg.connect(db) as conn:
                checkpoints = conn.execute("select count(*) from ticketiq.checkpoints "
                                           "where run_id = %s", (run["run_id"],)).fetchone()
            browser.set_window_size(1100, 1400)
            browser.get(f"{worker.url}/console/login")
            browser.find_element(By.NAME, "token").send_keys(admin)
            browser.find_element(By.TAG_NAME, "button").click()
            shows(browser, "Signed in as dana")
            browser.get(f"{worker.url}/console/runs/{run['run_id']}")

            def call(arguments: dict[str, Any]) -> str:
                Select(browser.find_element(By.ID, "inspector-tool")).select_by_value(
                    "tickets.comment")
                box = browser.find_element(By.ID, "inspector-arguments")
                box.clear()
                box.send_keys(json.dumps(arguments))
                before = browser.find_element(By.TAG_NAME, "body")
                browser.find_element(By.ID, "inspector-call").click()
                # The page before the click says "The run" too: wait for it to go first.
                left_page(browser, before)
                shows(browser, "The run")
                return str(browser.find_element(By.TAG_NAME, "body").text)

            keys = []
            for _ in range(2):
                page = call(comment)
                assert "made" in page
                keys.append(browser.find_element(By.CSS_SELECTOR, "#inspector-result .key").text)
            assert keys[0] != keys[1] and all(k.startswith("tiq1-adhoc-") for k in keys)
            if os.environ.get("TICKETIQ_SCREENSHOT_DIR"):
                browser.save_screenshot(str(Path(os.environ["TICKETIQ_SCREENSHOT_DIR"])
                                            / "console-inspector.png"))
            page = call({**comment, "ticket_id": "F-1"})
            assert "refused by the gates: ticket F-1 is frozen" in page
            assert browser.find_elements(By.ID, "inspector-result") == []

        landed = [(r["idempotency_key"], r["effect"])
                  for r in comment_requests(service.requests(), "T-1")]
        assert landed[1:] == [(keys[0], "created"), (keys[1], "created")]  # after the run's
        assert comment_requests(service.requests(), "F-1") == []
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "select actor, run_id, detail->>'key', detail->>'outcome' from ticketiq.audit "
                "where event = 'inspector.call' order by audit_id").fetchall()
            assert conn.execute("select count(*) from ticketiq.checkpoints where run_id = %s",
                                (run["run_id"],)).fetchone() == checkpoints
        assert [(a, r, k, o) for a, r, k, o in rows][:2] == [
            ("dana", run["run_id"], keys[0], "made"), ("dana", run["run_id"], keys[1], "made")]
        assert [(a, o) for a, _, _, o in rows[2:]] == [("dana", "refused")]


async def test_the_limits_page_is_an_admins_and_shows_each_vendors_figures(
        console: dict[str, Any]) -> None:
    http = console["http"]
    got = await http.get("/console/limits")
    assert (got.status_code, got.headers["location"]) == (303, "/console/login")
    http.cookies.set(COOKIE, console["user"], path="/console")
    assert (await http.get("/console/limits")).status_code == 403
    with psycopg.connect(console["url"], autocommit=True) as conn:
        conn.execute("select ticketiq.set_vendor_limit('jira', 2, 1, null)")
        conn.execute("select ticketiq.accept_entry('run', 'e-1', '{}'::jsonb, "
                     "'<b>owner</b>', 'ra', 'run', false, true, 5)")
    await sign_in(http, console["admin"])
    page = await http.get("/console/limits")
    assert page.status_code == 200 and "jira" in page.text
    # what the database holds is text, never markup
    assert "&lt;b&gt;owner&lt;/b&gt;" in page.text and "<b>owner</b>" not in page.text


def cells(browser: Any, index: int) -> list[dict[str, str]]:
    """The rows of the page's ``index``-th table, each by its column's heading."""
    from selenium.webdriver.common.by import By

    table = browser.find_elements(By.TAG_NAME, "table")[index]
    rows = table.find_elements(By.TAG_NAME, "tr")
    heads = [th.text for th in rows[0].find_elements(By.TAG_NAME, "th")]
    return [dict(zip(heads, [td.text for td in row.find_elements(By.TAG_NAME, "td")],
                     strict=True)) for row in rows[1:]]


@pytest.mark.slow
def test_an_admin_sees_vendor_limits_and_runs_waiting_in_the_browser(
        pg_server_url: str, browser: Any, service: Example, tmp_path: Path) -> None:
    """The Limits page of a worker of the triage example (its ticket service limited at
    40 a second): the vendor's tokens taken, waits, 429s met (slowed) and runs suspended
    for a token, then the runs waiting to start by priority and owner, as the database
    has them.  The screenshot goes to ``$TICKETIQ_SCREENSHOT_DIR`` when set."""
    from selenium.webdriver.common.by import By

    with fresh_database(pg_server_url) as db:
        admin = make_api_key(db, "dana", scopes=["admin"])
        # entries wait to start: the worker claims none younger than 10 minutes
        with WorkerProcess("app:app", db, seal_keys=new_seal_key(), app_dir=EXAMPLE,
                           http=True, log_dir=tmp_path,
                           env={"TRIAGE_SERVICE_URL": service.service_url,
                                "TICKETIQ_ENTRY_CLAIM_DELAY": "600"}) as worker:
            with psycopg.connect(db, autocommit=True) as conn:
                run_id = conn.execute(
                    "select run_id from ticketiq.start_run('elsewhere', 'ops', 'ra', 'web', "
                    "'ep', true, 3600, '{}', null, null, '{}')").fetchone()[0]
                # a token taken, a 429 met (every process waits 600 s), a run suspended
                conn.execute("select ticketiq.take_vendor_token('tickets', %s, 1, 'c1')",
                             (run_id,))
                conn.execute("select ticketiq.slow_vendor('tickets', null, 600)")
                conn.execute("select ticketiq.take_vendor_token('tickets', %s, 1, 'c2')",
                             (run_id,))
                conn.execute("select ticketiq.suspend_for_vendor('tickets', %s, 1, 'c2')",
                             (run_id,))
                for sender, owner, priority in (("a-1", "bulk", 0), ("a-2", "bulk", 0),
                                                ("v-1", "vip", 10)):
                    conn.execute("select ticketiq.accept_entry('run', %s, '{}'::jsonb, %s, "
                                 "'ra', 'run', false, true, %s)", (sender, owner, priority))
            browser.set_window_size(1400, 900)
            browser.get(f"{worker.url}/console/login")
            browser.find_element(By.NAME, "token").send_keys(admin)
            browser.find_element(By.TAG_NAME, "button").click()
            shows(browser, "Signed in as dana")
            browser.find_element(By.LINK_TEXT, "limits").click()
            shows(browser, "Runs waiting to start")
            (tickets,) = cells(browser, 0)
            assert {k: tickets[k] for k in ("vendor", "rate", "burst", "concurrency",
                                            "set_by", "taken", "waited", "slowed",
                                            "suspended", "waiting")} == {
                "vendor": "tickets", "rate": "40.0", "burst": "20", "concurrency": "16",
                "set_by": "app", "taken": "1", "waited": "1", "slowed": "1",
                "suspended": "1", "waiting": "1"}
            assert tickets["slowed_until"]
            assert [(r["priority"], r["owner"], r["runs"]) for r in cells(browser, 1)] == [
                ("10", "vip", "1"), ("0", "bulk", "2")]
            if os.environ.get("TICKETIQ_SCREENSHOT_DIR"):
                browser.save_screenshot(str(Path(os.environ["TICKETIQ_SCREENSHOT_DIR"])
                                            / "console-limits.png"))
