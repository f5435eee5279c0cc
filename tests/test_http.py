"""The HTTP front: retried requests start one run, bad requests write nothing."""

from __future__ import annotations

import uuid

import httpx
import psycopg
import pytest

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings


@pytest.fixture
async def client(db_url: str):  # type: ignore[no-untyped-def]
    db = await TicketIQ.connect(db_url)
    key, _ = await create_api_key(db, "svc:test", run_as=["*"])
    transport = httpx.ASGITransport(app=create_app(db, settings=FrontSettings(docs=True)))
    async with httpx.AsyncClient(transport=transport, base_url="http://app",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        yield http
    await db.close()


def entries(db_url: str) -> list[tuple]:
    with psycopg.connect(db_url) as conn:
        return conn.execute(
            "select kind, sender_id, state from ticketiq.entries order by entry_id"
        ).fetchall()


TEAMS = {
    "type": "message",
    "id": "act-1",
    "conversation": {"id": "conv-1"},
    "from": {"id": "user-1"},
    "text": "is the EU region down?",
}


async def test_a_retried_webhook_starts_nothing_new(client: httpx.AsyncClient,
                                                    db_url: str) -> None:
    first = await client.post("/webhooks/pagerduty", json={"alert": 1},
                              headers={"X-Delivery-Id": "d-1"})
    again = await client.post("/webhooks/pagerduty", json={"alert": 1},
                              headers={"X-Delivery-Id": "d-1"})
    other = await client.post("/webhooks/pagerduty", json={"alert": 2},
                              headers={"X-Delivery-Id": "d-2"})
    assert (first.status_code, again.status_code, other.status_code) == (202, 200, 202)
    assert first.json()["entry_id"] == again.json()["entry_id"] != other.json()["entry_id"]
    assert again.json()["created"] is False
    assert entries(db_url) == [("webhook", "pagerduty:d-1", "pending"),
                               ("webhook", "pagerduty:d-2", "pending")]


async def test_a_teams_activity_is_durable_before_the_200(client: httpx.AsyncClient,
                                                          db_url: str) -> None:
    assert (await client.post("/teams/messages", json=TEAMS)).status_code == 200
    assert (await client.post("/teams/messages", json=TEAMS)).status_code == 200
    assert entries(db_url) == [("teams", "act-1", "pending")]


@pytest.mark.parametrize(
    ("path", "kwargs"),
    [
        ("/webhooks/pagerduty", {"json": {"a": 1}}),  # no delivery id
        ("/webhooks/pager duty", {"json": {"a": 1}, "headers": {"X-Delivery-Id": "x"}}),
        ("/webhooks/pagerduty", {"content": b"not json", "headers": {"X-Delivery-Id": "x"}}),
        ("/webhooks/pagerduty", {"json": [1, 2], "headers": {"X-Delivery-Id": "x"}}),
        ("/ticket-events", {"json": {"ticket_id": "T-1", "type": "created"}}),
        ("/ticket-events", {"json": {"event_id": "", "ticket_id": "T-1", "type": "x"}}),
        ("/teams/messages", {"json": {**TEAMS, "type": "typing"}}),
        ("/teams/messages", {"json": {k: v for k, v in TEAMS.items() if k != "id"}}),
        ("/teams/messages", {"json": {**TEAMS, "conversation": {}}}),
        ("/copilot/turns", {"json": {"turn_id": "t", "user": "u"}}),
        ("/playground/runs", {"json": {"run_key": "k", "user": "u", "input": "text"}}),
    ],
)
async def test_bad_requests_get_a_4xx_and_leave_no_row(client: httpx.AsyncClient, db_url: str,
                                                       path: str, kwargs: dict) -> None:
    response = await client.post(path, **kwargs)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["detail"]
    assert entries(db_url) == []


async def test_a2a_send_then_get(client: httpx.AsyncClient, db_url: str) -> None:
    send = {
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {"messageId": "m-1", "role": "user",
                               "parts": [{"kind": "text", "text": "hello"}]}},
    }
    first = (await client.post("/a2a", json=send)).json()
    again = (await client.post("/a2a", json=send)).json()
    assert first["result"]["id"] == again["result"]["id"] == "m-1"
    assert first["result"]["status"]["state"] == "submitted"
    got = await client.post("/a2a", json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                          "params": {"id": "m-1"}})
    assert got.json()["result"]["id"] == "m-1"
    assert entries(db_url) == [("a2a", "m-1", "pending")]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{", 400, -32700),
        (b'{"jsonrpc": "1.0", "method": "x"}', 400, -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": []}', 400, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}', 400, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": '
         b'{"message": {"messageId": "m", "parts": []}}}', 400, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {}}', 404, -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}}',
         404, -32001),
    ],
)
async def test_a2a_errors(client: httpx.AsyncClient, db_url: str, body: bytes, status: int,
                          code: int) -> None:
    response = await client.post("/a2a", content=body,
                                 headers={"content-type": "application/json"})
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert entries(db_url) == []


async def test_unknown_run_is_404(client: httpx.AsyncClient) -> None:
    assert (await client.get(f"/runs/{uuid.uuid4()}")).status_code == 404
    assert (await client.get("/runs/not-a-uuid")).status_code == 422


async def test_openapi_describes_every_entry_point(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    for path in ("/webhooks/{source}", "/ticket-events", "/teams/messages", "/copilot/turns",
                 "/playground/runs", "/a2a", "/runs/{run_id}", "/runs", "/runs/{run_id}/stop",
                 "/ticket-events/{event_id}"):
        assert path in paths
