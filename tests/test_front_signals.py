"""A workflow's signals through the front (issue 46, finding 11).

One ``Idempotency-Key`` is one request: sent again as it was, it answers the first
delivery (200, ``created: false``), also once the run ended (it used to get 409, as if
refused); with another payload it is refused (409, ``key_in_use``, SQLSTATE TQ013), where
it used to answer 200 and drop the new payload unseen.  A run holds at most 64 signals
not yet consumed (429, ``too_many_signals``, SQLSTATE TQ012).  A name the run's workflow
does not wait for is refused (422, ``unknown_signal``, SQLSTATE TQ014: ``UnknownSignal``
from the driver), where it used to be stored and wait for ever.  Every refusal is checked
from the database: nothing written (invariant I15).
"""

from __future__ import annotations

import json
import uuid

import httpx
import psycopg
import pytest
from test_front_auth import bearer, snapshot
from test_front_owners import bot, front  # noqa: F401 - the fixtures

from ticketiq_pg.errors import UnknownSignal
from ticketiq_pg.front import refusals


def started_run(db_url: str, owner: str = "alice") -> str:
    """A run of ``owner``, started and held (no worker: its lease just sits)."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute("select run_id from ticketiq.start_run('p1', %s, %s, 'web', "
                           "'playground', false, 600, '{}')", (owner, owner)).fetchone()
    assert row is not None
    return str(row[0])


async def test_a_signal_key_is_one_request_before_and_after_the_run_ended(
        front, db_url: str) -> None:  # noqa: F811
    http: httpx.AsyncClient = front.http
    run_id = started_run(db_url)
    url = f"/runs/{run_id}/signals/ack"
    key = {**bearer(front.alice), "Idempotency-Key": "msg-1"}
    first = await http.post(url, json={"payload": {"n": 1}}, headers=key)
    assert first.status_code == 202, first.text
    again = await http.post(url, json={"payload": {"n": 1}}, headers=key)
    assert again.status_code == 200, again.text
    assert again.json()["signal_id"] == first.json()["signal_id"]
    assert again.json()["created"] is False

    before = snapshot(db_url)
    counted = refusals.refusal_counts().get("key_in_use", 0)
    other = await http.post(url, json={"payload": {"n": 2}}, headers=key)
    assert other.status_code == 409, other.text
    assert snapshot(db_url) == before
    assert refusals.refusal_counts().get("key_in_use", 0) == counted + 1

    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("select ticketiq.fail_run(%s, 1, 'done with it')", (uuid.UUID(run_id),))
    replay = await http.post(url, json={"payload": {"n": 1}}, headers=key)
    assert replay.status_code == 200, replay.text
    assert replay.json() == again.json()
    late = await http.post(url, json={"payload": {"n": 1}},
                           headers={**bearer(front.alice), "Idempotency-Key": "msg-2"})
    assert late.status_code == 409, late.text


async def test_a_run_past_its_pending_signals_gets_429(front, db_url: str) -> None:  # noqa: F811
    http: httpx.AsyncClient = front.http
    run_id = started_run(db_url)
    url = f"/runs/{run_id}/signals/ack"
    for n in range(64):
        sent = await http.post(url, json={"payload": {"n": n}},
                               headers={**bearer(front.alice), "Idempotency-Key": f"m-{n}"})
        assert sent.status_code == 202, sent.text
    before = snapshot(db_url)
    counted = refusals.refusal_counts().get("too_many_signals", 0)
    refused = await http.post(url, json={"payload": {"n": 64}},
                              headers={**bearer(front.alice), "Idempotency-Key": "m-64"})
    assert refused.status_code == 429, refused.text
    assert snapshot(db_url) == before
    assert refusals.refusal_counts().get("too_many_signals", 0) == counted + 1


def workflow_run(db_url: str, owner: str = "alice") -> str:
    """A run of workflow ``flow`` version 1, whose process declared it waits for ``go``
    only; its first checkpoint names the version, as the engine's does."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("select ticketiq.register_process('p1', 'h', 1)")
        conn.execute("select ticketiq.declare_workflows('p1', %s::jsonb)", (
            '[{"name": "flow", "version": "1", "kind": "flow", "runs": ["1"], '
            '"signals": ["go"]}]',))
        row = conn.execute("select run_id from ticketiq.start_run('p1', %s, %s, 'web', "
                           "'flow', false, 600, '{}')", (owner, owner)).fetchone()
        assert row is not None
        body = {"conversation": [], "calls": [], "history": [], "delegation_keys": {},
                "counters": {"workflow": {"name": "flow", "version": "1", "at": "wait"}}}
        conn.execute("select ticketiq.write_checkpoint(%s, 1, 1, %s::jsonb, 's', 'k')",
                     (row[0], json.dumps(body)))
    return str(row[0])


async def test_a_signal_its_workflow_does_not_wait_for_is_refused(
        front, db_url: str) -> None:  # noqa: F811
    http: httpx.AsyncClient = front.http
    run_id = workflow_run(db_url)
    before = snapshot(db_url)
    counted = refusals.refusal_counts().get("unknown_signal", 0)
    refused = await http.post(f"/runs/{run_id}/signals/stop", json={"payload": 1},
                              headers={**bearer(front.alice), "Idempotency-Key": "s-1"})
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"] == (
        f"run {run_id} (workflow flow version 1) waits for no signal stop (it waits for: go)")
    assert snapshot(db_url) == before
    assert refusals.refusal_counts().get("unknown_signal", 0) == counted + 1
    # the typed exception, for a caller of the driver
    with pytest.raises(UnknownSignal, match="waits for no signal stop"):
        await front.db.waits.send_signal(uuid.UUID(run_id), "stop", 1, "s-2", "alice")
    assert snapshot(db_url) == before
    sent = await http.post(f"/runs/{run_id}/signals/go", json={"payload": 1},
                           headers={**bearer(front.alice), "Idempotency-Key": "s-3"})
    assert sent.status_code == 202, sent.text
