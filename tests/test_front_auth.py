"""The front's callers are verified: API keys, JWTs, signed webhooks, Bot Framework tokens.

Every refusal (401, 403, 409, 413, 422) is checked from the database: nothing written
(invariant I15).  The Bot Framework's keys are served by a local OpenID metadata
document and JWKS of the test's own.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from helpers import fingerprint_sync

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.front.signing import sign_webhook

SECRET = "s" * 32
JWT_SECRET = "j" * 32
APP_ID = "bot-app-id"
TENANT = "tenant-1"
SERVICE_URL = "https://smba.trafficmanager.net/emea/"
TEAMS = {"type": "message", "id": "act-1", "conversation": {"id": "conv-1"},
         "from": {"id": "user-1"}, "text": "hello", "channelId": "msteams",
         "serviceUrl": SERVICE_URL, "channelData": {"tenant": {"id": TENANT}}}


class JWKS:
    """A local OpenID metadata document and its JWKS (the Bot Framework's, for tests)."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        public.update(kid="k1", use="sig", alg="RS256")
        jwks = json.dumps({"keys": [public]}).encode()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                body = jwks if self.path == "/jwks" else json.dumps(
                    {"issuer": "https://api.botframework.com",
                     "jwks_uri": f"{outer.base}/jwks"}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, key: Any = None, **claims: Any) -> str:
        body = {"iss": "https://api.botframework.com", "aud": APP_ID,
                "exp": int(time.time()) + 300, "sub": "botframework",
                "serviceurl": SERVICE_URL, **claims}
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture(scope="module")
def jwks() -> JWKS:
    served = JWKS()
    yield served
    served.server.shutdown()


@pytest.fixture
async def front(db_url: str, jwks: JWKS) -> AsyncIterator[dict[str, Any]]:
    db = await TicketIQ.connect(db_url)
    user, _ = await create_api_key(db, "alice", run_as=["agent:triage"])
    other, _ = await create_api_key(db, "bob")
    admin, _ = await create_api_key(db, "ops", scopes=["admin"])
    settings = FrontSettings(
        max_body=4096, webhook_secrets={"github": SECRET}, jwt_secret=JWT_SECRET,
        jwt_issuer="https://idp.example", jwt_audience="ticketiq",
        jwt_jwks_url=f"{jwks.base}/jwks",
        teams_openid_url=f"{jwks.base}/openid", teams_app_id=APP_ID, teams_tenant_id=TENANT,
        docs=True)
    app = create_app(db, settings=settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
        yield {"http": http, "db": db, "user": user, "other": other, "admin": admin}
    await app.state.waiter.stop()
    await db.close()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def snapshot(db_url: str) -> dict[str, tuple[int, str]]:
    with psycopg.connect(db_url) as conn:
        return fingerprint_sync(conn)


def a_jwt(**claims: Any) -> str:
    body = {"iss": "https://idp.example", "aud": "ticketiq", "sub": "carol",
            "exp": int(time.time()) + 300, **claims}
    return jwt.encode(body, JWT_SECRET, algorithm="HS256")


async def test_no_route_but_healthz_answers_without_a_credential(front: dict, db_url: str
                                                                 ) -> None:
    http: httpx.AsyncClient = front["http"]
    paths = await http.get("/openapi.json", headers=bearer(front["user"]))
    # /openapi.json itself is FastAPI's description, not a route of the API.
    routes = [(method, path) for path, item in paths.json()["paths"].items()
              for method in item]
    assert len(routes) >= 12
    before = snapshot(db_url)
    for method, path in routes:
        url = path.format(source="github", run_id=uuid.uuid4(), event_id="e-1", name="ack")
        for headers in ({}, bearer("tiq_0123456789abcdef_forged"), bearer("not-a-key"),
                        bearer(a_jwt(aud="someone-else"))):
            for body in (b"{}", b"\x80{"):  # a body FastAPI cannot parse is still 401
                response = await http.request(method, url, content=body, headers={
                    **headers, "content-type": "application/json"})
                if path == "/healthz":
                    assert response.status_code == 200
                else:
                    assert response.status_code == 401, (method, path, headers, response.text)
    assert snapshot(db_url) == before


async def test_a_revoked_key_is_refused(front: dict, db_url: str) -> None:
    db: TicketIQ = front["db"]
    key, row = await create_api_key(db, "dave")
    event = {"event_id": "e-9", "ticket_id": "T-1", "type": "created"}
    ok = await front["http"].post("/ticket-events", json=event, headers=bearer(key))
    assert ok.status_code == 202
    assert await db.keys.revoke_api_key(row.key_id) is True
    before = snapshot(db_url)
    refused = await front["http"].post("/ticket-events", json={**event, "event_id": "e-10"},
                                       headers=bearer(key))
    assert refused.status_code == 401
    assert snapshot(db_url) == before


async def test_the_owner_is_the_identity_never_a_header_or_the_body(front: dict,
                                                                   db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {"messageId": "m-1", "parts": [{"kind": "text", "text": "x"}]},
                       "metadata": {}}}
    got = await http.post("/a2a", json=send,
                          headers={**bearer(front["user"]), "x-ticketiq-user": "root"})
    assert got.status_code == 200
    started = await http.post("/runs", json={"input": {"owner": "root"}},
                              headers={**bearer(front["user"]), "Idempotency-Key": "k-own",
                                       "x-ticketiq-user": "root"})
    assert started.status_code == 202
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("select kind, owner, run_as from ticketiq.entries order by 1"
                            ).fetchall()
    assert rows == [("a2a", "alice", "alice"), ("run", "alice", "alice")]
    # Run-as only as the identity may: alice may act as agent:triage, not as root.
    before = snapshot(db_url)
    for run_as in ("root", "bob"):
        refused = await http.post("/runs", json={}, headers={
            **bearer(front["user"]), "Idempotency-Key": f"k-{run_as}", "X-Run-As": run_as})
        assert refused.status_code == 403
    refused = await http.post("/playground/runs", headers=bearer(front["user"]),
                              json={"run_key": "p-1", "user": "root", "input": {}})
    assert refused.status_code == 403
    assert snapshot(db_url) == before
    allowed = await http.post("/runs", json={}, headers={
        **bearer(front["user"]), "Idempotency-Key": "k-as", "X-Run-As": "agent:triage"})
    assert allowed.status_code == 202


async def test_a_caller_sees_and_stops_only_its_runs(front: dict, db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    started = await http.post("/runs", json={"input": {"n": 1}},
                              headers={**bearer(front["user"]), "Idempotency-Key": "k-1"})
    run_id = started.json()["run_id"]
    before = snapshot(db_url)
    for method, path in (("GET", f"/runs/{run_id}"), ("POST", f"/runs/{run_id}/stop")):
        response = await http.request(method, path, headers=bearer(front["other"]))
        assert response.status_code == 403, (path, response.text)
    # Keys are each owner's own: bob has no run of k-1 (tests/test_front_owners.py).
    assert (await http.get("/runs?key=k-1", headers=bearer(front["other"]))).status_code == 404
    assert snapshot(db_url) == before
    mine = await http.get(f"/runs/{run_id}", headers=bearer(front["user"]))
    assert (mine.json()["owner"], mine.json()["status"]) == ("alice", "pending")
    seen = await http.get(f"/runs/{run_id}", headers=bearer(front["admin"]))
    assert seen.status_code == 200


async def test_a_jwt_proves_its_subject(front: dict, db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    event = {"event_id": "e-1", "ticket_id": "T-1", "type": "created"}
    before = snapshot(db_url)
    for token in (a_jwt(exp=int(time.time()) - 10), a_jwt(iss="https://evil.example"),
                  a_jwt(aud="other"), jwt.encode({"sub": "carol"}, JWT_SECRET),
                  jwt.encode({"iss": "https://idp.example", "aud": "ticketiq", "sub": "c",
                              "exp": int(time.time()) + 60}, "x" * 32, algorithm="HS256")):
        assert (await http.post("/ticket-events", json=event, headers=bearer(token))
                ).status_code == 401
    assert snapshot(db_url) == before
    ok = await http.post("/ticket-events", json=event, headers=bearer(a_jwt()))
    assert ok.status_code == 202 and ok.json()["run_id"]
    found = await http.get("/ticket-events/e-1", headers=bearer(a_jwt()))
    assert found.json()["run_id"] == ok.json()["run_id"]
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select owner from ticketiq.entries").fetchall() == [("carol",)]


async def test_a_jwt_signed_by_a_key_of_the_jwks_url(front: dict, jwks: JWKS,
                                                     db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    event = {"event_id": "e-2", "ticket_id": "T-2", "type": "created"}
    claims = {"iss": "https://idp.example", "aud": "ticketiq", "sub": "erin"}
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    before = snapshot(db_url)
    refused = await http.post("/ticket-events", json=event,
                              headers=bearer(jwks.token(key=stranger, **claims)))
    assert refused.status_code == 401
    assert snapshot(db_url) == before
    ok = await http.post("/ticket-events", json=event, headers=bearer(jwks.token(**claims)))
    assert ok.status_code == 202, ok.text
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select owner from ticketiq.entries").fetchall() == [("erin",)]


def signed(body: bytes, delivery: str, *, secret: str = SECRET, at: float | None = None
           ) -> dict[str, str]:
    stamp = str(int(time.time() if at is None else at))
    return {"X-Delivery-Id": delivery, "X-Signature-Timestamp": stamp,
            "X-Signature": "sha256=" + sign_webhook(secret, stamp, delivery, body),
            "content-type": "application/json"}


async def test_a_forged_or_replayed_webhook_signature_is_refused(front: dict,
                                                                 db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    body = b'{"action": "opened"}'
    before = snapshot(db_url)
    forged = [
        signed(body, "d-1", secret="f" * 32),  # another secret
        {**signed(body, "d-1"), "X-Delivery-Id": "d-2"},  # the signature of another delivery
        signed(body, "d-1", at=time.time() - 3600),  # outside the replay window
        {k: v for k, v in signed(body, "d-1").items() if k != "X-Signature"},
    ]
    for headers in forged:
        response = await http.post("/webhooks/github", content=body, headers=headers)
        assert response.status_code == 401, response.text
    tampered = await http.post("/webhooks/github", content=b'{"action": "closed"}',
                               headers=signed(body, "d-1"))
    assert tampered.status_code == 401
    # An API key is no way past a signed source.
    assert (await http.post("/webhooks/github", content=body, headers={
        **bearer(front["admin"]), "X-Delivery-Id": "d-1"})).status_code == 401
    assert snapshot(db_url) == before
    headers = signed(body, "d-1")
    assert (await http.post("/webhooks/github", content=body, headers=headers)
            ).status_code == 202
    after_first = snapshot(db_url)
    replay = await http.post("/webhooks/github", content=body, headers=headers)
    assert replay.status_code == 409
    assert snapshot(db_url) == after_first


async def test_a_teams_activity_needs_a_bot_framework_token(front: dict, jwks: JWKS,
                                                            db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    before = snapshot(db_url)
    for token in (jwks.token(key=stranger), jwks.token(aud="another-bot"),
                  jwks.token(iss="https://evil.example"),
                  jwks.token(exp=int(time.time()) - 10), front["admin"]):
        response = await http.post("/teams/messages", json=TEAMS, headers=bearer(token))
        assert response.status_code == 401, response.text
    assert snapshot(db_url) == before
    ok = await http.post("/teams/messages", json=TEAMS, headers=bearer(jwks.token()))
    assert ok.status_code == 200
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select kind, owner, run_as from ticketiq.entries").fetchall() == [
            ("teams", "botframework", "user-1")]


async def test_an_oversized_body_is_413_before_it_is_read(front: dict, db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    before = snapshot(db_url)
    big = {"input": {"text": "x" * 5000}}
    declared = await http.post("/runs", json=big, headers={**bearer(front["user"]),
                                                          "Idempotency-Key": "big"})
    assert declared.status_code == 413

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"input": {"text": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}}'

    streamed = await http.post("/runs", content=chunks(), headers={
        **bearer(front["user"]), "Idempotency-Key": "big2", "content-type": "application/json"})
    assert streamed.status_code == 413
    assert snapshot(db_url) == before


async def test_a_malformed_body_is_422_naming_the_field(front: dict, db_url: str) -> None:
    http: httpx.AsyncClient = front["http"]
    before = snapshot(db_url)
    response = await http.post("/runs", json={"input": "text"},
                               headers={**bearer(front["user"]), "Idempotency-Key": "k"})
    assert response.status_code == 422
    assert ["body", "input"] == response.json()["detail"][0]["loc"]
    missing = await http.post("/runs", json={}, headers=bearer(front["user"]))
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"] == ["header", "idempotency-key"]
    assert snapshot(db_url) == before
