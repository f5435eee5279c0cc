"""Owners kept apart, every bad input a 4xx, refusals visible to an operator (issue 33).

Each test is one finding of an attacker's pass over the front: JSON PostgreSQL refuses,
sender ids shared across owners, another owner's run named in an error, Bot Framework
tokens of any channel, non-finite webhook timestamps, the schema pages open, refusals
leaving no trace, API keys without a last use and long polls without a limit.  Every
refusal is checked from the database: nothing written (invariant I15).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import psycopg
import pytest
from test_front_auth import (
    APP_ID,
    JWKS,
    SECRET,
    SERVICE_URL,
    TEAMS,
    TENANT,
    bearer,
    snapshot,
)

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front import refusals
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.front.signing import sign_webhook

#: JSON Python's json module takes and PostgreSQL refuses, as a client sends it.
REFUSED = ["NaN", "Infinity", "-Infinity", "1e999", '"a\\u0000b"', '"\\ud800"',
           '"x\\udfff"', '{"\\u0000": 1}']


def front_settings(bot: JWKS, **overrides: Any) -> FrontSettings:
    return FrontSettings(**{
        "webhook_secrets": {"github": SECRET}, "teams_openid_url": f"{bot.base}/openid",
        "teams_app_id": APP_ID, "teams_tenant_id": TENANT, "max_waits": 1, **overrides})


@pytest.fixture(scope="module")
def bot() -> Iterator[JWKS]:
    """The Bot Framework's OpenID metadata and keys, served locally."""
    served = JWKS()
    yield served
    served.server.shutdown()


@pytest.fixture
async def front(db_url: str, bot: JWKS) -> AsyncIterator[SimpleNamespace]:
    db = await TicketIQ.connect(db_url)
    alice, _ = await create_api_key(db, "alice")
    bob, _ = await create_api_key(db, "bob")
    admin, _ = await create_api_key(db, "ops", scopes=["admin"])
    app = create_app(db, settings=front_settings(bot))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://app") as http:
        yield SimpleNamespace(http=http, db=db, app=app, alice=alice, bob=bob, admin=admin)
    await app.state.waiter.stop()
    await db.close()


def entry_posts(key: str, sender: str, value: str = '"v"', who: str = "alice"
                ) -> list[tuple[str, dict, str]]:
    """(path, headers, raw JSON body) of every route that writes an entry, keyed by
    ``sender``, as ``who`` (the key's identity), with ``value`` (raw JSON text) in a
    free-form field."""
    auth = bearer(key)
    return [
        ("/runs", {**auth, "Idempotency-Key": sender}, f'{{"input": {{"v": {value}}}}}'),
        ("/ticket-events", auth,
         f'{{"event_id": "{sender}", "ticket_id": "T", "type": "created", "v": {value}}}'),
        ("/copilot/turns", auth, f'{{"turn_id": "{sender}", "conversation_id": "c", '
                                 f'"user": "{who}", "text": {value}}}'),
        ("/playground/runs", auth,
         f'{{"run_key": "{sender}", "user": "{who}", "input": {{"v": {value}}}}}'),
        ("/webhooks/open", {**auth, "X-Delivery-Id": sender}, f'{{"v": {value}}}'),
        ("/a2a", auth, f'{{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": '
                       f'{{"message": {{"messageId": "{sender}", "parts": '
                       f'[{{"kind": "text", "text": {value}}}]}}}}}}'),
    ]


async def test_json_postgresql_refuses_is_a_422_on_every_entry_route_and_writes_nothing(
        front: SimpleNamespace, bot: JWKS, db_url: str) -> None:
    before = snapshot(db_url)
    counted = refusals.refusal_counts().get("value_postgres_refuses", 0)
    teams = json.dumps(TEAMS)[:-1]
    for value in REFUSED:
        posts = [*entry_posts(front.alice, "s-1", value),
                 ("/teams/messages", bearer(bot.token()), f'{teams}, "v": {value}}}')]
        for path, headers, raw in posts:
            response = await front.http.post(path, content=raw.encode(), headers={
                **headers, "content-type": "application/json"})
            if path == "/a2a":  # JSON-RPC: its own error, not a 500
                assert response.status_code == 400, (value, response.text)
                assert response.json()["error"]["code"] == -32600, response.text
            else:
                assert response.status_code == 422, (path, value, response.text)
    for path in ("/runs?key=a%00b", "/runs?key=k&kind=run%00", "/ticket-events/a%00b"):
        response = await front.http.get(path, headers=bearer(front.alice))
        assert response.status_code == 422, (path, response.text)
        # The credential first: a caller without one learns nothing of what it sent.
        assert (await front.http.get(path)).status_code == 401, path
    assert snapshot(db_url) == before
    # Each refused before PostgreSQL saw it, counted under its reason (pydantic refuses
    # copilot's non-text text itself: invalid_request).
    assert refusals.refusal_counts()["value_postgres_refuses"] - counted >= 6 * len(REFUSED)


async def test_two_owners_same_sender_id_start_two_runs_and_each_retry_finds_its_own(
        front: SimpleNamespace, db_url: str) -> None:
    http: httpx.AsyncClient = front.http

    async def post(key: str) -> list[str]:
        ids = []
        who = "alice" if key == front.alice else "bob"
        for path, headers, raw in entry_posts(key, "1", who=who):
            response = await http.post(path, content=raw.encode(), headers={
                **headers, "content-type": "application/json"})
            assert response.status_code in (200, 202), (path, response.text)
            body = response.json()
            ids.append(body["result"]["contextId"] if path == "/a2a" else body["run_id"])
        return ids

    alices, bobs = await post(front.alice), await post(front.bob)
    assert all(a != b for a, b in zip(alices, bobs, strict=True)), "bob got alice's runs"
    assert await post(front.alice) == alices, "alice's retries find her own runs"
    assert await post(front.bob) == bobs
    await front.db.entries.claim_entries("p1", 30, limit=100)
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "select e.kind, e.owner, r.owner, r.run_id::text from ticketiq.entries as e"
            " join ticketiq.runs as r on r.run_id = e.run_id order by e.entry_id").fetchall()
    assert len(rows) == 12 and all(entry == run for _, entry, run, _ in rows), rows
    assert sorted(r[3] for r in rows) == sorted(alices + bobs)


async def test_no_error_names_another_owners_run(front: SimpleNamespace) -> None:
    http: httpx.AsyncClient = front.http
    run_id = (await http.post("/runs", json={"input": {}}, headers={
        **bearer(front.alice), "Idempotency-Key": "k-a"})).json()["run_id"]
    event = (await http.post("/ticket-events", headers=bearer(front.alice), json={
        "event_id": "e-a", "ticket_id": "T", "type": "created"})).json()["run_id"]
    await http.post("/a2a", headers=bearer(front.alice), json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {"messageId": "t-a", "parts": [{"kind": "text", "text": "x"}]}}})
    task = (await http.post("/a2a", headers=bearer(front.alice), json={
        "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "t-a"}}
    )).json()["result"]["contextId"]
    tries = [("GET", "/runs?key=k-a", None), ("GET", "/runs?key=e-a&kind=ticket_event", None),
             ("GET", "/runs?key=k-a&owner=alice", None), ("GET", "/ticket-events/e-a", None),
             ("POST", "/a2a", {"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                               "params": {"id": "t-a"}})]
    for method, path, body in tries:
        response = await http.request(method, path, json=body, headers=bearer(front.bob))
        assert response.status_code in (403, 404), (path, response.text)
        for theirs in (run_id, event, task):
            assert theirs not in response.text, (path, response.text)
    # An admin names the owner.
    found = await http.get("/runs?key=k-a&owner=alice", headers=bearer(front.admin))
    assert found.status_code == 200 and found.json()["run_id"] == run_id


async def test_a_bot_framework_token_runs_only_activities_of_the_configured_channel_service_url_and_tenant(  # noqa: E501
        front: SimpleNamespace, bot: JWKS, db_url: str) -> None:
    http: httpx.AsyncClient = front.http
    webchat = "https://webchat.botframework.com/"
    refused = [
        # Web Chat and Direct Line let the client write from.id.
        (bot.token(serviceurl=webchat), {**TEAMS, "channelId": "webchat",
                                          "serviceUrl": webchat}),
        (bot.token(), {**TEAMS, "channelId": "directline"}),
        (bot.token(), {k: v for k, v in TEAMS.items() if k != "channelId"}),
        # A token issued for another service than the activity claims.
        (bot.token(serviceurl="https://smba.trafficmanager.net/amer/"), TEAMS),
        # A service outside the configured one.
        (bot.token(serviceurl="https://smba.trafficmanager.net.evil.example/"),
         {**TEAMS, "serviceUrl": "https://smba.trafficmanager.net.evil.example/"}),
        # Another tenant, or none.
        (bot.token(), {**TEAMS, "channelData": {"tenant": {"id": "someone-else"}}}),
        (bot.token(), {k: v for k, v in TEAMS.items() if k != "channelData"}),
    ]
    before = snapshot(db_url)
    for token, activity in refused:
        response = await http.post("/teams/messages", json=activity, headers=bearer(token))
        assert response.status_code == 403, (activity, response.text)
    unbound = await http.post("/teams/messages", json=TEAMS,
                              headers=bearer(bot.token(serviceurl=None)))
    assert unbound.status_code == 401, unbound.text  # a token naming no service
    assert snapshot(db_url) == before
    ok = await http.post("/teams/messages", json=TEAMS, headers=bearer(bot.token()))
    assert ok.status_code == 200, ok.text
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select e.payload ->> 'serviceUrl' from ticketiq.entries as e"
                            ).fetchall() == [(SERVICE_URL,)]


async def test_a_webhook_timestamp_that_is_not_finite_is_refused(
        front: SimpleNamespace, db_url: str) -> None:
    body = b'{"action": "opened"}'
    before = snapshot(db_url)
    for stamp in ("nan", "NaN", "-nan", "inf", "-Infinity", "1e999"):
        headers = {"X-Delivery-Id": "d-1", "X-Signature-Timestamp": stamp,
                   "X-Signature": "sha256=" + sign_webhook(SECRET, stamp, "d-1", body),
                   "content-type": "application/json"}
        response = await front.http.post("/webhooks/github", content=body, headers=headers)
        assert response.status_code == 401, (stamp, response.text)
    assert snapshot(db_url) == before


async def test_the_schema_and_docs_pages_are_off_by_default_and_need_a_credential_when_on(
        front: SimpleNamespace, bot: JWKS) -> None:
    pages = ("/openapi.json", "/docs", "/redoc")
    for path in pages:
        for headers in ({}, bearer(front.alice)):
            response = await front.http.get(path, headers=headers)
            assert response.status_code == 404, (path, response.text)
            assert "openapi" not in response.text.lower()
    app = create_app(front.db, settings=front_settings(bot, docs=True))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://app") as http:
        for path in pages:
            assert (await http.get(path)).status_code == 401, path
            assert (await http.get(path, headers=bearer("tiq_0123456789abcdef_forged"))
                    ).status_code == 401, path
            shown = await http.get(path, headers=bearer(front.alice))
            assert shown.status_code == 200, path
        spec = (await http.get("/openapi.json", headers=bearer(front.alice))).json()
        assert "/runs" in spec["paths"] and "/openapi.json" not in spec["paths"]


async def test_refusals_are_counted_by_reason_and_logged_once_per_reason_a_while(
        front: SimpleNamespace, db_url: str, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # One line per reason per hour here: the count of lines does not hang on the clock.
    monkeypatch.setattr(refusals, "LOG_EVERY", 3600.0)
    monkeypatch.setattr(refusals, "_last_logged", {})
    monkeypatch.setattr(refusals, "_unlogged", {})
    http: httpx.AsyncClient = front.http
    before, counts = snapshot(db_url), refusals.refusal_counts()
    caplog.set_level(logging.WARNING, logger="ticketiq_pg.front.refusals")
    key_id = front.alice.split("_")[1]
    for n in range(40):  # a brute force on alice's key id
        await http.get("/runs?key=k", headers=bearer(f"tiq_{key_id}_guess{n}"))
    for _ in range(5):
        await http.post("/webhooks/github", content=b"{}", headers={
            "X-Delivery-Id": "d", "X-Signature-Timestamp": str(int(time.time())),
            "X-Signature": "sha256=" + "0" * 64})
    await http.get("/runs?key=k")
    await http.post("/runs", json={}, headers={**bearer(front.alice), "X-Run-As": "root",
                                               "Idempotency-Key": "k"})
    await http.post(f"/console/approvals/{uuid.uuid4()}", data={"decision": "approve"},
                    headers={"Origin": "https://evil.example"})
    after = refusals.refusal_counts()
    grown = {r: after[r] - counts.get(r, 0) for r in after if after[r] != counts.get(r, 0)}
    assert grown == {"bad_api_key": 40, "webhook_signature": 5, "no_credential": 1,
                     "run_as": 1, "console_forbidden": 1}, grown
    lines = [r.getMessage() for r in caplog.records if r.name == "ticketiq_pg.front.refusals"]
    assert len(lines) == 5, lines  # one per reason, not one per request
    assert any("bad_api_key" in line for line in lines), lines
    assert snapshot(db_url) == before


async def api_key_list(db_url: str, *args: str) -> str:
    """``ticketiq-pg api-key list`` as an operator runs it."""
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "ticketiq_pg.ops.cli", "api-key", "list",
                         "--database-url", db_url, *args],
        capture_output=True, text=True, timeout=60, check=True)
    return str(done.stdout)


async def last_uses(db_url: str) -> dict[str, Any]:
    return {k["identity"]: k["last_used_at"]
            for k in json.loads(await api_key_list(db_url, "--json"))}


async def test_an_api_keys_last_use_is_recorded_when_it_serves_a_request_and_listed(
        front: SimpleNamespace, db_url: str) -> None:
    http: httpx.AsyncClient = front.http
    assert set((await last_uses(db_url)).values()) == {None}
    assert (await http.post("/runs", json={}, headers={
        **bearer(front.alice), "Idempotency-Key": "k"})).status_code == 202
    # A refused request is no use of the key (and writes nothing): bob's stays unused.
    assert (await http.post("/runs", json={"input": 1}, headers={
        **bearer(front.bob), "Idempotency-Key": "k"})).status_code == 422
    bob_id = front.bob.split("_")[1]
    assert (await http.get("/runs?key=k", headers=bearer(f"tiq_{bob_id}_forged"))
            ).status_code == 401
    used = await last_uses(db_url)
    assert used["alice"] is not None and used["bob"] is None and used["ops"] is None, used
    text = await api_key_list(db_url)
    assert "last used never" in text and "last used 20" in text, text


async def test_a_caller_past_its_long_poll_limit_gets_429(front: SimpleNamespace,
                                                         db_url: str) -> None:
    http: httpx.AsyncClient = front.http
    mine = (await http.post("/runs", json={}, headers={
        **bearer(front.alice), "Idempotency-Key": "k-1"})).json()["run_id"]
    theirs = (await http.post("/runs", json={}, headers={
        **bearer(front.bob), "Idempotency-Key": "k-1"})).json()["run_id"]
    # No worker: the run stays pending, so the first poll holds until it is cancelled.
    holding = asyncio.create_task(http.get(f"/runs/{mine}?wait=60", headers=bearer(
        front.alice), timeout=90))
    waiting = front.app.state.waiter.waiting
    for _ in range(3000):
        if mine in waiting:
            break
        await asyncio.sleep(0.01)
    assert mine in waiting, "the first long poll never started waiting"
    before = snapshot(db_url)
    refused = await http.get(f"/runs/{mine}?wait=5", headers=bearer(front.alice))
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "1"
    assert snapshot(db_url) == before
    # Another caller has its own allowance; a read without wait is no long poll.
    other = await http.get(f"/runs/{theirs}?wait=0.1", headers=bearer(front.bob))
    assert other.status_code == 200, other.text
    assert (await http.get(f"/runs/{mine}", headers=bearer(front.alice))).status_code == 200
    holding.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await holding
    again = await http.get(f"/runs/{mine}?wait=0.1", headers=bearer(front.alice))
    assert again.status_code == 200, again.text


async def test_a_priority_above_0_is_an_admins_and_orders_the_inbox(front: SimpleNamespace,
                                                                     db_url: str) -> None:
    """``POST /runs`` with ``priority``: a caller may lower its own runs (below 0), only an
    admin raise them (above 0: 403 otherwise, nothing written); past -1000..1000, 422."""
    http: httpx.AsyncClient = front.http
    before = snapshot(db_url)
    raised = await http.post("/runs", json={"priority": 5}, headers={
        **bearer(front.alice), "Idempotency-Key": "p-1"})
    assert raised.status_code == 403, raised.text
    past = await http.post("/runs", json={"priority": -1001}, headers={
        **bearer(front.alice), "Idempotency-Key": "p-1"})
    assert past.status_code == 422, past.text
    assert snapshot(db_url) == before
    low = await http.post("/runs", json={"priority": -3}, headers={
        **bearer(front.alice), "Idempotency-Key": "p-2"})
    high = await http.post("/runs", json={"priority": 7}, headers={
        **bearer(front.admin), "Idempotency-Key": "p-3"})
    assert (low.status_code, high.status_code) == (202, 202), (low.text, high.text)
    rows = await front.db.entries.claim_entries("p1", 8, 10)
    assert [r.owner for r in rows] == ["ops", "alice"]
