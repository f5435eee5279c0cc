"""One door for every value a request carries (issue 46, finding 9).

Every route of the front, found from the app's own route table (the console's mount
included, never a hand list), is sent what Python's ``json`` takes and PostgreSQL
refuses (NaN, Infinity, 1e999, NUL, a lone surrogate, in a value or a key), JSON nested
past the limit and bodies over it, in its body, query, path and headers: each answer is
a 4xx in the project's refusal shape (``detail``; a JSON-RPC error for ``/a2a``; a page
on the console), none a 5xx, and nothing is written.  The findings that were 500s are
pinned one by one: a signal's payload, the inspector's arguments through the API and the
console's form, and the console's inspector form for an unknown run (404, not 503).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import httpx
import psycopg
import pytest
from helpers import fingerprint_sync, start

from ticketiq_pg import Tools
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front import door, refusals
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.runtime.entries import builtin_kinds

MAX_BODY = 64 * 1024
ORIGIN = {"Origin": "http://app"}
#: JSON Python's json module takes and PostgreSQL refuses, as a client sends it.
REFUSED = ["NaN", "Infinity", "-Infinity", "1e999", '"a\\u0000b"', '"\\ud800"',
           '"x\\udfff"', '{"\\u0000": 1}', '{"\\ud800": 1}']
#: Nested past the door's depth, and so deep Python's own parser gives up.
DEEP = ["[" * 200 + "]" * 200, "[" * 5000 + "]" * 5000]


def snapshot(url: str) -> dict[str, tuple[int, str]]:
    with psycopg.connect(url) as conn:
        return fingerprint_sync(conn)


def app_tools() -> Tools:
    tools = Tools()

    @tools.read("echo", parameters={"type": "object"})
    async def echo(call: Any) -> Any:
        return call.arguments

    return tools


def fake_worker(db: TicketIQ) -> Any:
    """What the front reads of a started worker: its driver, tools, gates and kinds."""
    from ticketiq_pg.retries import TOOL_RETRY

    return SimpleNamespace(db=db, runner=SimpleNamespace(gates=None, tool_retry=TOOL_RETRY),
                           app=SimpleNamespace(tools=app_tools(), kinds=builtin_kinds()),
                           settings=SimpleNamespace(crash_resume_entries=True))


@pytest.fixture
async def front(db_url: str) -> AsyncIterator[SimpleNamespace]:
    db = await TicketIQ.connect(db_url)
    admin, _ = await create_api_key(db, "ops", scopes=["admin"], run_as=["*"])
    run = await start(db, holder="p1", ttl=3600, owner="ops", may_wait=True)
    app = create_app(db, worker=fake_worker(db), settings=FrontSettings(
        max_body=MAX_BODY, docs=True, webhook_secrets={"signed": "s" * 32}))
    # A 500 is an answer here, as a client would see it, not an exception in the test.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as http, \
            httpx.AsyncClient(transport=transport, base_url="http://app") as browser:
        signed_in = await browser.post("/console/login", content=f"token={admin}", headers={
            **ORIGIN, "Content-Type": "application/x-www-form-urlencoded"})
        assert signed_in.status_code == 303, signed_in.text
        yield SimpleNamespace(http=http, browser=browser, app=app, db=db, admin=admin,
                              run_id=run.run_id, url=db_url,
                              auth={"Authorization": f"Bearer {admin}"})
    await app.state.waiter.stop()
    await db.close()


def refused_shape(route: str, response: httpx.Response) -> bool:
    """The project's refusal: a JSON ``detail`` (JSON-RPC's error on /a2a), or on the
    console a page that says why."""
    if route.startswith("/console"):
        return response.headers["content-type"].startswith("text/html") and (
            "<p>" in response.text)
    body = response.json()
    if route == "/a2a":
        return "error" in body
    return "detail" in body


async def test_a_signals_payload_postgresql_refuses_is_a_422(front: SimpleNamespace) -> None:
    before = snapshot(front.url)
    path = f"/runs/{front.run_id}/signals/go"
    for value in REFUSED:
        response = await front.http.post(path, content=f'{{"payload": {value}}}'.encode(),
                                         headers={**front.auth, "Idempotency-Key": "k-1",
                                                  "content-type": "application/json"})
        assert response.status_code == 422, (value, response.text)
        assert response.json()["detail"][0]["type"] == "value_postgres_refuses"
    assert snapshot(front.url) == before


async def test_the_inspectors_arguments_postgresql_refuses_are_a_422_by_api_and_form(
        front: SimpleNamespace) -> None:
    before = snapshot(front.url)
    for value in REFUSED:
        response = await front.http.post(
            "/inspector/calls", content=f'{{"tool": "echo", "arguments": {{"v": {value}}}}}'
            .encode(), headers={**front.auth, "content-type": "application/json"})
        assert response.status_code == 422, (value, response.text)
        form = httpx.QueryParams({"tool": "echo", "arguments": f'{{"v": {value}}}'})
        page = await front.browser.post(
            f"/console/runs/{front.run_id}/inspect", content=str(form), headers={
                **ORIGIN, "Content-Type": "application/x-www-form-urlencoded"})
        assert page.status_code == 422, (value, page.text)
        assert "PostgreSQL cannot store" in page.text
    assert snapshot(front.url) == before
    # The same call with arguments that can be stored is made.
    made = await front.http.post("/inspector/calls", json={"tool": "echo",
                                                           "arguments": {"v": "ok"}},
                                 headers=front.auth)
    assert (made.status_code, made.json()["result"]) == (200, {"v": "ok"})


async def test_the_consoles_inspector_form_for_an_unknown_run_is_a_404(
        front: SimpleNamespace) -> None:
    page = await front.browser.post(f"/console/runs/{uuid.uuid4()}/inspect",
                                    content="tool=echo&arguments=%7B%7D", headers={
                                        **ORIGIN,
                                        "Content-Type": "application/x-www-form-urlencoded"})
    assert page.status_code == 404, page.text
    assert "cannot be read" not in page.text


def filled(path: str, run_id: uuid.UUID, value: str = "x") -> str:
    """The path with its parameters filled: a run of the caller, ``value`` for text."""
    for name in ("run_id", "approval_id"):
        path = path.replace(f"{{{name}:uuid}}", str(run_id)).replace(f"{{{name}}}",
                                                                      str(run_id))
    for name in ("source", "name", "event_id"):
        path = path.replace(f"{{{name}}}", value)
    assert "{" not in path, path
    return path


def bodies(value: str) -> list[tuple[str, bytes]]:
    """(content type, body) holding ``value`` (raw JSON) in every free-form field a route
    takes, as JSON; and a form (the console's) with a NUL in every field."""
    fields = {"payload": value, "input": f'{{"v": {value}}}',
              "arguments": f'{{"v": {value}}}', "v": value}
    plain = {"tool": '"echo"', "kind": '"run"', "event_id": '"e-1"', "ticket_id": '"T"',
             "type": '"message"', "run_key": '"r-1"', "user": '"ops"', "turn_id": '"t-1"',
             "conversation_id": '"c-1"', "text": '"hi"', "jsonrpc": '"2.0"', "id": "1",
             "method": '"message/send"',
             "params": f'{{"message": {{"messageId": "m-1", "parts": [{{"v": {value}}}]}}}}'}
    as_json = "{" + ", ".join(f'"{k}": {v}' for k, v in {**plain, **fields}.items()) + "}"
    form = httpx.QueryParams({name: "a\x00b" for name in ("tool", "arguments", "decision",
                                                           "token")})
    return [("application/json", as_json.encode()), (
        "application/x-www-form-urlencoded", str(form).encode())]


async def test_every_route_of_the_route_table_refuses_what_postgresql_refuses(
        front: SimpleNamespace) -> None:
    table = list(door.route_table(front.app.routes))
    paths = {path for _, path, _ in table}
    # The table is the app's own, through its included routers and the console's mount:
    # every operation of its OpenAPI document, and the routes a hand list would forget.
    spec = (await front.http.get("/openapi.json", headers=front.auth)).json()
    assert set(spec["paths"]) <= paths, set(spec["paths"]) - paths
    assert {"/runs/{run_id}/signals/{name}", "/inspector/calls", "/healthz", "/docs",
            "/console/runs/{run_id:uuid}/inspect", "/console/login", "/openapi.json"
            } <= paths, paths
    assert len(table) >= 25, table
    before = snapshot(front.url)
    counted = refusals.refusal_counts()
    answered: dict[int, int] = {}

    async def send(method: str, route: str, url: str, **kwargs: Any) -> httpx.Response:
        client = front.browser if route.startswith("/console") else front.http
        headers = {**(ORIGIN if route.startswith("/console") else front.auth),
                   "Idempotency-Key": "k-1", "X-Delivery-Id": "d-1",
                   **kwargs.pop("headers", {})}
        response = await client.request(method, url, headers=headers, **kwargs)
        answered[response.status_code] = answered.get(response.status_code, 0) + 1
        assert response.status_code < 500, (method, url, kwargs, response.text)
        return response

    for method, route, _ in table:
        url = filled(route, front.run_id)
        for value in [*REFUSED, *DEEP]:
            for content_type, content in bodies(value):
                got = await send(method, route, url, content=content,
                                 headers={"content-type": content_type})
                assert 400 <= got.status_code < 500, (method, route, value, got.text)
                assert refused_shape(route, got), (method, route, value, got.text)
        # Over the body limit: 413 before it is read, declared or not.
        big = b'{"v": "' + b"x" * MAX_BODY + b'"}'
        assert (await send(method, route, url, content=big)).status_code == 413, route
        # A NUL in the query, in a path's text and in each header a route keys by.
        for text in ("a\x00b",):
            got = await send(method, route, url, params={"key": text, "v": text,
                                                         "wait": text})
            assert 400 <= got.status_code < 500 and refused_shape(route, got), (
                route, got.text)
            if any(f"{{{name}}}" in route for name in ("source", "name", "event_id")):
                got = await send(method, route, filled(route, front.run_id, "a%00b"))
                assert 400 <= got.status_code < 500 and refused_shape(route, got), (
                    route, got.text)
            for header in ("Idempotency-Key", "X-Run-As", "X-Delivery-Id", "X-Anything"):
                got = await send(method, route, url, headers={header: text})
                assert 400 <= got.status_code < 500 and refused_shape(route, got), (
                    route, header, got.text)
    assert snapshot(front.url) == before
    # Each refusal counted under its reason.
    now = refusals.refusal_counts()
    assert now.get("value_postgres_refuses", 0) > counted.get("value_postgres_refuses", 0)
    assert now.get("body_too_large", 0) - counted.get("body_too_large", 0) >= len(table)
    assert 500 not in answered, answered


def test_a_route_around_the_door_is_refused_when_the_app_is_built() -> None:
    from fastapi import APIRouter
    from starlette.responses import PlainTextResponse

    app = create_app(object())  # type: ignore[arg-type]  # the driver is not used to build
    door.require_door(app.routes)  # every route of the front is behind it

    @app.get("/added-later")  # the app's own route class: the door's
    async def added() -> dict[str, str]:
        return {}

    door.require_door(app.routes)
    plain = APIRouter()  # a router of FastAPI's plain routes
    plain.add_api_route("/around", added)
    app.include_router(plain)
    with pytest.raises(TypeError, match="/around"):
        door.require_door(app.routes)
    raw = create_app(object())  # type: ignore[arg-type]
    raw.add_route("/raw", lambda request: PlainTextResponse("x"))
    with pytest.raises(TypeError, match="/raw"):
        door.require_door(raw.routes)
