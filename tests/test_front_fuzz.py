"""Malformed and unauthenticated requests to every route of the front's own OpenAPI
document (hypothesis): a rejected request changes no ticketiq table (invariant I15),
none gets a 5xx, and none without a valid credential gets anything but 401.  The JSON
generated holds what Python's json takes and PostgreSQL refuses (NaN, infinities, NUL,
lone surrogates): each is a 4xx, naming where it is, with nothing written.

The front is served by a real uvicorn server over its own event loop in a thread, so
the body limit and the header parsing are the deployment's own.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import jwt
import psycopg
import pytest
import uvicorn
from helpers import fingerprint_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key_sync
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings

SECRET = "w" * 32
ASCII = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
#: What a client can send as a header value (no leading or trailing space).
HEADER = ASCII.map(str.strip)
#: Text PostgreSQL refuses in text and jsonb: NUL and lone surrogates (json.dumps
#: sends them as \u0000 and \ud800 escapes, which Python's json reads back).
REFUSED_TEXT = st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfff", "\udc00y"])
REFUSED = st.sampled_from([float("nan"), float("inf"), float("-inf")]) | REFUSED_TEXT
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ASCII | REFUSED_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ASCII | REFUSED_TEXT, inner,
                                                                max_size=4),
    max_leaves=12,
)


class Served:
    def __init__(self, db_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.key = create_api_key_sync(db_url, "fuzzer", run_as=["agent:ok"])
        self.db = self.call(TicketIQ.connect(db_url))
        app = create_app(self.db, settings=FrontSettings(
            max_body=2048, webhook_secrets={"signed": SECRET}, jwt_secret="j" * 32,
            jwt_issuer="iss", jwt_audience="aud", docs=True))
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                    log_level="error", lifespan="off"))
        self.task = asyncio.run_coroutine_threadsafe(self.server.serve(), self.loop)
        while not self.server.started:
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
        self.spec = self.http.get("/openapi.json", headers=self.auth("good")).json()

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def auth(self, kind: str) -> dict[str, str]:
        token = {
            "good": self.key,
            "forged": self.key[:-4] + "AAAA",
            "unknown": "tiq_00000000deadbeef_" + "x" * 43,
            "jwt": jwt.encode({"sub": "x", "iss": "iss", "aud": "aud", "exp": 1}, "j" * 32),
            "garbage": "not a credential",
        }.get(kind)
        return {} if token is None else {"Authorization": f"Bearer {token}"}

    def close(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.task.result(10)
        self.call(self.db.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def served(db_url: str) -> Iterator[Served]:
    front = Served(db_url)
    yield front
    front.close()


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, op) for path, item in spec["paths"].items()
            for method, op in item.items()]


@st.composite
def requests(draw: st.DrawFn, ops: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    method, path, op = draw(st.sampled_from(ops))
    values = {"source": draw(st.sampled_from(["signed", "open", "bad source", "x" * 120])),
              "run_id": draw(st.sampled_from([str(uuid.uuid4()), "not-a-uuid", "1"])),
              "event_id": draw(st.sampled_from(["e-1", "x" * 300])),
              "name": draw(st.sampled_from(["ack", "x" * 300]))}
    headers: dict[str, str] = {}
    query: dict[str, str] = {}
    for param in op.get("parameters", []):
        if param["in"] in ("header", "query") and draw(st.booleans()):
            value = draw(st.one_of(HEADER, st.sampled_from(["k-1", "agent:ok", "-1", "3600"])))
            (headers if param["in"] == "header" else query)[param["name"]] = value
    credential = draw(st.sampled_from(["none", "garbage", "forged", "unknown", "jwt", "good"]))
    headers.update(draw(st.fixed_dictionaries({}, optional={
        "X-Signature": HEADER, "X-Signature-Timestamp": HEADER, "content-type": st.sampled_from(
            ["application/json", "text/plain", "application/x-www-form-urlencoded"])})))
    body = draw(st.one_of(
        JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=64),
        st.just(b'{"input": "' + b"x" * 3000 + b'"}'),
        st.just(b'{"event_id": "e", "ticket_id": "t"}'),
    ))
    return {"method": method, "path": path.format(**values), "route": path, "headers": headers,
            "params": query, "content": body, "credential": credential}


def snapshot(db_url: str) -> dict[str, tuple[int, str]]:
    with psycopg.connect(db_url) as conn:
        return fingerprint_sync(conn)


def test_a_rejected_request_changes_nothing(served: Served, db_url: str) -> None:
    ops = operations(served.spec)
    assert len(ops) >= 12
    seen: dict[int, int] = {}

    @settings(max_examples=250, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(requests(ops))
    def check(request: dict[str, Any]) -> None:
        before = snapshot(db_url)
        response = served.http.request(
            request["method"], request["path"], params=request["params"],
            content=request["content"],
            headers={**request["headers"], **served.auth(request["credential"])})
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        assert response.status_code < 500, (request, response.text)
        if request["route"] != "/healthz" and request["credential"] != "good":
            # 413 comes first: an oversized body is refused before anything reads it.
            assert response.status_code in (401, 404, 405, 413), (request, response.text)
        if response.status_code >= 400:
            assert snapshot(db_url) == before, (request, response.status_code, response.text)

    check()
    # The generator reached the refusals it is about.
    assert {401, 422}.issubset(seen), seen


def refused_anywhere(value: Any) -> bool:
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, str):
        return any(c == "\x00" or "\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(refused_anywhere(k) or refused_anywhere(v) for k, v in value.items())
    if isinstance(value, list):
        return any(map(refused_anywhere, value))
    return False


#: Every route that writes an entry, with a body around one free-form value.
ENTRY_BODIES = {
    "/runs": lambda v: {"input": {"v": v}},
    "/ticket-events": lambda v: {"event_id": "e-1", "ticket_id": "T", "type": "x", "v": v},
    "/playground/runs": lambda v: {"run_key": "p-1", "user": "agent:ok", "input": {"v": v}},
    "/webhooks/open": lambda v: {"v": v},
    "/a2a": lambda v: {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"messageId": "m-1", "parts": [{"kind": "text", "text": "x", "v": v}]}}},
}


def test_json_postgresql_refuses_is_a_4xx_on_every_entry_route(served: Served,
                                                               db_url: str) -> None:
    seen: set[str] = set()

    @settings(max_examples=120, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(st.sampled_from(sorted(ENTRY_BODIES)), REFUSED | JSON, st.booleans())
    def check(path: str, value: Any, as_key: bool) -> None:
        body = ENTRY_BODIES[path](value)
        content = json.dumps(body).encode()  # NaN, Infinity, \u0000 and \ud800 as sent
        headers = {**served.auth("good"), "content-type": "application/json",
                   "Idempotency-Key": "k-1", "X-Delivery-Id": "d-1"}
        before = snapshot(db_url)
        response = served.http.post(path, content=content, headers=headers)
        assert response.status_code < 500, (path, content, response.text)
        if refused_anywhere(value):
            seen.add(path)
            assert response.status_code == (400 if path == "/a2a" else 422), (
                path, content, response.text)
            assert snapshot(db_url) == before, (path, content)
        # A key or a string that PostgreSQL refuses is never answered with a 5xx either.
        if as_key and isinstance(value, str):
            raw = quote(value.encode("utf-8", "surrogatepass"))  # as a raw client sends it
            got = served.http.get(f"/runs?key={raw}", headers=headers)
            assert got.status_code < 500, (value, got.text)

    check()
    assert seen == set(ENTRY_BODIES), seen
