"""Operating runs over HTTP (issue 42): the list of runs, a Stop by filter, a restart and a
fork, each with its credential, owner and bad-input tests; ``GET /runs?key=`` of any kind.

Every refusal is checked from the database (nothing written, I15); a fork is checked by
adopting it as a resume worker would: its chain and its call rows verify under the fork's
own run id, and its step's call carries the fork's key, not the source's.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import httpx
import psycopg
import pytest
from helpers import start
from test_front_auth import bearer, snapshot

from ticketiq_pg.agent import RunInfo, Tools
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.retries import TOOL_RETRY
from ticketiq_pg.runtime import call_rows, chain
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.runtime.entries import builtin_kinds
from ticketiq_pg.runtime.run_state import RunState
from ticketiq_pg.seal import Sealer

SEALER = Sealer({"k1": b"k" * 32})
LOOP = "helpdesk"


def worker_with_keys(db: TicketIQ, sealer: Sealer | None) -> Any:
    """What the front reads of a started worker: its driver, kinds and seal keys."""
    return SimpleNamespace(
        db=db, runner=SimpleNamespace(gates=None, tool_retry=TOOL_RETRY,
                                      setup=SimpleNamespace(sealer=sealer)),
        app=SimpleNamespace(tools=Tools(), kinds=builtin_kinds()),
        settings=SimpleNamespace(crash_resume_entries=True))


@pytest.fixture
async def front(db_url: str) -> AsyncIterator[SimpleNamespace]:
    db = await TicketIQ.connect(db_url)
    alice, _ = await create_api_key(db, "alice")
    bob, _ = await create_api_key(db, "bob")
    admin, _ = await create_api_key(db, "ops", scopes=["admin"])
    app = create_app(db, worker=worker_with_keys(db, SEALER), settings=FrontSettings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://app") as http:
        yield SimpleNamespace(http=http, db=db, app=app, alice=alice, bob=bob, admin=admin,
                              url=db_url)
    await app.state.waiter.stop()
    await db.close()


async def written(db: TicketIQ, owner: str = "alice", steps: int = 2) -> uuid.UUID:
    """A run of ``owner`` that wrote ``steps`` sealed checkpoints as the engine writes
    them (a chain: a base, then links), each step asking for one write."""
    run = await start(db, owner=owner, entry_point="run", may_wait=True)
    prev = ""
    for step in range(1, steps + 1):
        call = {"call_id": f"toolu_w{step}", "tool": "tickets.comment", "arguments": {"n": step},
                "classification": "write",
                "step_key": keys.agent_call_key(str(run.run_id), LOOP, step, f"toolu_w{step}")}
        body = {"chain": "base" if step == 1 else "link",
                "conversation": [{"role": "user", "content": f"step {step}"}],
                "calls": [call], "outcomes": {},
                "counters": {"model_steps": step, "tool_calls": step, "agent_loop": LOOP},
                "history": [{"step": step, "calls": [call["call_id"]]}],
                "delegation_keys": {}, "sealed_calls": True}
        seal, key_id, _ = SEALER.seal_encoded("link", run.run_id, step, body, prev=prev)
        prev = seal
        await db.write_checkpoint(run.run_id, run.epoch, step,
                                  call_rows.with_pending_seals(SEALER, run.run_id, step,
                                                               [call], body),
                                  seal, key_id)
    return run.run_id


async def failed(db: TicketIQ, owner: str = "alice") -> uuid.UUID:
    run_id = await written(db, owner)
    await db.fail_run(run_id, 1, "the model failed: 500")
    return run_id


# -- the list -----------------------------------------------------------------------


async def test_the_list_pages_through_the_callers_own_runs_and_an_admins_all(
        front: SimpleNamespace) -> None:
    http = front.http
    mine = [(await start(front.db, owner="alice", entry_point="run")).run_id for _ in range(5)]
    theirs = (await start(front.db, owner="bob", entry_point="run")).run_id
    seen: list[str] = []
    cursor = None
    for _ in range(4):
        page = await http.get("/runs", params={"limit": 2, **({"cursor": cursor} if cursor
                                                               else {})},
                              headers=bearer(front.alice))
        assert page.status_code == 200, page.text
        seen += [r["run_id"] for r in page.json()["runs"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == [str(r) for r in reversed(mine)], "newest first, each once, alice's only"
    everyone = (await http.get("/runs", headers=bearer(front.admin))).json()["runs"]
    assert {r["run_id"] for r in everyone} == {str(r) for r in [*mine, theirs]}
    hers = (await http.get("/runs", params={"owner": "alice"},
                           headers=bearer(front.admin))).json()["runs"]
    assert {r["owner"] for r in hers} == {"alice"}
    # Another owner's runs: refused to a caller, never listed.
    refused = await http.get("/runs", params={"owner": "alice"}, headers=bearer(front.bob))
    assert refused.status_code == 403
    bobs = (await http.get("/runs", headers=bearer(front.bob))).json()["runs"]
    assert [r["run_id"] for r in bobs] == [str(theirs)]
    assert (await http.get("/runs")).status_code == 401


async def test_the_list_filters_by_status_kind_and_failure(front: SimpleNamespace) -> None:
    gone = await failed(front.db)
    await start(front.db, owner="alice", entry_point="cron")
    http, who = front.http, bearer(front.alice)
    by_status = (await http.get("/runs", params={"status": "failed"}, headers=who)).json()
    assert [r["run_id"] for r in by_status["runs"]] == [str(gone)]
    assert by_status["runs"][0]["failure_reason"] == "the model failed: 500"
    by_kind = (await http.get("/runs", params={"kind": "cron"}, headers=who)).json()["runs"]
    assert [r["kind"] for r in by_kind] == ["cron"]
    by_failure = (await http.get("/runs", params={"failure": "model failed"},
                                 headers=who)).json()["runs"]
    assert [r["run_id"] for r in by_failure] == [str(gone)]


async def test_a_bad_filter_is_a_422_with_a_code_and_writes_nothing(
        front: SimpleNamespace) -> None:
    before = snapshot(front.url)
    cases = [({"status": "nope"}, "bad_status"), ({"cursor": "garbage!"}, "bad_cursor"),
             ({"created_from": "2030-01-02T00:00:00Z", "created_to": "2030-01-01T00:00:00Z"},
              "bad_range"), ({"limit": 0}, None), ({"limit": 501}, None),
             ({"created_from": "yesterday"}, None), ({"owner": ""}, None)]
    for params, code in cases:
        got = await front.http.get("/runs", params=params, headers=bearer(front.alice))
        assert got.status_code == 422, (params, got.text)
        if code is not None:
            assert got.json()["detail"][0]["type"] == code, got.text
    assert snapshot(front.url) == before


async def test_a_key_finds_its_run_of_any_kind_and_the_404_says_where_it_looked(
        front: SimpleNamespace) -> None:
    http = front.http
    event = (await http.post("/ticket-events", headers=bearer(front.alice), json={
        "event_id": "e-1", "ticket_id": "T", "type": "created"})).json()["run_id"]
    found = await http.get("/runs", params={"key": "e-1"}, headers=bearer(front.alice))
    assert found.status_code == 200 and found.json()["run_id"] == event, found.text
    missing = await http.get("/runs", params={"key": "e-2"}, headers=bearer(front.alice))
    assert missing.status_code == 404 and "any kind" in missing.text, missing.text
    # bob's same key is not alice's: nothing of hers is named
    other = await http.get("/runs", params={"key": "e-1"}, headers=bearer(front.bob))
    assert other.status_code == 404 and event not in other.text
    # the same key under two kinds: the caller names one
    await http.post("/runs", json={"input": {}}, headers={**bearer(front.alice),
                                                          "Idempotency-Key": "e-1"})
    both = await http.get("/runs", params={"key": "e-1"}, headers=bearer(front.alice))
    assert both.status_code == 409 and "kind=" in both.text, both.text
    named = await http.get("/runs", params={"key": "e-1", "kind": "ticket_event"},
                           headers=bearer(front.alice))
    assert named.json()["run_id"] == event


# -- a Stop by filter ---------------------------------------------------------------


async def test_a_stop_by_filter_asks_only_the_callers_matching_runs(
        front: SimpleNamespace) -> None:
    http = front.http
    crons = [(await start(front.db, owner="alice", entry_point="cron")).run_id for _ in range(2)]
    other = (await start(front.db, owner="alice", entry_point="run")).run_id
    bobs = (await start(front.db, owner="bob", entry_point="cron")).run_id
    before = snapshot(front.url)
    nothing = await http.post("/runs/stop", json={}, headers=bearer(front.alice))
    assert nothing.status_code == 422 and nothing.json()["detail"][0]["type"] == "no_filter"
    finished = await http.post("/runs/stop", json={"status": ["failed"]},
                               headers=bearer(front.alice))
    assert finished.status_code == 422, finished.text
    assert (await http.post("/runs/stop", json={"kind": "cron", "owner": "alice"},
                            headers=bearer(front.bob))).status_code == 403
    assert (await http.post("/runs/stop", json={"kind": "cron"})).status_code == 401
    assert snapshot(front.url) == before
    asked = await http.post("/runs/stop", json={"kind": "cron", "reason": "bad deploy"},
                            headers=bearer(front.alice))
    assert asked.status_code == 200, asked.text
    assert {r["run_id"] for r in asked.json()["runs"]} == {str(r) for r in crons}
    with psycopg.connect(front.url) as conn:
        stopped = {r[0] for r in conn.execute(
            "select run_id from ticketiq.runs where stop_requested_by is not null")}
    assert stopped == set(crons) and other not in stopped and bobs not in stopped


# -- restart ------------------------------------------------------------------------


async def test_a_restart_claims_a_failed_run_for_a_resume_and_refuses_the_rest(
        front: SimpleNamespace) -> None:
    http = front.http
    gone = await failed(front.db)
    running = await written(front.db)
    before = snapshot(front.url)
    assert (await http.post(f"/runs/{gone}/restart")).status_code == 401
    assert (await http.post(f"/runs/{gone}/restart", headers=bearer(front.bob))
            ).status_code == 403
    assert (await http.post(f"/runs/{running}/restart", headers=bearer(front.alice))
            ).status_code == 409
    assert (await http.post(f"/runs/{uuid.uuid4()}/restart", headers=bearer(front.alice))
            ).status_code == 404
    assert (await http.post(f"/runs/{gone}/restart", json={"reason": "x" * 2001},
                            headers=bearer(front.alice))).status_code == 422
    assert snapshot(front.url) == before
    done = await http.post(f"/runs/{gone}/restart", json={"reason": "the model is back"},
                           headers=bearer(front.alice))
    assert done.status_code == 200, done.text
    assert done.json() | {"run_id": None} == {
        "run_id": None, "status": "claimed", "step": 2, "previous_status": "failed",
        "previous_reason": "the model failed: 500", "losses_reset": 0}
    adopted = await front.db.adopt_run("p9", 30, gone)
    assert adopted is not None and adopted.last_step == 2 and adopted.loss_count == 0
    again = await http.post(f"/runs/{gone}/restart", headers=bearer(front.admin))
    assert again.status_code == 409, "running again: not restarted twice"


# -- fork ---------------------------------------------------------------------------


async def test_a_fork_is_sealed_anew_keyed_anew_and_adopted_from_its_step(
        front: SimpleNamespace) -> None:
    http = front.http
    source = await written(front.db, steps=3)
    headers = {**bearer(front.alice), "Idempotency-Key": "f-1"}
    made = await http.post(f"/runs/{source}/fork", json={"step": 2, "reason": "try again"},
                           headers=headers)
    assert made.status_code == 202, made.text
    fork = uuid.UUID(made.json()["run_id"])
    assert made.json() | {"run_id": None} == {"run_id": None, "created": True,
                                              "status": "claimed", "step": 2,
                                              "source_run_id": str(source)}
    again = await http.post(f"/runs/{source}/fork", json={"step": 2}, headers=headers)
    assert again.status_code == 200 and again.json()["run_id"] == str(fork)
    adopted = await front.db.adopt_run("p9", 30, fork)
    assert adopted is not None and adopted.last_step == 2
    state = RunState(info=RunInfo(run_id=fork, owner="alice", run_as="a", channel="c",
                                  entry_point="run", may_wait=True, correlation_id=str(fork)),
                     epoch=adopted.epoch, input=adopted.input)
    chain.restore(SEALER, state, fork, 2, adopted.checkpoint_body, adopted.checkpoint_seal,
                  adopted.checkpoint_seal_key_id, adopted.checkpoint_chain)
    assert adopted.checkpoint_body is not None
    call_rows.verify_rows(SEALER, fork, 2, adopted.checkpoint_body, adopted.calls)
    [row] = adopted.calls
    assert row["state"] == "pending"
    assert row["step_key"] == keys.agent_call_key(str(fork), LOOP, 2, "toolu_w2")
    with psycopg.connect(front.url) as conn:
        source_keys = {r[0] for r in conn.execute(
            "select step_key from ticketiq.calls where run_id = %s", (source,))}
        events = [r[0] for r in conn.execute(
            "select event from ticketiq.audit where run_id in (%s, %s) and event like"
            " 'agent.run.fork%%' order by audit_id", (source, fork))]
    assert row["step_key"] not in source_keys, "the fork's key is its own"
    assert events == ["agent.run.forked", "agent.run.fork_made"]


async def test_a_fork_is_refused_to_another_owner_for_a_step_not_written_or_a_forged_source(
        front: SimpleNamespace) -> None:
    http = front.http
    source = await written(front.db)
    headers = {**bearer(front.alice), "Idempotency-Key": "f-2"}
    before = snapshot(front.url)
    assert (await http.post(f"/runs/{source}/fork", json={"step": 1})).status_code == 401
    assert (await http.post(f"/runs/{source}/fork", json={"step": 1}, headers={
        **bearer(front.bob), "Idempotency-Key": "f-2"})).status_code == 403
    missing = await http.post(f"/runs/{source}/fork", json={"step": 9}, headers=headers)
    assert missing.status_code == 422 and missing.json()["detail"][0]["type"] == "no_such_step"
    for body in ({"step": 0}, {"step": "one"}, {"step": 1, "input": [1]}, {}):
        got = await http.post(f"/runs/{source}/fork", json=body, headers=headers)
        assert got.status_code == 422, (body, got.text)
    assert (await http.post(f"/runs/{source}/fork", json={"step": 1},
                            headers=bearer(front.alice))).status_code == 422, "a key is needed"
    assert snapshot(front.url) == before
    with psycopg.connect(front.url, autocommit=True) as conn:
        conn.execute("update ticketiq.checkpoints set body = jsonb_set(body, '{calls,0,arguments}',"
                     " '{\"n\": 666}') where run_id = %s and step = 1", (source,))
    before = snapshot(front.url)
    forged = await http.post(f"/runs/{source}/fork", json={"step": 2}, headers=headers)
    assert forged.status_code == 409 and "not forked" in forged.text, forged.text
    assert snapshot(front.url) == before


async def test_a_front_without_seal_keys_answers_503_to_a_fork(db_url: str) -> None:
    db = await TicketIQ.connect(db_url)
    try:
        alice, _ = await create_api_key(db, "alice")
        source = await written(db)
        app = create_app(db, settings=FrontSettings())
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://app") as http:
            got = await http.post(f"/runs/{source}/fork", json={"step": 1}, headers={
                **bearer(alice), "Idempotency-Key": "f-3"})
        assert got.status_code == 503, got.text
        await app.state.waiter.stop()
    finally:
        await db.close()


# -- the console --------------------------------------------------------------------


async def test_the_consoles_run_page_restarts_and_forks_as_the_signed_in_admin(
        front: SimpleNamespace) -> None:
    http = front.http
    origin = {"Origin": "http://app"}
    form = {**origin, "Content-Type": "application/x-www-form-urlencoded"}
    signed = await http.post("/console/login", content=f"token={front.admin}", headers=form)
    assert signed.status_code == 303, signed.text
    gone = await failed(front.db)
    page = await http.get(f"/console/runs/{gone}")
    assert 'id="restart-run"' in page.text and 'id="fork-run"' in page.text, page.text
    before = snapshot(front.url)
    evil = await http.post(f"/console/runs/{gone}/restart", headers={
        "Origin": "http://evil.example", "Content-Type": form["Content-Type"]})
    assert evil.status_code == 403 and snapshot(front.url) == before
    bad = await http.post(f"/console/runs/{gone}/fork", content="step=0&key=k", headers=form)
    assert bad.status_code == 422 and snapshot(front.url) == before
    forked = await http.post(f"/console/runs/{gone}/fork",
                             content="step=1&key=k&input=&reason=from+here", headers=form)
    assert forked.status_code == 303, forked.text
    fork = forked.headers["location"].rsplit("/", 1)[1]
    again = await http.post(f"/console/runs/{gone}/fork", content="step=1&key=k", headers=form)
    assert again.headers["location"].endswith(fork), "the form's key: one fork"
    restarted = await http.post(f"/console/runs/{gone}/restart", content="reason=back",
                                headers=form)
    assert restarted.status_code == 303, restarted.text
    with psycopg.connect(front.url) as conn:
        rows = dict(conn.execute(
            "select event, actor from ticketiq.audit where event in"
            " ('agent.run.restarted', 'agent.run.forked')").fetchall())
        status = conn.execute("select status from ticketiq.runs where run_id = %s",
                              (gone,)).fetchone()
    assert rows == {"agent.run.restarted": "ops", "agent.run.forked": "ops"}
    assert status == ("claimed",)
