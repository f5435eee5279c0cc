"""The async driver against a real database.

* every method of ``TicketIQ`` returns its dataclass, with the values the SQL wrote;
* every documented SQLSTATE (TQ001..TQ008) arrives as its typed exception and the rejected
  call leaves every ticketiq table as it was (I15, checked with a fingerprint of all tables);
* ``conn=`` joins the caller's transaction; ``statements`` counts one per call, and one
  call sends exactly one statement;
* ``TicketIQ.connect`` refuses a database whose schema version it does not know, or that
  has no schema;
* a LOGIN role granted ``ticketiq_app`` runs a whole run through the functions and cannot
  touch the tables.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from helpers import (
    NEWEST,
    allow_fake_clock,
    body,
    call,
    close_all,
    connect_many,
    db_now,
    fingerprint,
    rows,
    scalar,
    set_fake_now,
    start,
)
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from ticketiq_pg import errors
from ticketiq_pg.db import rows as models
from ticketiq_pg.db.driver import FailoverConnection, TicketIQ
from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.errors import (
    AnswerSealed,
    Fenced,
    InvalidPayload,
    LeaseLapsed,
    NotOwner,
    RunNotRunning,
    SchemaVersionMismatch,
    StepConflict,
    UnknownApproval,
    UnknownCall,
    UnknownRun,
)
from ticketiq_pg.testing.postgres import temporary_database

DAY = 86400.0


def assert_fields_typed(obj: Any, cls: type) -> None:
    """obj is a cls whose every field is set (the row carried each column)."""
    assert type(obj) is cls
    for f in fields(cls):
        assert hasattr(obj, f.name), f.name


@pytest.fixture
async def tiq(db_url: str) -> Any:
    client = await TicketIQ.connect(db_url, min_size=1, max_size=4)
    try:
        yield client
    finally:
        await client.close()


# -- every method, mapped to its dataclass -------------------------------------------------


async def test_schema_version_check_schema_and_now(tiq: TicketIQ, aconn) -> None:
    assert await tiq.schema_version() == NEWEST
    assert await tiq.check_schema() == NEWEST
    before = await db_now(aconn)
    now = await tiq.now()
    assert isinstance(now, datetime) and now.tzinfo is not None
    assert before <= now <= await db_now(aconn)

    # the fake clock moves ticketiq.now() only where the config allows it
    fake = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)
    await set_fake_now(aconn, fake)
    assert await tiq.now(conn=aconn) != fake
    await allow_fake_clock(aconn)
    assert await tiq.now(conn=aconn) == fake
    assert await tiq.now() != fake  # the pool's sessions keep the real clock


async def test_start_run(tiq: TicketIQ, aconn) -> None:
    before = await db_now(aconn)
    started = await start(
        tiq, holder="proc-1", ttl=45, input={"text": "printer is on fire"}, meta={"k": "v"}
    )
    assert_fields_typed(started, models.StartedRun)
    assert isinstance(started.run_id, uuid.UUID)
    assert started.epoch == 1 and started.created is True
    assert started.correlation_id == str(started.run_id)
    assert before + timedelta(seconds=45) <= started.lease_expires_at
    assert started.lease_expires_at <= await db_now(aconn) + timedelta(seconds=45)

    row = await rows(
        aconn,
        "select status, epoch, lease_holder, lease_expires_at, input, meta, owner, entry_point,"
        " loss_count, last_step from ticketiq.runs where run_id = %s",
        (started.run_id,),
    )
    assert row == [
        (
            "running",
            1,
            "proc-1",
            started.lease_expires_at,
            {"text": "printer is on fire"},
            {"k": "v"},
            "alice@example.com",
            "helpdesk.triage",
            0,
            0,
        )
    ]
    assert await scalar(
        aconn,
        "select count(*) from ticketiq.audit where run_id = %s and event = 'agent.run.started'",
        (started.run_id,),
    ) == 1

    # a caller-chosen run id and correlation id
    rid = uuid.uuid4()
    chosen = await start(tiq, run_id=rid, correlation_id="corr-7")
    assert (chosen.run_id, chosen.correlation_id, chosen.created) == (rid, "corr-7", True)

    # a retried start with the same sender id finds the run and does not own it
    first = await start(tiq, idempotency_key="webhook-42")
    again = await start(tiq, idempotency_key="webhook-42", holder="proc-2")
    assert again == models.StartedRun(first.run_id, None, None, False, first.correlation_id)
    assert await scalar(
        aconn, "select count(*) from ticketiq.runs where idempotency_key = 'webhook-42'"
    ) == 1


async def test_write_checkpoint(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq)
    b1 = body(call("w1", "write", step_key="k-1"), call("r1", "read"), call("w2", "write"))
    written = await tiq.write_checkpoint(run.run_id, 1, 1, b1, "seal-1", "key-a")
    assert_fields_typed(written, models.CheckpointWritten)
    assert written.run_id == run.run_id and written.step == 1
    assert written.replayed is False and written.stop_requested is False
    assert written.lease_expires_at == run.lease_expires_at
    assert await rows(
        aconn,
        "select step, epoch, body, seal, seal_key_id from ticketiq.checkpoints where run_id = %s",
        (run.run_id,),
    ) == [(1, 1, b1, "seal-1", "key-a")]
    assert await rows(
        aconn,
        "select call_id, ordinal, classification, step_key, state from ticketiq.calls"
        " where run_id = %s order by ordinal",
        (run.run_id,),
    ) == [("w1", 1, "write", "k-1", "pending"), ("w2", 3, "write", None, "pending")]
    # a read has no row: it is never marked and is made again on resume

    # the same statement again (same epoch and seal) replays and changes nothing
    fp = await fingerprint(aconn)
    replay = await tiq.write_checkpoint(run.run_id, 1, 1, b1, "seal-1", "key-a")
    assert replay.replayed is True and replay.written_at == written.written_at
    assert await fingerprint(aconn) == fp

    # step 2 closes step 1's changing calls, with the outcomes carried in the body: the write
    # in doubt as made, the write never marked as skipped (it cannot have been made)
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    b2 = body(outcomes={"w1": {"ticket": 7}, "r1": {"rows": []}})
    second = await tiq.write_checkpoint(run.run_id, 1, 2, b2, "seal-2", "key-a")
    assert second.step == 2 and second.replayed is False
    assert await rows(
        aconn,
        "select call_id, state, settlement, outcome, finished_epoch from ticketiq.calls"
        " where run_id = %s and step = 1 order by ordinal",
        (run.run_id,),
    ) == [("w1", "done", "made", {"ticket": 7}, 1), ("w2", "settled", "skipped", None, 1)]
    assert await scalar(
        aconn, "select last_step from ticketiq.runs where run_id = %s", (run.run_id,)
    ) == 2


async def test_mark_in_doubt(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq)
    b = body(call("w1", "write", step_key="sk"), call("r1", "read"), call("r2", "read"))
    await tiq.write_checkpoint(run.run_id, 1, 1, b, "s1", "k")
    mark = await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    assert_fields_typed(mark, models.CallMark)
    assert (mark.call_id, mark.state, mark.marked_classification, mark.step_key) == (
        "w1",
        "in_doubt",
        "write",
        "sk",
    )
    assert mark.already_marked is False and mark.stop_requested is False

    # marking again changes nothing and returns the first mark
    fp = await fingerprint(aconn)
    again = await tiq.mark_in_doubt(run.run_id, 1, 1, "w1", "delegation")
    assert again.already_marked is True and again.marked_at == mark.marked_at
    assert again.marked_classification == "write"
    assert await fingerprint(aconn) == fp

    # a read the tool now calls a write is marked as a write (I7): it gets its row then
    reclassified = await tiq.mark_in_doubt(run.run_id, 1, 1, "r1", "write")
    assert reclassified.marked_classification == "write"
    assert reclassified.already_marked is False
    assert await rows(
        aconn,
        "select call_id, ordinal, classification, state, marked_classification, marked_epoch"
        " from ticketiq.calls where run_id = %s order by ordinal",
        (run.run_id,),
    ) == [("w1", 1, "write", "in_doubt", "write", 1), ("r1", 2, "read", "in_doubt", "write", 1)]
    # a read stays unmarked (TQ004), a call the step never asked for is unknown (TQ008)
    fp = await fingerprint(aconn)
    with pytest.raises(InvalidPayload):
        await tiq.mark_in_doubt(run.run_id, 1, 1, "r2")
    with pytest.raises(UnknownCall):
        await tiq.mark_in_doubt(run.run_id, 1, 1, "r3", "write")
    assert await fingerprint(aconn) == fp


async def test_record_outcome(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq)
    b = body(call("w1", "write"), call("r1", "read"), call("w2", "write"))
    await tiq.write_checkpoint(run.run_id, 1, 1, b, "s1", "k")
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    made = await tiq.record_outcome(run.run_id, 1, 1, "w1", {"id": 9})
    assert_fields_typed(made, models.CallOutcome)
    assert (made.call_id, made.state, made.settlement) == ("w1", "done", "made")
    assert made.replayed is False
    again = await tiq.record_outcome(run.run_id, 1, 1, "w1", {"id": 9})
    assert again.replayed is True and again.finished_at == made.finished_at

    skipped = await tiq.record_outcome(run.run_id, 1, 1, "w2", None, "skipped")
    assert (skipped.state, skipped.settlement) == ("settled", "skipped")
    assert await rows(
        aconn,
        "select call_id, state, settlement, outcome from ticketiq.calls where run_id = %s"
        " order by ordinal",
        (run.run_id,),
    ) == [("w1", "done", "made", {"id": 9}), ("w2", "settled", "skipped", None)]
    # a read has no row, so no outcome is recorded for it
    fp = await fingerprint(aconn)
    with pytest.raises(UnknownCall):
        await tiq.record_outcome(run.run_id, 1, 1, "r1", {"rows": 1}, "redone")
    assert await fingerprint(aconn) == fp


async def test_record_attempt(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq, ttl=60)
    first = await tiq.record_attempt(run.run_id, 1, 1, "model", "HTTP 503")
    assert_fields_typed(first, models.Attempt)
    assert first == models.Attempt(run.run_id, 1, "model", 1)
    assert (await tiq.record_attempt(run.run_id, 1, 1, "model", "HTTP 529")).attempts == 2
    assert (await tiq.record_attempt(run.run_id, 1, 1, "w1", "x" * 2500)).attempts == 1
    # a crash in the middle of retrying: the resumed epoch's count goes on
    await tiq.release_run(run.run_id, 1)
    adopted = await tiq.adopt_run("p2", 60, run.run_id)
    assert adopted is not None and adopted.epoch == 3
    assert (await tiq.record_attempt(run.run_id, 3, 1, "model", "HTTP 500")).attempts == 3
    assert await rows(
        aconn,
        "select step, target, attempts, last_error, length(last_error) from ticketiq.attempts"
        " where run_id = %s order by target",
        (run.run_id,),
    ) == [(1, "model", 3, "HTTP 500", 8), (1, "w1", 1, "x" * 2000, 2000)]
    fp = await fingerprint(aconn)
    with pytest.raises(Fenced):
        await tiq.record_attempt(run.run_id, 1, 1, "model", "late")
    with pytest.raises(InvalidPayload, match="target"):
        await tiq.record_attempt(run.run_id, 3, 1, "t" * 257, "HTTP 503")
    assert await fingerprint(aconn) == fp


async def test_audit_once(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq, ttl=60)
    first = await tiq.audit_once(
        run.run_id, 1, "agent.run.guarantee_downgraded", "w1", {"reason": "no step key"}
    )
    assert_fields_typed(first, models.AuditOnce)
    assert isinstance(first.audit_id, int) and first.inserted is True
    assert await rows(
        aconn,
        "select event, run_id, epoch, actor, detail from ticketiq.audit where audit_id = %s",
        (first.audit_id,),
    ) == [("agent.run.guarantee_downgraded", run.run_id, 1, "p1",
           {"key": "w1", "reason": "no step key"})]
    fp = await fingerprint(aconn)
    again = await tiq.audit_once(run.run_id, 1, "agent.run.guarantee_downgraded", "w1", {})
    assert again == models.AuditOnce(first.audit_id, False)
    assert await fingerprint(aconn) == fp
    other = await tiq.audit_once(run.run_id, 1, "agent.run.guarantee_downgraded", "w2", {})
    assert other.inserted is True and other.audit_id != first.audit_id
    fp = await fingerprint(aconn)
    with pytest.raises(InvalidPayload, match="event"):
        await tiq.audit_once(run.run_id, 1, "downgraded", "w3", {})
    with pytest.raises(InvalidPayload, match="detail"):
        await tiq.audit_once(run.run_id, 1, "agent.run.guarantee_downgraded", "w3", [1])  # type: ignore[arg-type]
    assert await fingerprint(aconn) == fp


async def _wait_until_blocked(admin: psycopg.AsyncConnection, pid: int) -> None:
    """Until backend ``pid`` waits for a lock (another transaction holds the run's row)."""
    for _ in range(500):
        if await scalar(
            admin, "select wait_event_type from pg_stat_activity where pid = %s", (pid,)
        ) == "Lock":
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"backend {pid} never waited for a lock")


@pytest.mark.parametrize(
    "isolation", [psycopg.IsolationLevel.READ_COMMITTED, psycopg.IsolationLevel.REPEATABLE_READ]
)
async def test_audit_once_is_once_when_two_sessions_race(
    db_url: str, aconn, isolation: psycopg.IsolationLevel
) -> None:
    """Two sessions audit the same (run, event, key) at once: the second waits for the
    first's transaction; once it commits, the second writes nothing.  Under READ
    COMMITTED it returns the first row's audit_id (inserted false); under REPEATABLE READ,
    whose snapshot cannot see that row, the key's primary key makes it fail (40001)
    rather than write a second row."""
    tiq = TicketIQ()
    first, second = await connect_many(db_url, 2)
    event = "agent.run.guarantee_downgraded"
    try:
        run = await start(tiq, ttl=60, conn=first)
        await first.set_autocommit(False)
        await second.set_autocommit(False)
        await second.set_isolation_level(isolation)
        won = await tiq.audit_once(run.run_id, 1, event, "w1", {"n": 1}, conn=first)
        assert won.inserted is True
        pending = asyncio.create_task(
            tiq.audit_once(run.run_id, 1, event, "w1", {"n": 2}, conn=second)
        )
        await _wait_until_blocked(aconn, second.info.backend_pid)
        assert not pending.done()
        await first.commit()
        if isolation is psycopg.IsolationLevel.READ_COMMITTED:
            assert await asyncio.wait_for(pending, 10) == models.AuditOnce(won.audit_id, False)
        else:
            with pytest.raises(psycopg.errors.SerializationFailure):
                await asyncio.wait_for(pending, 10)
        await second.rollback()
    finally:
        await close_all([first, second])
    assert await rows(
        aconn,
        "select audit_id, detail from ticketiq.audit where run_id = %s and event = %s",
        (run.run_id, event),
    ) == [(won.audit_id, {"key": "w1", "n": 1})]


async def test_record_attempt_counts_both_of_two_sessions_at_once(db_url: str, aconn) -> None:
    """The upsert is one statement: a second session recording at the same moment waits
    for the first and counts on from its row, neither failure lost."""
    tiq = TicketIQ()
    first, second = await connect_many(db_url, 2)
    try:
        run = await start(tiq, ttl=60, conn=first)
        await first.set_autocommit(False)
        assert (await tiq.record_attempt(run.run_id, 1, 1, "model", "a", conn=first)).attempts == 1
        pending = asyncio.create_task(
            tiq.record_attempt(run.run_id, 1, 1, "model", "b", conn=second)
        )
        await _wait_until_blocked(aconn, second.info.backend_pid)
        await first.commit()
        assert (await asyncio.wait_for(pending, 10)).attempts == 2
    finally:
        await close_all([first, second])
    assert await rows(
        aconn, "select attempts, last_error from ticketiq.attempts where run_id = %s", (run.run_id,)
    ) == [(2, "b")]


async def test_renew_leases(tiq: TicketIQ, aconn) -> None:
    await tiq.processes.register_process("p1")
    a = await start(tiq, holder="p1", ttl=10)
    b = await start(tiq, holder="p1", ttl=10)
    other = await start(tiq, holder="p2", ttl=10)
    unknown = uuid.uuid4()
    seen_before = await scalar(
        aconn, "select last_seen_at from ticketiq.processes where process_id = 'p1'"
    )
    renewed = await tiq.processes.renew_leases(
        "p1", [(a.run_id, 1), (b.run_id, 2), (other.run_id, 1), (unknown, 1)], 600
    )
    assert all(type(r) is models.LeaseRenewal for r in renewed)
    by_id = {r.run_id: r for r in renewed}
    assert len(renewed) == 4
    assert by_id[a.run_id].held is True and by_id[a.run_id].epoch == 1
    assert by_id[a.run_id].lease_expires_at > a.lease_expires_at + timedelta(seconds=500)
    # stale epoch, another holder's run, an unknown run: not held, not renewed
    for rid in (b.run_id, other.run_id, unknown):
        assert by_id[rid].held is False and by_id[rid].lease_expires_at is None
    assert await rows(
        aconn,
        "select run_id, lease_expires_at from ticketiq.runs where run_id = any(%s) order by 1",
        ([a.run_id, b.run_id, other.run_id],),
    ) == sorted(
        [
            (a.run_id, by_id[a.run_id].lease_expires_at),
            (b.run_id, b.lease_expires_at),
            (other.run_id, other.lease_expires_at),
        ]
    )
    assert await scalar(
        aconn, "select last_seen_at from ticketiq.processes where process_id = 'p1'"
    ) > seen_before
    assert await tiq.processes.renew_leases("p1", [], 30) == []


async def test_renew_leases_reports_each_listed_epoch(tiq: TicketIQ, aconn) -> None:
    """A run listed twice, at its epoch and at an older one: only the current one is held.
    Listed alone, a stale epoch renews nothing, even when the same holder owns the run now."""
    run = await start(tiq, holder="p1")
    result = await tiq.processes.renew_leases("p1", [(run.run_id, 1), (run.run_id, 7)], 30)
    assert sorted((r.epoch, r.held) for r in result) == [(1, True), (7, False)]

    await tiq.release_run(run.run_id, 1)
    again = await tiq.adopt_run("p1", 30, run.run_id)
    assert again is not None and again.epoch == 3
    fp = await fingerprint(aconn)
    stale = await tiq.processes.renew_leases("p1", [(run.run_id, 1)], 600)
    assert [(r.epoch, r.held, r.lease_expires_at) for r in stale] == [(1, False, None)]
    assert await fingerprint(aconn) == fp


async def test_sweep_lapsed_and_adopt_run(tiq: TicketIQ, aconn, db_url: str) -> None:
    await allow_fake_clock(aconn)
    run = await start(tiq, holder="p1", ttl=30, input={"q": 1}, meta={"m": 2})
    b = body(call("w1", "write", step_key="sk-1"), call("r1", "read"))
    await tiq.write_checkpoint(run.run_id, 1, 1, b, "seal-1", "key-1")
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")

    # nothing lapsed yet by the real clock
    assert await tiq.processes.sweep_lapsed("leader") == []
    assert await tiq.adopt_run("p2", 30) is None

    listener = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await listener.execute("listen ticketiq_resume")
        later = run.lease_expires_at + timedelta(seconds=1)
        await set_fake_now(aconn, later)
        swept = await tiq.processes.sweep_lapsed("leader", conn=aconn)
        assert len(swept) == 1
        assert_fields_typed(swept[0], models.SweptRun)
        assert swept[0] == models.SweptRun(
            run.run_id, 2, 1, "claimed", "p1", run.lease_expires_at
        )
        notes = [n async for n in listener.notifies(timeout=5, stop_after=1)]
        assert [(n.channel, n.payload) for n in notes] == [("ticketiq_resume", str(run.run_id))]
    finally:
        await listener.close()
    assert await tiq.processes.sweep_lapsed("leader", conn=aconn) == []  # claimed once
    assert await rows(
        aconn,
        "select status, epoch, loss_count, lease_holder, updated_at from ticketiq.runs"
        " where run_id = %s",
        (run.run_id,),
    ) == [("claimed", 2, 1, None, later)]
    assert await rows(
        aconn,
        "select epoch, actor, detail->>'lapsed_holder', (detail->>'loss_count')::int"
        " from ticketiq.audit where run_id = %s and event = 'agent.run.lease_lapsed'",
        (run.run_id,),
    ) == [(2, "leader", "p1", 1)]

    # another run id: nothing to adopt
    assert await tiq.adopt_run("p2", 30, uuid.uuid4()) is None
    adopted = await tiq.adopt_run("p2", 60, run.run_id, conn=aconn)
    assert adopted is not None
    assert_fields_typed(adopted, models.AdoptedRun)
    assert (adopted.run_id, adopted.epoch, adopted.loss_count, adopted.last_step) == (
        run.run_id,
        3,
        1,
        1,
    )
    assert (adopted.owner, adopted.run_as, adopted.channel, adopted.entry_point) == (
        "alice@example.com",
        "agent:helpdesk",
        "teams",
        "helpdesk.triage",
    )
    assert adopted.may_wait is False and adopted.correlation_id == str(run.run_id)
    assert adopted.input == {"q": 1} and adopted.meta == {"m": 2}
    assert adopted.stop_requested is False
    assert adopted.checkpoint_body == b
    assert (adopted.checkpoint_seal, adopted.checkpoint_seal_key_id) == ("seal-1", "key-1")
    assert [(c["call_id"], c["state"], c["marked_classification"], c["step_key"]) for c in
            adopted.calls] == [("w1", "in_doubt", "write", "sk-1")]  # the read: no row
    assert adopted.answer_body is None and adopted.answer_seal is None
    assert await rows(
        aconn,
        "select status, epoch, lease_holder, lease_expires_at from ticketiq.runs"
        " where run_id = %s",
        (run.run_id,),
    ) == [("running", 3, "p2", adopted.lease_expires_at)]
    assert adopted.lease_expires_at == later + timedelta(seconds=60)
    assert await tiq.adopt_run("p3", 30) is None  # adopted once

    # a run lost more often than max_losses is failed, with its reason
    doomed = await start(tiq, holder="p1", ttl=5)
    await set_fake_now(aconn, doomed.lease_expires_at + timedelta(seconds=1))
    failed = await tiq.processes.sweep_lapsed("leader", max_losses=0, conn=aconn)
    assert [(f.run_id, f.status, f.loss_count, f.epoch) for f in failed] == [
        (doomed.run_id, "failed", 1, 2)
    ]
    reason = await scalar(
        aconn, "select failure_reason from ticketiq.runs where run_id = %s", (doomed.run_id,)
    )
    assert reason.startswith("lost 1 times")
    assert await scalar(
        aconn,
        "select count(*) from ticketiq.transcript_entries where run_id = %s and kind = 'failed'",
        (doomed.run_id,),
    ) == 1


async def test_release_run(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq, holder="p1")
    await tiq.write_checkpoint(
        run.run_id, 1, 1, body(call("w1"), call("w2")), "s1", "k"
    )
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w2")
    released = await tiq.release_run(run.run_id, 1, "sigterm", {"w1": {"ok": True}})
    assert released == models.Released(run.run_id, 2)
    assert await rows(
        aconn,
        "select status, epoch, loss_count, lease_holder from ticketiq.runs where run_id = %s",
        (run.run_id,),
    ) == [("claimed", 2, 0, None)]
    assert await rows(
        aconn,
        "select call_id, state, outcome from ticketiq.calls where run_id = %s order by ordinal",
        (run.run_id,),
    ) == [("w1", "done", {"ok": True}), ("w2", "in_doubt", None)]
    adopted = await tiq.adopt_run("p2", 30)
    assert adopted is not None and adopted.run_id == run.run_id and adopted.epoch == 3
    assert adopted.loss_count == 0


async def test_seal_answer_and_hand_on(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq, holder="p1")
    await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w1")), "s1", "k")
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    answer = {"text": "Your printer is fixed."}
    sealed = await tiq.seal_answer(run.run_id, 1, 2, answer, "aseal", "k2", 3600)
    assert_fields_typed(sealed, models.SealedAnswer)
    assert (sealed.run_id, sealed.step, sealed.replayed) == (run.run_id, 2, False)
    assert sealed.retain_until == sealed.sealed_at + timedelta(hours=1)
    # the previous step's calls are closed, the run keeps its lease
    assert await scalar(
        aconn, "select state from ticketiq.calls where run_id = %s", (run.run_id,)
    ) == "done"
    assert await rows(
        aconn, "select status, last_step from ticketiq.runs where run_id = %s", (run.run_id,)
    ) == [("running", 2)]

    replay = await tiq.seal_answer(run.run_id, 1, 2, answer, "aseal", "k2", 3600)
    assert replay.replayed is True and replay.sealed_at == sealed.sealed_at
    stored = await tiq.get_answer(run.run_id)
    assert_fields_typed(stored, models.AnswerView)
    assert stored == models.AnswerView(run.run_id, 2, 1, answer, "aseal", "k2", sealed.sealed_at,
                                       sealed.retain_until, None, None)

    handed = await tiq.hand_on_answer(run.run_id, 1)
    assert_fields_typed(handed, models.HandedOn)
    assert (handed.run_id, handed.step, handed.body, handed.seal, handed.seal_key_id) == (
        run.run_id,
        2,
        answer,
        "aseal",
        "k2",
    )
    assert await rows(
        aconn,
        "select r.status, r.lease_holder, r.finished_at is not null, a.handed_on_at,"
        " a.handed_on_epoch from ticketiq.runs as r join ticketiq.answers as a using (run_id)"
        " where run_id = %s",
        (run.run_id,),
    ) == [("completed", None, True, handed.handed_on_at, 1)]
    assert await rows(
        aconn,
        "select kind, body from ticketiq.transcript_entries where run_id = %s",
        (run.run_id,),
    ) == [("answer", {"step": 2, "answer": answer})]

    stored = await tiq.get_answer(run.run_id)
    assert stored is not None
    assert (stored.handed_on_at, stored.handed_on_epoch) == (handed.handed_on_at, 1)
    without = await start(tiq, holder="p1")
    assert await tiq.get_answer(without.run_id) is None

    # handed on at most once
    fp = await fingerprint(aconn)
    with pytest.raises(RunNotRunning):
        await tiq.hand_on_answer(run.run_id, 1)
    assert await fingerprint(aconn) == fp


async def test_fail_run_and_stop_run(tiq: TicketIQ, aconn) -> None:
    a = await start(tiq)
    failed = await tiq.fail_run(a.run_id, 1, "seal did not verify", "agent.run.seal_failed")
    assert_fields_typed(failed, models.RunEnded)
    assert (failed.run_id, failed.status) == (a.run_id, "failed")
    assert await rows(
        aconn,
        "select status, failure_reason, lease_holder, finished_at from ticketiq.runs"
        " where run_id = %s",
        (a.run_id,),
    ) == [("failed", "seal did not verify", None, failed.finished_at)]
    assert await scalar(
        aconn,
        "select count(*) from ticketiq.audit where run_id = %s and event = 'agent.run.seal_failed'",
        (a.run_id,),
    ) == 1

    b = await start(tiq)
    stopped = await tiq.stop_run(b.run_id, 1)
    assert (stopped.run_id, stopped.status) == (b.run_id, "stopped")
    assert await rows(
        aconn, "select status, failure_reason from ticketiq.runs where run_id = %s", (b.run_id,)
    ) == [("stopped", "stop requested")]


async def test_request_stop(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq)
    req = await tiq.request_stop(run.run_id, "bob", "wrong ticket")
    assert_fields_typed(req, models.StopRequest)
    assert (req.run_id, req.status) == (run.run_id, "running")
    again = await tiq.request_stop(run.run_id, "carol")
    assert again.stop_requested_at == req.stop_requested_at  # the first request is kept
    assert await scalar(
        aconn, "select stop_requested_by from ticketiq.runs where run_id = %s", (run.run_id,)
    ) == "bob"
    written = await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w1")), "s", "k")
    assert written.stop_requested is True
    mark = await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    assert mark.stop_requested is True
    stopped = await tiq.stop_run(run.run_id, 1)
    assert stopped.status == "stopped"
    assert await scalar(
        aconn,
        "select detail->>'requested_by' from ticketiq.audit"
        " where run_id = %s and event = 'agent.run.stopped'",
        (run.run_id,),
    ) == "bob"


async def test_record_resume(tiq: TicketIQ, aconn) -> None:
    """After a loss: one agent.run.crash_resumed row (I14) with step, loss count and how each
    call was settled; after a graceful release: agent.run.resumed instead."""
    await allow_fake_clock(aconn)
    run = await start(tiq, holder="p1")
    await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w1"), call("r1", "read")), "s", "k")
    await tiq.mark_in_doubt(run.run_id, 1, 1, "w1")
    await set_fake_now(aconn, run.lease_expires_at + timedelta(seconds=1))
    assert len(await tiq.processes.sweep_lapsed("leader", conn=aconn)) == 1
    adopted = await tiq.adopt_run("p2", 30, conn=aconn)
    assert adopted is not None and adopted.epoch == 3
    settlements = [
        {"call_id": "w1", "settlement": "unknown"},
        {"call_id": "r1", "settlement": "redone", "outcome": {"rows": 3}},
    ]
    audited = await tiq.record_resume(run.run_id, 3, settlements, conn=aconn)
    assert_fields_typed(audited, models.ResumeAudited)
    assert (audited.run_id, audited.step, audited.loss_count) == (run.run_id, 1, 1)
    assert await rows(
        aconn,
        "select audit_id, epoch, step, loss_count, settlements from ticketiq.resume_audit"
        " where run_id = %s",
        (run.run_id,),
    ) == [(audited.audit_id, 3, 1, 1, settlements)]
    assert await rows(
        aconn,
        "select call_id, state, settlement, outcome, finished_epoch from ticketiq.calls"
        " where run_id = %s order by ordinal",
        (run.run_id,),
    ) == [("w1", "settled", "unknown", None, 3)]  # the read's settlement: in the audit only
    assert await scalar(
        aconn,
        "select count(*) from ticketiq.transcript_entries where run_id = %s and kind = 'resumed'",
        (run.run_id,),
    ) == 1

    released = await start(tiq, holder="p1")
    await tiq.release_run(released.run_id, 1)
    again = await tiq.adopt_run("p2", 30, released.run_id)
    assert again is not None
    resumed = await tiq.record_resume(released.run_id, 2 + 1)
    assert resumed.loss_count == 0
    assert await rows(
        aconn,
        "select event, epoch, detail->>'reason' from ticketiq.audit where audit_id = %s",
        (resumed.audit_id,),
    ) == [("agent.run.resumed", 3, "released")]


async def test_register_process(tiq: TicketIQ, aconn) -> None:
    reg = await tiq.processes.register_process("proc-9", "host-a", 4242, conn=aconn)
    assert_fields_typed(reg, models.ProcessRegistration)
    assert reg.process_id == "proc-9" and reg.backend_pid == aconn.info.backend_pid
    again = await tiq.processes.register_process("proc-9", "host-b", 4343)
    assert again.started_at == reg.started_at and again.backend_pid != aconn.info.backend_pid
    assert await rows(
        aconn, "select host, os_pid, stopped_at from ticketiq.processes"
    ) == [("host-b", 4343, None)]


async def test_leader_lease(tiq: TicketIQ, aconn) -> None:
    mine = await tiq.processes.claim_leader("sweep", "p1", 30)
    assert_fields_typed(mine, models.LeaderLease)
    assert (mine.is_leader, mine.holder, mine.epoch) == (True, "p1", 1)
    theirs = await tiq.processes.claim_leader("sweep", "p2", 30)
    assert (theirs.is_leader, theirs.holder, theirs.epoch) == (False, "p1", 1)
    assert await tiq.processes.renew_leader("sweep", "p1", 1, 30) is True
    assert await tiq.processes.renew_leader("sweep", "p1", 2, 30) is False
    assert await tiq.processes.renew_leader("sweep", "p2", 1, 30) is False
    assert await tiq.processes.resign_leader("sweep", "p2") is False
    assert await tiq.processes.resign_leader("sweep", "p1") is True
    assert await tiq.processes.resign_leader("sweep", "p1") is False  # already resigned
    assert await tiq.processes.renew_leader("sweep", "p1", 1, 30) is False  # resigned means gone
    # the epoch grows across a resignation: the next leader's claim raises it
    taken = await tiq.processes.claim_leader("sweep", "p2", 30)
    assert (taken.is_leader, taken.holder, taken.epoch) == (True, "p2", 2)
    # a lapsed leader lease is taken over with the epoch raised
    await allow_fake_clock(aconn)
    await set_fake_now(aconn, taken.expires_at + timedelta(seconds=1))
    over = await tiq.processes.claim_leader("sweep", "p3", 30, conn=aconn)
    assert (over.is_leader, over.holder, over.epoch) == (True, "p3", 3)
    assert await tiq.processes.renew_leader("sweep", "p2", 2, 30) is False


async def test_purge_answers(tiq: TicketIQ, aconn) -> None:
    await allow_fake_clock(aconn)
    run = await start(tiq)
    sealed = await tiq.seal_answer(run.run_id, 1, 1, {"a": 1}, "s", "k", 60)
    assert await tiq.processes.purge_answers() == 0  # kept until retain_until and run not finished
    await tiq.hand_on_answer(run.run_id, 1)
    assert await tiq.processes.purge_answers() == 0  # still retained
    await set_fake_now(aconn, sealed.retain_until + timedelta(seconds=1))
    assert await tiq.processes.purge_answers(10, conn=aconn) == 1
    assert await scalar(aconn, "select count(*) from ticketiq.answers") == 0


async def test_approvals(tiq: TicketIQ, aconn, db_url: str) -> None:
    run = await start(tiq)
    await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w"), call("r", "read")), "s", "k")
    listener = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await listener.execute("listen ticketiq_approval")
        req = await tiq.waits.request_approval(run.run_id, 1, 1, "w", {"title": "close ticket"})
        assert_fields_typed(req, models.Approval)
        assert (req.state, req.coalesced, req.decided_by) == ("waiting", False, None)
        notes = [n.payload async for n in listener.notifies(timeout=5, stop_after=1)]
        assert notes == [str(req.approval_id)]
        # filing again coalesces with the request already there: no second request
        fp = await fingerprint(aconn)
        again = await tiq.waits.request_approval(run.run_id, 1, 1, "w", {"title": "other"})
        assert (again.approval_id, again.state, again.coalesced) == (
            req.approval_id, "waiting", True
        )
        assert await fingerprint(aconn) == fp
        got = await tiq.waits.get_approval(req.approval_id)
        assert (got.approval_id, got.run_id, got.state) == (req.approval_id, run.run_id, "waiting")

        decided = await tiq.waits.decide_approval(req.approval_id, True, "bob", "fine")
        assert (decided.approval_id, decided.run_id, decided.state, decided.decided_by) == (
            req.approval_id, run.run_id, "approved", "bob"
        )
        notes = [n.payload async for n in listener.notifies(timeout=5, stop_after=1)]
        assert notes == [str(req.approval_id)]
    finally:
        await listener.close()
    same = await tiq.waits.decide_approval(req.approval_id, True, "carol")
    assert (same.state, same.decided_by, same.decided_at) == (
        "approved", "bob", decided.decided_at
    )
    read = await tiq.waits.get_approval(req.approval_id)
    assert (read.state, read.decided_by, read.reason) == ("approved", "bob", "fine")
    # a resumed run routing the call again reads the decision instead of asking again
    coalesced = await tiq.waits.request_approval(run.run_id, 1, 1, "w")
    assert (coalesced.approval_id, coalesced.state, coalesced.coalesced) == (
        req.approval_id, "approved", True
    )
    assert coalesced.decided_by == "bob"
    assert await rows(
        aconn,
        "select call_id, approval_id from ticketiq.calls where run_id = %s order by ordinal",
        (run.run_id,),
    ) == [("w", req.approval_id)]
    assert await rows(
        aconn,
        "select state, summary, tool from ticketiq.approval_requests",
    ) == [("approved", {"title": "close ticket"}, "crm.update")]
    await tiq.release_run(run.run_id, 1)
    adopted = await tiq.adopt_run("p2", 30)
    assert adopted is not None
    assert [(c["call_id"], c["approval_id"]) for c in adopted.calls] == [
        ("w", str(req.approval_id))
    ]


async def test_delegation_status_and_take_over_child(tiq: TicketIQ, aconn) -> None:
    await allow_fake_clock(aconn)
    parent = await start(tiq, holder="p1", ttl=DAY)
    assert await tiq.waits.delegation_status("deleg-1") is None
    child = await start(
        tiq, holder="c1", ttl=30, parent_run_id=parent.run_id, idempotency_key="deleg-1"
    )
    status = await tiq.waits.delegation_status("deleg-1")
    assert_fields_typed(status, models.ChildRun)
    assert status == models.ChildRun(
        child.run_id, parent.run_id, "running", 1, False, None, None, None
    )
    # asking again with the same delegation key finds the same child
    again = await start(
        tiq, holder="c2", ttl=30, parent_run_id=parent.run_id, idempotency_key="deleg-1"
    )
    assert (again.run_id, again.created, again.epoch) == (child.run_id, False, None)

    # alive with its holder: the parent takes nothing over
    fp = await fingerprint(aconn)
    assert await tiq.take_over_child(parent.run_id, 1, child.run_id, "p1", 30) is None
    assert await fingerprint(aconn) == fp

    lapsed_at = child.lease_expires_at + timedelta(seconds=1)
    await set_fake_now(aconn, lapsed_at)
    assert (await tiq.waits.delegation_status("deleg-1", conn=aconn)).lease_lapsed is True
    taken = await tiq.take_over_child(parent.run_id, 1, child.run_id, "p1", 60, conn=aconn)
    assert taken is not None
    assert_fields_typed(taken, models.AdoptedRun)
    assert (taken.run_id, taken.epoch, taken.loss_count) == (child.run_id, 3, 1)
    assert taken.lease_expires_at == lapsed_at + timedelta(seconds=60)
    assert await lease_lapsed_epochs(aconn, child.run_id) == [2]  # claimed once, like a sweep
    assert await rows(
        aconn,
        "select status, epoch, loss_count, lease_holder from ticketiq.runs where run_id = %s",
        (child.run_id,),
    ) == [("running", 3, 1, "p1")]
    # once: a second take-over finds the child alive with its new holder
    assert await tiq.take_over_child(parent.run_id, 1, child.run_id, "p1", 60, conn=aconn) is None
    assert await tiq.processes.sweep_lapsed("s", conn=aconn) == []

    # the child answers; the parent reads the answer by the delegation key
    await tiq.seal_answer(child.run_id, 3, 1, {"found": 3}, "a", "k", 60, conn=aconn)
    done = await tiq.waits.delegation_status("deleg-1", conn=aconn)
    assert (done.answer, done.answer_step, done.lease_lapsed) == ({"found": 3}, 1, False)


async def lease_lapsed_epochs(conn: psycopg.AsyncConnection, run_id: uuid.UUID) -> list[int]:
    return [
        e for (e,) in await rows(
            conn,
            "select epoch from ticketiq.audit where run_id = %s"
            " and event = 'agent.run.lease_lapsed' order by audit_id",
            (run_id,),
        )
    ]


async def test_a_child_failed_by_take_over_ends_as_a_sweep_ends_it(
    tiq: TicketIQ, aconn, db_url: str
) -> None:
    """take_over_child claims a lapsed child "exactly as a sweep would" (I4): lost more than
    max_losses times, the child is failed with its reason, audited agent.run.failed, its
    transcript told that reason, and ticketiq_run_finished NOTIFYed.  Two children lapse
    together (max_losses 0: the first loss is the last); the sweep fails one, the parent's
    take-over the other; both must end the same way."""
    await allow_fake_clock(aconn)
    t = datetime(2034, 1, 1, tzinfo=UTC)
    await set_fake_now(aconn, t)
    parent = await start(tiq, holder="p1", ttl=DAY, conn=aconn)
    by_sweep, by_parent = [
        await start(
            tiq, holder="c1", ttl=10, conn=aconn, parent_run_id=parent.run_id,
            idempotency_key=key,
        )
        for key in ("deleg-s", "deleg-t")
    ]
    await aconn.execute(
        "update ticketiq.runs set lease_expires_at = lease_expires_at + interval '1 hour'"
        " where run_id = %s",
        (by_parent.run_id,),
    )
    await set_fake_now(aconn, t + timedelta(seconds=11))
    listener = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await listener.execute("listen ticketiq_run_finished")
        swept = await tiq.processes.sweep_lapsed("leader", max_losses=0, conn=aconn)
        assert [(s.run_id, s.status) for s in swept] == [(by_sweep.run_id, "failed")]
        await set_fake_now(aconn, t + timedelta(hours=1, seconds=11))
        got = await tiq.take_over_child(
            parent.run_id, 1, by_parent.run_id, "p1", 30, max_losses=0, conn=aconn
        )
        assert got is None
        finished = [n.payload async for n in listener.notifies(timeout=2, stop_after=2)]
    finally:
        await listener.close()

    async def ending(run_id: uuid.UUID) -> tuple:
        status, epoch, loss_count, reason = (await rows(
            aconn,
            "select status, epoch, loss_count, failure_reason from ticketiq.runs"
            " where run_id = %s",
            (run_id,),
        ))[0]
        events = [
            e for (e,) in await rows(
                aconn,
                "select event from ticketiq.audit where run_id = %s"
                " and event <> 'agent.run.started' order by audit_id",
                (run_id,),
            )
        ]
        told = await scalar(
            aconn,
            "select body->>'reason' from ticketiq.transcript_entries where run_id = %s"
            " and kind = 'failed'",
            (run_id,),
        )
        return (status, epoch, loss_count, reason.split(":")[0], events, told == reason,
                str(run_id) in finished)

    expected = (
        "failed", 2, 1, "lost 1 times (more than 0)",
        ["agent.run.lease_lapsed", "agent.run.failed"], True, True,
    )
    assert await ending(by_sweep.run_id) == expected
    actual = await ending(by_parent.run_id)
    assert actual == expected, actual


async def test_answers_table_is_write_once(tiq: TicketIQ, aconn) -> None:
    """Even the table owner cannot change a sealed answer or hand it on twice (TQ005)."""
    run = await start(tiq)
    await tiq.seal_answer(run.run_id, 1, 1, {"a": 1}, "s", "k", 3600)
    fp = await fingerprint(aconn)
    for stmt in (
        "update ticketiq.answers set body = '{\"a\": 2}' where run_id = %s",
        "delete from ticketiq.answers where run_id = %s",
    ):
        with pytest.raises(psycopg.Error) as info:
            await aconn.execute(stmt, (run.run_id,))
        assert info.value.sqlstate == "TQ005"
    await tiq.hand_on_answer(run.run_id, 1)
    with pytest.raises(psycopg.Error) as info:
        await aconn.execute(
            "update ticketiq.answers set handed_on_at = now(), handed_on_epoch = 9"
            " where run_id = %s",
            (run.run_id,),
        )
    assert info.value.sqlstate == "TQ005"
    assert (await fingerprint(aconn))["answers"] != fp["answers"]  # only the hand-on changed it


# -- every documented SQLSTATE as its typed exception, changing nothing (I15) ----------------


@dataclass
class World:
    url: str
    live: uuid.UUID  # running, epoch 1, step 1: w (write), r (read), m (in doubt), d (done)
    lapsed: uuid.UUID  # running at epoch 1, lease lapsed long ago (by the real clock)
    taken: uuid.UUID  # released and adopted: epoch 3, the writer still at 1 is fenced
    claimed: uuid.UUID  # released, not adopted: claimed at epoch 2
    failed: uuid.UUID  # failed at epoch 1
    sealed: uuid.UUID  # running at epoch 1 with a sealed answer (step 1)
    done: uuid.UUID  # answer handed on: completed at epoch 1
    resumed: uuid.UUID  # adopted at epoch 3 and its resume already audited
    waiting: uuid.UUID  # approval request of live's call w, waiting
    approved: uuid.UUID  # approval request of live's call m, approved
    child: uuid.UUID  # child run of live (delegation key "deleg-w")


def _one(conn: psycopg.Connection, query: str, *params: Any) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def _start_sync(conn: psycopg.Connection, ttl: float = DAY) -> uuid.UUID:
    return _one(
        conn,
        "select run_id from ticketiq.start_run('p1', 'o', 'ra', 'ch', 'ep', false, %s)",
        ttl,
    )


def _checkpoint_sync(conn: psycopg.Connection, run: uuid.UUID, b: dict, seal: str) -> None:
    conn.execute(
        "select * from ticketiq.write_checkpoint(%s, 1, 1, %s, %s, 'k1')", (run, Jsonb(b), seal)
    )


@pytest.fixture(scope="module")
def world(pg_server_url: str) -> Iterator[World]:
    with temporary_database(pg_server_url) as url, psycopg.connect(url, autocommit=True) as c:
        install_sync(c)
        c.execute("update ticketiq.config set fake_clock_allowed = true")

        live = _start_sync(c)
        _checkpoint_sync(
            c,
            live,
            body(call("w"), call("r", "read"), call("m"), call("d")),
            "seal-1",
        )
        c.execute("select * from ticketiq.mark_in_doubt(%s, 1, 1, 'm')", (live,))
        c.execute("select * from ticketiq.mark_in_doubt(%s, 1, 1, 'd')", (live,))
        c.execute(
            "select * from ticketiq.record_outcome(%s, 1, 1, 'd', '{\"ok\": 1}')", (live,)
        )

        c.execute("set ticketiq.fake_now = '2000-01-01T00:00:00Z'")
        lapsed = _start_sync(c, 30)
        c.execute("reset ticketiq.fake_now")

        taken = _start_sync(c)
        _checkpoint_sync(c, taken, body(call("w")), "seal-t")
        c.execute("select * from ticketiq.release_run(%s, 1)", (taken,))
        c.execute("select * from ticketiq.adopt_run('p2', %s, %s)", (DAY, taken))

        claimed = _start_sync(c)
        c.execute("select * from ticketiq.release_run(%s, 1)", (claimed,))

        failed = _start_sync(c)
        c.execute("select * from ticketiq.fail_run(%s, 1, 'broken')", (failed,))

        sealed = _start_sync(c)
        c.execute(
            "select * from ticketiq.seal_answer(%s, 1, 1, '{\"a\": 1}', 'aseal', 'k1', %s)",
            (sealed, DAY),
        )

        done = _start_sync(c)
        c.execute(
            "select * from ticketiq.seal_answer(%s, 1, 1, '{\"a\": 2}', 'aseal', 'k1', %s)",
            (done, DAY),
        )
        c.execute("select * from ticketiq.hand_on_answer(%s, 1)", (done,))

        resumed = _start_sync(c)
        _checkpoint_sync(c, resumed, body(call("w")), "seal-r")
        c.execute("select * from ticketiq.mark_in_doubt(%s, 1, 1, 'w')", (resumed,))
        c.execute("select * from ticketiq.release_run(%s, 1)", (resumed,))
        c.execute("select * from ticketiq.adopt_run('p2', %s, %s)", (DAY, resumed))
        c.execute(
            "select * from ticketiq.record_resume(%s, 3,"
            " '[{\"call_id\": \"w\", \"settlement\": \"unknown\"}]')",
            (resumed,),
        )
        waiting = _one(
            c, "select approval_id from ticketiq.request_approval(%s, 1, 1, 'w')", live
        )
        approved = _one(
            c, "select approval_id from ticketiq.request_approval(%s, 1, 1, 'm')", live
        )
        c.execute("select * from ticketiq.decide_approval(%s, true, 'bob')", (approved,))
        child = _one(
            c,
            "select run_id from ticketiq.start_run('c1', 'o', 'ra', 'ch', 'ep', false, %s,"
            " p_idempotency_key => 'deleg-w', p_parent_run_id => %s)",
            DAY,
            live,
        )
        statuses = dict(c.execute("select run_id, status from ticketiq.runs").fetchall())
        assert statuses == {
            live: "running",
            lapsed: "running",
            taken: "running",
            claimed: "claimed",
            failed: "failed",
            sealed: "running",
            done: "completed",
            resumed: "running",
            child: "running",
        }
        yield World(
            url, live, lapsed, taken, claimed, failed, sealed, done, resumed, waiting, approved,
            child,
        )


Case = Callable[[TicketIQ, World], Awaitable[Any]]
NOWHERE = uuid.UUID("00000000-0000-4000-8000-000000000000")
GOOD = body(call("x"))
CASES: list[tuple[str, type[errors.TicketIQError], Case]] = [
    # TQ001 unknown run
    ("checkpoint-unknown", UnknownRun,
     lambda t, w: t.write_checkpoint(NOWHERE, 1, 1, GOOD, "s", "k")),
    ("mark-unknown", UnknownRun, lambda t, w: t.mark_in_doubt(NOWHERE, 1, 1, "w")),
    ("outcome-unknown", UnknownRun, lambda t, w: t.record_outcome(NOWHERE, 1, 1, "w", {})),
    ("seal-unknown", UnknownRun, lambda t, w: t.seal_answer(NOWHERE, 1, 1, {}, "s", "k", 60)),
    ("hand-on-unknown", UnknownRun, lambda t, w: t.hand_on_answer(NOWHERE, 1)),
    ("answer-unknown", UnknownRun, lambda t, w: t.get_answer(NOWHERE)),
    ("fail-unknown", UnknownRun, lambda t, w: t.fail_run(NOWHERE, 1, "why")),
    ("stop-unknown", UnknownRun, lambda t, w: t.stop_run(NOWHERE, 1)),
    ("release-unknown", UnknownRun, lambda t, w: t.release_run(NOWHERE, 1)),
    ("resume-unknown", UnknownRun, lambda t, w: t.record_resume(NOWHERE, 1)),
    ("request-stop-unknown", UnknownRun, lambda t, w: t.request_stop(NOWHERE, "bob")),
    ("start-unknown-parent", UnknownRun,
     lambda t, w: start(t, parent_run_id=NOWHERE, idempotency_key="deleg-x")),
    ("approval-unknown-run", UnknownRun, lambda t, w: t.waits.request_approval(NOWHERE, 1, 1, "w")),
    ("attempt-unknown", UnknownRun,
     lambda t, w: t.record_attempt(NOWHERE, 1, 1, "model", "HTTP 503")),
    ("audit-once-unknown", UnknownRun,
     lambda t, w: t.audit_once(NOWHERE, 1, "agent.run.x", "k", {})),
    ("take-over-unknown-parent", UnknownRun,
     lambda t, w: t.take_over_child(NOWHERE, 1, w.child, "p9", 30)),
    # TQ002 fenced: the run was taken over (epoch 3), the writer holds epoch 1
    ("checkpoint-fenced", Fenced,
     lambda t, w: t.write_checkpoint(w.taken, 1, 2, GOOD, "s", "k")),
    ("mark-fenced", Fenced, lambda t, w: t.mark_in_doubt(w.taken, 1, 1, "w")),
    ("outcome-fenced", Fenced, lambda t, w: t.record_outcome(w.taken, 1, 1, "w", {})),
    ("seal-fenced", Fenced, lambda t, w: t.seal_answer(w.taken, 1, 2, {}, "s", "k", 60)),
    ("hand-on-fenced", Fenced, lambda t, w: t.hand_on_answer(w.taken, 1)),
    ("fail-fenced", Fenced, lambda t, w: t.fail_run(w.taken, 1, "why")),
    ("stop-fenced", Fenced, lambda t, w: t.stop_run(w.taken, 1)),
    ("release-fenced", Fenced, lambda t, w: t.release_run(w.taken, 1)),
    ("resume-fenced", Fenced, lambda t, w: t.record_resume(w.taken, 2)),
    ("approval-fenced", Fenced, lambda t, w: t.waits.request_approval(w.taken, 1, 1, "w")),
    ("attempt-fenced", Fenced,
     lambda t, w: t.record_attempt(w.taken, 1, 1, "model", "HTTP 503")),
    ("audit-once-fenced", Fenced,
     lambda t, w: t.audit_once(w.taken, 1, "agent.run.x", "k", {})),
    ("take-over-by-fenced-parent", Fenced,
     lambda t, w: t.take_over_child(w.live, 2, w.child, "p9", 30)),
    ("checkpoint-future-epoch", Fenced,
     lambda t, w: t.write_checkpoint(w.live, 2, 2, GOOD, "s", "k")),
    ("checkpoint-fenced-on-claimed", Fenced,
     lambda t, w: t.write_checkpoint(w.claimed, 1, 1, GOOD, "s", "k")),
    # TQ003 the writer's lease lapsed by the database clock (not yet swept)
    ("checkpoint-lapsed", LeaseLapsed,
     lambda t, w: t.write_checkpoint(w.lapsed, 1, 1, GOOD, "s", "k")),
    ("mark-lapsed", LeaseLapsed, lambda t, w: t.mark_in_doubt(w.lapsed, 1, 1, "x")),
    ("outcome-lapsed", LeaseLapsed, lambda t, w: t.record_outcome(w.lapsed, 1, 1, "x", {})),
    ("seal-lapsed", LeaseLapsed, lambda t, w: t.seal_answer(w.lapsed, 1, 1, {}, "s", "k", 60)),
    ("hand-on-lapsed", LeaseLapsed, lambda t, w: t.hand_on_answer(w.lapsed, 1)),
    ("fail-lapsed", LeaseLapsed, lambda t, w: t.fail_run(w.lapsed, 1, "why")),
    ("stop-lapsed", LeaseLapsed, lambda t, w: t.stop_run(w.lapsed, 1)),
    ("release-lapsed", LeaseLapsed, lambda t, w: t.release_run(w.lapsed, 1)),
    ("resume-lapsed", LeaseLapsed, lambda t, w: t.record_resume(w.lapsed, 1)),
    ("approval-lapsed", LeaseLapsed, lambda t, w: t.waits.request_approval(w.lapsed, 1, 1, "x")),
    ("attempt-lapsed", LeaseLapsed,
     lambda t, w: t.record_attempt(w.lapsed, 1, 1, "model", "HTTP 503")),
    ("audit-once-lapsed", LeaseLapsed,
     lambda t, w: t.audit_once(w.lapsed, 1, "agent.run.x", "k", {})),
    # TQ004 invalid payload
    ("start-ttl-zero", InvalidPayload, lambda t, w: start(t, ttl=0)),
    ("start-ttl-negative", InvalidPayload, lambda t, w: start(t, ttl=-5)),
    ("start-ttl-nan", InvalidPayload, lambda t, w: start(t, ttl=math.nan)),
    ("start-ttl-inf", InvalidPayload, lambda t, w: start(t, ttl=math.inf)),
    ("start-empty-holder", InvalidPayload, lambda t, w: start(t, holder="")),
    ("start-empty-owner", InvalidPayload, lambda t, w: start(t, owner="")),
    ("start-meta-not-object", InvalidPayload, lambda t, w: start(t, meta=[1])),  # type: ignore[arg-type]
    ("start-empty-idempotency-key", InvalidPayload, lambda t, w: start(t, idempotency_key="")),
    ("checkpoint-body-null", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, None, "s", "k")),  # type: ignore[arg-type]
    ("checkpoint-body-array", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, [], "s", "k")),  # type: ignore[arg-type]
    ("checkpoint-no-conversation", InvalidPayload,
     lambda t, w: t.write_checkpoint(
         w.live, 1, 2, {k: v for k, v in GOOD.items() if k != "conversation"}, "s", "k")),
    ("checkpoint-calls-object", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, {**GOOD, "calls": {}}, "s", "k")),
    ("checkpoint-counters-array", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, {**GOOD, "counters": []}, "s", "k")),
    ("checkpoint-outcomes-array", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, {**GOOD, "outcomes": []}, "s", "k")),
    ("checkpoint-duplicate-call-id", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, body(call("a"), call("a")), "s", "k")),
    ("checkpoint-empty-call-id", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, body(call("")), "s", "k")),
    ("checkpoint-bad-classification", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, body(call("a", "maybe")), "s", "k")),
    ("checkpoint-arguments-string", InvalidPayload,
     lambda t, w: t.write_checkpoint(
         w.live, 1, 2, body({**call("a"), "arguments": "x"}), "s", "k")),
    ("checkpoint-step-key-number", InvalidPayload,
     lambda t, w: t.write_checkpoint(
         w.live, 1, 2, body({**call("a"), "step_key": 5}), "s", "k")),
    ("checkpoint-empty-seal", InvalidPayload,
     lambda t, w: t.write_checkpoint(w.live, 1, 2, GOOD, "", "k")),
    ("mark-a-read", InvalidPayload, lambda t, w: t.mark_in_doubt(w.live, 1, 1, "r")),
    ("mark-bad-classification", InvalidPayload,
     lambda t, w: t.mark_in_doubt(w.live, 1, 1, "w", "sometimes")),
    ("outcome-bad-settlement", InvalidPayload,
     lambda t, w: t.record_outcome(w.live, 1, 1, "w", {}, "guessed")),
    ("renew-ttl-zero", InvalidPayload, lambda t, w: t.processes.renew_leases("p1", [(w.live, 1)],
                                                                             0)),
    ("renew-empty-holder", InvalidPayload, lambda t, w: t.processes.renew_leases("", [(w.live,
                                                                                       1)], 30)),
    ("sweep-limit-zero", InvalidPayload, lambda t, w: t.processes.sweep_lapsed("s", limit=0)),
    ("sweep-negative-losses", InvalidPayload, lambda t, w: t.processes.sweep_lapsed("s",
                                                                                    max_losses=-1)),
    ("sweep-empty-sweeper", InvalidPayload, lambda t, w: t.processes.sweep_lapsed("")),
    ("adopt-empty-holder", InvalidPayload, lambda t, w: t.adopt_run("", 30)),
    ("adopt-ttl-zero", InvalidPayload, lambda t, w: t.adopt_run("p9", 0)),
    ("release-outcomes-array", InvalidPayload,
     lambda t, w: t.release_run(w.live, 1, "x", [1])),  # type: ignore[arg-type]
    ("seal-retain-zero", InvalidPayload,
     lambda t, w: t.seal_answer(w.live, 1, 2, {}, "s", "k", 0)),
    ("seal-body-null", InvalidPayload,
     lambda t, w: t.seal_answer(w.live, 1, 2, None, "s", "k", 60)),
    ("seal-empty-key-id", InvalidPayload,
     lambda t, w: t.seal_answer(w.live, 1, 2, {}, "s", "", 60)),
    ("fail-empty-reason", InvalidPayload, lambda t, w: t.fail_run(w.live, 1, "")),
    ("fail-bad-event", InvalidPayload, lambda t, w: t.fail_run(w.live, 1, "why", "run.failed")),
    ("request-stop-empty-actor", InvalidPayload, lambda t, w: t.request_stop(w.live, "")),
    ("resume-malformed", InvalidPayload,
     lambda t, w: t.record_resume(w.live, 1, [{"call_id": "w", "settlement": "lost"}])),
    ("resume-settlement-not-object", InvalidPayload,
     lambda t, w: t.record_resume(w.live, 1, ["w"])),  # type: ignore[list-item]
    ("register-empty", InvalidPayload, lambda t, w: t.processes.register_process("")),
    ("claim-leader-ttl", InvalidPayload, lambda t, w: t.processes.claim_leader("sweep", "p1", 0)),
    ("claim-leader-empty", InvalidPayload, lambda t, w: t.processes.claim_leader("", "p1", 30)),
    ("renew-leader-ttl", InvalidPayload, lambda t, w: t.processes.renew_leader("sweep", "p1", 1,
                                                                               -1)),
    ("purge-limit-zero", InvalidPayload, lambda t, w: t.processes.purge_answers(0)),
    ("approval-for-a-read", InvalidPayload, lambda t, w: t.waits.request_approval(w.live, 1, 1,
                                                                                  "r")),
    ("approval-summary-array", InvalidPayload,
     lambda t, w: t.waits.request_approval(w.live, 1, 1, "w", [1])),  # type: ignore[arg-type]
    ("decide-empty-actor", InvalidPayload, lambda t, w: t.waits.decide_approval(w.waiting, True,
                                                                                "")),
    ("delegation-empty-key", InvalidPayload, lambda t, w: t.waits.delegation_status("")),
    ("take-over-not-a-child", InvalidPayload,
     lambda t, w: t.take_over_child(w.live, 1, w.taken, "p9", 30)),
    ("take-over-ttl-zero", InvalidPayload,
     lambda t, w: t.take_over_child(w.live, 1, w.child, "p9", 0)),
    ("attempt-step-zero", InvalidPayload,
     lambda t, w: t.record_attempt(w.live, 1, 0, "model", "HTTP 503")),
    ("attempt-empty-target", InvalidPayload,
     lambda t, w: t.record_attempt(w.live, 1, 1, "", "HTTP 503")),
    ("attempt-long-target", InvalidPayload,
     lambda t, w: t.record_attempt(w.live, 1, 1, "t" * 257, "HTTP 503")),
    ("attempt-empty-error", InvalidPayload,
     lambda t, w: t.record_attempt(w.live, 1, 1, "model", "")),
    ("audit-once-bad-event", InvalidPayload,
     lambda t, w: t.audit_once(w.live, 1, "run.downgraded", "k", {})),
    ("audit-once-empty-key", InvalidPayload,
     lambda t, w: t.audit_once(w.live, 1, "agent.run.x", "", {})),
    ("audit-once-long-key", InvalidPayload,
     lambda t, w: t.audit_once(w.live, 1, "agent.run.x", "k" * 257, {})),
    ("audit-once-detail-array", InvalidPayload,
     lambda t, w: t.audit_once(w.live, 1, "agent.run.x", "k", [1])),  # type: ignore[arg-type]
    ("audit-once-detail-null", InvalidPayload,
     lambda t, w: t.audit_once(w.live, 1, "agent.run.x", "k", None)),  # type: ignore[arg-type]
    # TQ005 the answer is sealed
    ("checkpoint-after-answer", AnswerSealed,
     lambda t, w: t.write_checkpoint(w.sealed, 1, 2, GOOD, "s", "k")),
    ("mark-after-answer", AnswerSealed, lambda t, w: t.mark_in_doubt(w.sealed, 1, 1, "x")),
    ("second-answer", AnswerSealed,
     lambda t, w: t.seal_answer(w.sealed, 1, 2, {"a": 9}, "other", "k1", 60)),
    ("same-step-other-seal", AnswerSealed,
     lambda t, w: t.seal_answer(w.sealed, 1, 1, {"a": 1}, "other", "k1", 60)),
    # TQ006 the run is claimed, failed or completed (the epoch matches)
    ("checkpoint-claimed", RunNotRunning,
     lambda t, w: t.write_checkpoint(w.claimed, 2, 1, GOOD, "s", "k")),
    ("mark-claimed", RunNotRunning, lambda t, w: t.mark_in_doubt(w.claimed, 2, 1, "x")),
    ("checkpoint-failed", RunNotRunning,
     lambda t, w: t.write_checkpoint(w.failed, 1, 1, GOOD, "s", "k")),
    ("seal-failed", RunNotRunning, lambda t, w: t.seal_answer(w.failed, 1, 1, {}, "s", "k", 6)),
    ("hand-on-twice", RunNotRunning, lambda t, w: t.hand_on_answer(w.done, 1)),
    ("stop-completed", RunNotRunning, lambda t, w: t.stop_run(w.done, 1)),
    ("release-failed", RunNotRunning, lambda t, w: t.release_run(w.failed, 1)),
    ("request-stop-failed", RunNotRunning, lambda t, w: t.request_stop(w.failed, "bob")),
    ("request-stop-completed", RunNotRunning, lambda t, w: t.request_stop(w.done, "bob")),
    ("attempt-claimed", RunNotRunning,
     lambda t, w: t.record_attempt(w.claimed, 2, 1, "model", "HTTP 503")),
    ("audit-once-failed", RunNotRunning,
     lambda t, w: t.audit_once(w.failed, 1, "agent.run.x", "k", {})),
    # TQ007 step conflict
    ("checkpoint-skips-a-step", StepConflict,
     lambda t, w: t.write_checkpoint(w.live, 1, 3, GOOD, "s", "k")),
    ("checkpoint-step-zero", StepConflict,
     lambda t, w: t.write_checkpoint(w.live, 1, 0, GOOD, "s", "k")),
    ("checkpoint-rewrite-other-seal", StepConflict,
     lambda t, w: t.write_checkpoint(w.live, 1, 1, GOOD, "seal-other", "k1")),
    ("start-existing-run-id", StepConflict, lambda t, w: start(t, run_id=w.live)),
    ("hand-on-without-answer", StepConflict, lambda t, w: t.hand_on_answer(w.live, 1)),
    ("seal-wrong-step", StepConflict,
     lambda t, w: t.seal_answer(w.live, 1, 5, {}, "s", "k", 60)),
    ("mark-other-step", StepConflict, lambda t, w: t.mark_in_doubt(w.live, 1, 2, "w")),
    ("outcome-made-unmarked-write", StepConflict,
     lambda t, w: t.record_outcome(w.live, 1, 1, "w", {"id": 1})),
    ("outcome-second-different", StepConflict,
     lambda t, w: t.record_outcome(w.live, 1, 1, "d", {"ok": 2})),
    ("resume-settled-otherwise", StepConflict,
     lambda t, w: t.record_resume(w.resumed, 3, [{"call_id": "w", "settlement": "read_back"}])),
    ("decide-the-other-way", StepConflict,
     lambda t, w: t.waits.decide_approval(w.approved, False, "carol")),
    # TQ008 unknown call
    ("mark-unknown-call", UnknownCall, lambda t, w: t.mark_in_doubt(w.live, 1, 1, "nope")),
    ("outcome-unknown-call", UnknownCall,
     lambda t, w: t.record_outcome(w.live, 1, 1, "nope", {})),
    ("outcome-of-a-read", UnknownCall,
     lambda t, w: t.record_outcome(w.live, 1, 1, "r", {}, "redone")),
    ("approval-unknown-call", UnknownCall,
     lambda t, w: t.waits.request_approval(w.live, 1, 1, "nope")),
    # TQ009 unknown approval
    ("get-unknown-approval", UnknownApproval, lambda t, w: t.waits.get_approval(NOWHERE)),
    ("decide-unknown-approval", UnknownApproval,
     lambda t, w: t.waits.decide_approval(NOWHERE, True, "bob")),
    ("resume-unknown-call-after-a-good-one", UnknownCall,
     lambda t, w: t.record_resume(
         w.live, 1,
         [{"call_id": "w", "settlement": "unknown"}, {"call_id": "nope", "settlement": "unknown"}],
     )),
]


@pytest.mark.parametrize(
    ("expected", "case"), [(exc, fn) for _, exc, fn in CASES], ids=[name for name, _, _ in CASES]
)
async def test_documented_error_is_typed_and_changes_nothing(
    world: World, expected: type[errors.TicketIQError], case: Case
) -> None:
    async with await psycopg.AsyncConnection.connect(world.url, autocommit=True) as admin:
        tiq = await TicketIQ.connect(world.url, max_size=2)
        try:
            before = await fingerprint(admin)
            with pytest.raises(errors.TicketIQError) as info:
                await case(tiq, world)
            assert type(info.value) is expected
            assert info.value.sqlstate == expected.sqlstate
            assert isinstance(info.value.__cause__, psycopg.Error)
            assert info.value.__cause__.sqlstate == expected.sqlstate
            assert isinstance(info.value, NotOwner) == (
                expected in (Fenced, LeaseLapsed, RunNotRunning)
            )
            assert await fingerprint(admin) == before
        finally:
            await tiq.close()


def test_the_cases_cover_tq001_to_tq009() -> None:
    covered = {exc.sqlstate for _, exc, _ in CASES}
    assert covered == {f"TQ00{i}" for i in range(1, 10)}
    for code, cls in errors.BY_SQLSTATE.items():
        assert cls.sqlstate == code


async def test_every_documented_sqlstate_is_translated(tiq: TicketIQ, aconn) -> None:
    """Whatever raises it, each SQLSTATE of errors.BY_SQLSTATE reaches the caller as its typed
    exception (message and hint kept, the psycopg error as __cause__); any other error
    passes through untouched."""
    await aconn.execute(
        "create function ticketiq.tq_raise(p_code text) returns void language plpgsql as $$"
        " begin raise exception 'raised %', p_code using errcode = p_code, hint = 'a hint';"
        " end $$"
    )
    assert errors.BY_SQLSTATE
    for code, cls in errors.BY_SQLSTATE.items():
        with pytest.raises(errors.TicketIQError) as info:
            await tiq.rows("tq_raise", (code,), None)
        assert type(info.value) is cls, code
        assert info.value.sqlstate == code
        assert str(info.value) == f"raised {code} (a hint)"
        assert isinstance(info.value.__cause__, psycopg.Error)
    for code in ("TQ999", "22012"):
        with pytest.raises(psycopg.Error) as raw:
            await tiq.rows("tq_raise", (code,), None)
        assert raw.value.sqlstate == code and not isinstance(raw.value, errors.TicketIQError)


async def test_lapsed_lease_by_the_fake_clock_is_refused(tiq: TicketIQ, aconn) -> None:
    """I1/I11: the writer's own session clock decides; past the expiry nothing lands."""
    await allow_fake_clock(aconn)
    run = await start(tiq, ttl=30)
    await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w")), "s1", "k")
    await set_fake_now(aconn, run.lease_expires_at)  # expiry is exclusive
    fp = await fingerprint(aconn)
    with pytest.raises(LeaseLapsed):
        await tiq.mark_in_doubt(run.run_id, 1, 1, "w", conn=aconn)
    with pytest.raises(LeaseLapsed):
        await tiq.write_checkpoint(run.run_id, 1, 2, body(), "s2", "k", conn=aconn)
    assert (await tiq.processes.renew_leases("p1", [(run.run_id, 1)], 30,
                                             conn=aconn))[0].held is False
    assert await fingerprint(aconn) == fp
    await set_fake_now(aconn, run.lease_expires_at - timedelta(microseconds=1))
    assert (await tiq.mark_in_doubt(run.run_id, 1, 1, "w", conn=aconn)).state == "in_doubt"


# -- conn= joins the caller's transaction -------------------------------------------------


async def test_conn_joins_the_callers_transaction(tiq: TicketIQ, db_url: str, aconn) -> None:
    async with await psycopg.AsyncConnection.connect(db_url) as conn:  # not autocommit
        run = await start(tiq, conn=conn)
        ckpt = await tiq.write_checkpoint(run.run_id, 1, 1, body(), "s", "k", conn=conn)
        assert ckpt.step == 1
        # uncommitted: invisible to every other session, the driver's own pool included
        assert await scalar(aconn, "select count(*) from ticketiq.runs") == 0
        with pytest.raises(UnknownRun):
            await tiq.write_checkpoint(run.run_id, 1, 2, body(), "s2", "k")
        await conn.rollback()
        assert await scalar(aconn, "select count(*) from ticketiq.runs") == 0
        assert await scalar(aconn, "select count(*) from ticketiq.audit") == 0

        async with conn.transaction():
            kept = await start(tiq, conn=conn)
        assert await scalar(aconn, "select run_id from ticketiq.runs") == kept.run_id

    # an explicit transaction block on an autocommit connection
    with pytest.raises(ZeroDivisionError):
        async with aconn.transaction():
            await start(tiq, conn=aconn, idempotency_key="rolled-back")
            raise ZeroDivisionError
    assert await scalar(
        aconn, "select count(*) from ticketiq.runs where idempotency_key = 'rolled-back'"
    ) == 0

    # a typed error inside the caller's transaction leaves it to the caller to roll back
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        first = await start(tiq, conn=conn)
        with pytest.raises(UnknownRun):
            await tiq.hand_on_answer(uuid.uuid4(), 1, conn=conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        await conn.rollback()
    assert await scalar(
        aconn, "select count(*) from ticketiq.runs where run_id = %s", (first.run_id,)
    ) == 0


# -- statements: one per call --------------------------------------------------------------


class CountingCursor(psycopg.AsyncCursor):
    executed: list[str] = []

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        CountingCursor.executed.append(str(query))
        return await super().execute(query, params, **kwargs)


async def test_statements_counts_one_per_call(db_url: str, aconn) -> None:
    await allow_fake_clock(aconn)
    CountingCursor.executed = []
    conn = await psycopg.AsyncConnection.connect(
        db_url, autocommit=True, cursor_factory=CountingCursor
    )
    tiq = TicketIQ()  # no pool: every call goes through conn
    try:
        run = await start(tiq, conn=conn)
        rid = run.run_id
        assert tiq.statements == {"start_run": 1}
        assert len(CountingCursor.executed) == 1
        calls: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("schema_version", lambda: tiq.schema_version(conn=conn)),
            ("now", lambda: tiq.now(conn=conn)),
            ("register_process", lambda: tiq.processes.register_process("p1", conn=conn)),
            ("write_checkpoint",
             lambda: tiq.write_checkpoint(rid, 1, 1, body(call("w")), "s", "k", conn=conn)),
            ("mark_in_doubt", lambda: tiq.mark_in_doubt(rid, 1, 1, "w", conn=conn)),
            ("record_outcome", lambda: tiq.record_outcome(rid, 1, 1, "w", {}, conn=conn)),
            ("record_attempt", lambda: tiq.record_attempt(rid, 1, 1, "w", "x", conn=conn)),
            ("audit_once", lambda: tiq.audit_once(rid, 1, "agent.run.x", "w", {}, conn=conn)),
            ("renew_leases", lambda: tiq.processes.renew_leases("p1", [(rid, 1)], 30, conn=conn)),
            ("request_stop", lambda: tiq.request_stop(rid, "bob", conn=conn)),
            ("release_run", lambda: tiq.release_run(rid, 1, conn=conn)),
            ("adopt_run", lambda: tiq.adopt_run("p2", 30, conn=conn)),
            ("record_resume", lambda: tiq.record_resume(rid, 3, conn=conn)),
            ("seal_answer", lambda: tiq.seal_answer(rid, 3, 2, {}, "a", "k", 60, conn=conn)),
            ("hand_on_answer", lambda: tiq.hand_on_answer(rid, 3, conn=conn)),
            ("sweep_lapsed", lambda: tiq.processes.sweep_lapsed("s", conn=conn)),
            ("claim_leader", lambda: tiq.processes.claim_leader("l", "p1", 30, conn=conn)),
            ("renew_leader", lambda: tiq.processes.renew_leader("l", "p1", 1, 30, conn=conn)),
            ("resign_leader", lambda: tiq.processes.resign_leader("l", "p1", conn=conn)),
            ("purge_answers", lambda: tiq.processes.purge_answers(conn=conn)),
            ("fail_run", lambda: tiq.fail_run(uuid.uuid4(), 1, "x", conn=conn)),
            ("stop_run", lambda: tiq.stop_run(uuid.uuid4(), 1, conn=conn)),
        ]
        for name, fn in calls:
            before_total = sum(tiq.statements.values())
            sent_before = len(CountingCursor.executed)
            try:
                await fn()
            except errors.TicketIQError:
                assert name in ("fail_run", "stop_run")  # unknown runs: still one statement
            assert tiq.statements[name] == 1, name
            assert sum(tiq.statements.values()) == before_total + 1, name
            assert len(CountingCursor.executed) == sent_before + 1, name
            assert f"ticketiq.{name}(" in CountingCursor.executed[-1], name
        # check_schema is schema_version, one statement more
        assert await tiq.check_schema(conn=conn) == NEWEST
        assert tiq.statements["schema_version"] == 2
        assert len(CountingCursor.executed) == sum(tiq.statements.values())
    finally:
        await conn.close()


class CountingConnection(FailoverConnection):
    """A pooled connection whose every statement, the pool's own checks included, is counted."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursor_factory = CountingCursor


async def test_a_pooled_call_sends_one_statement_and_no_check(db_url: str, aconn) -> None:
    """The pool's check of a quiet connection is local: no round trip besides the call."""
    CountingCursor.executed = []
    tiq = await TicketIQ.connect(db_url, min_size=2, max_size=2,
                                 connection_class=CountingConnection)
    try:
        run = await start(tiq)
        CountingCursor.executed = []
        for step in range(1, 6):
            await tiq.write_checkpoint(run.run_id, run.epoch, step, body(), "s", "k")
            await tiq.get_run(run.run_id)
        assert len(CountingCursor.executed) == 10, CountingCursor.executed
        assert all("ticketiq." in q for q in CountingCursor.executed), CountingCursor.executed
    finally:
        await tiq.close()


async def test_pooled_connections_the_server_ended_are_replaced(db_url: str, aconn) -> None:
    """Every idle pooled session terminated at once: the next calls get live ones, no error."""
    tiq = await TicketIQ.connect(db_url, min_size=3, max_size=3)
    try:
        run = await start(tiq)
        await asyncio.sleep(0.2)  # the pool has opened all three
        cur = await aconn.execute(
            "select count(pg_terminate_backend(a.pid)) from pg_stat_activity as a"
            " where a.datname = current_database() and a.pid <> pg_backend_pid()"
        )
        ended = (await cur.fetchone())[0]  # type: ignore[index]
        assert ended >= 3
        await asyncio.sleep(0.2)  # the sessions' end reaches their sockets
        for step in range(1, 4):
            await tiq.write_checkpoint(run.run_id, run.epoch, step, body(), "s", "k")
        assert (await tiq.get_run(run.run_id)).last_step == 3
        assert sum(tiq.retries.values()) == 0  # each broken one was found before its call
    finally:
        await tiq.close()


# -- schema version ----------------------------------------------------------------------


async def test_connect_refuses_an_unknown_schema_version(db_url: str, aconn) -> None:
    client = await TicketIQ.connect(db_url)
    assert await client.check_schema() == NEWEST
    await client.close()

    await aconn.execute("insert into ticketiq.schema_migrations values (999, 'future')")
    with pytest.raises(SchemaVersionMismatch, match="999"):
        await TicketIQ.connect(db_url)
    # check_schema=False lets a tool connect anyway, and check_schema still refuses
    client = await TicketIQ.connect(db_url, check_schema=False)
    try:
        with pytest.raises(SchemaVersionMismatch):
            await client.check_schema()
    finally:
        await client.close()

    await aconn.execute("delete from ticketiq.schema_migrations")
    with pytest.raises(SchemaVersionMismatch):
        await TicketIQ.connect(db_url)


async def test_connect_closes_its_pool_when_it_refuses(db_url: str, aconn) -> None:
    await aconn.execute("insert into ticketiq.schema_migrations values (999, 'future')")
    dbname = aconn.info.dbname

    async def sessions() -> int:
        return await scalar(
            aconn,
            "select count(*) from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
            (dbname,),
        )

    for _ in range(3):
        with pytest.raises(SchemaVersionMismatch):
            await TicketIQ.connect(db_url, min_size=2)
    for _ in range(50):
        if await sessions() == 0:
            break
        await asyncio.sleep(0.05)
    assert await sessions() == 0


async def test_connect_refuses_a_database_without_the_schema(empty_db_url: str) -> None:
    with pytest.raises(SchemaVersionMismatch):
        await TicketIQ.connect(empty_db_url)


async def test_connect_refuses_a_schema_without_its_functions(empty_db_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(empty_db_url, autocommit=True) as conn:
        await conn.execute("create schema ticketiq")
    with pytest.raises(SchemaVersionMismatch):
        await TicketIQ.connect(empty_db_url)


# -- the app role ---------------------------------------------------------------------------


@pytest.fixture
def app_login(db_url: str, pg_server_url: str) -> Iterator[str]:
    """A uniquely named LOGIN role granted ticketiq_app; its conninfo to the test database."""
    role = f"tiq_app_{secrets.token_hex(6)}"
    password = secrets.token_hex(16)
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("create role {} login password {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("grant ticketiq_app to {}").format(sql.Identifier(role))
            )
        yield make_conninfo(db_url, user=role, password=password)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where usename = %s",
                (role,),
            )
            admin.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


async def test_app_role_runs_the_whole_flow(app_login: str, aconn) -> None:
    tiq = await TicketIQ.connect(app_login)
    try:
        assert await tiq.check_schema() == NEWEST
        await tiq.processes.register_process("app-1")
        run = await start(tiq, holder="app-1")
        await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w")), "s1", "k")
        mark = await tiq.mark_in_doubt(run.run_id, 1, 1, "w")
        assert mark.state == "in_doubt"
        renewed = await tiq.processes.renew_leases("app-1", [(run.run_id, 1)], 30)
        assert renewed[0].held is True
        sealed = await tiq.seal_answer(run.run_id, 1, 2, {"text": "done"}, "a1", "k", 60)
        assert sealed.step == 2
        handed = await tiq.hand_on_answer(run.run_id, 1)
        assert handed.body == {"text": "done"}
        # the typed errors reach the app role too
        with pytest.raises(RunNotRunning):
            await tiq.hand_on_answer(run.run_id, 1)
        assert await tiq.processes.sweep_lapsed("app-1") == []
    finally:
        await tiq.close()
    assert await rows(
        aconn,
        "select status, epoch, last_step from ticketiq.runs where run_id = %s",
        (run.run_id,),
    ) == [("completed", 1, 2)]
    assert await scalar(
        aconn, "select count(*) from ticketiq.audit where run_id = %s", (run.run_id,)
    ) == 3  # started, answer_sealed, completed

    async with await psycopg.AsyncConnection.connect(app_login, autocommit=True) as app:
        assert await scalar(app, "select current_user") != "postgres"
        forbidden = [
            (
                "insert into ticketiq.runs (run_id, owner, run_as, channel, entry_point,"
                " correlation_id, created_at, updated_at) values (gen_random_uuid(), 'o', 'r',"
                " 'c', 'e', 'x', now(), now())"
            ),
            "select * from ticketiq.runs",
            "update ticketiq.config set fake_clock_allowed = true",
            "delete from ticketiq.audit",
            "select * from ticketiq.runs_in_flight",
            "select * from ticketiq._fence('run', gen_random_uuid(), 1, now())",
            "select ticketiq._validate_checkpoint('{}')",
        ]
        for stmt in forbidden:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await app.execute(stmt)
    assert await scalar(aconn, "select count(*) from ticketiq.runs") == 1
