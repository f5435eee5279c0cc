"""Hardening of the SQL API against a caller that attacks it directly.

* A liveness token is released only by the session that holds it; a release from any
  other session changes nothing (I13: liveness stays a hint nobody else can switch off).
* The lease decision reads the clock after the row lock (I1, I11): a checkpoint, a
  renewal, a job's checkpoint or renewal that waited for the row lock past its lease is
  refused, and a checkpoint that waited inside its lease is stamped with the time after
  the wait.
* The trust model (docs/sql-api.md, "Trust model"): every login granted ``ticketiq_app``
  may act for any process, through the fenced functions only; what it cannot do is
  tested here.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import body, call, fingerprint, rows, scalar, start
from psycopg import sql
from psycopg.conninfo import make_conninfo

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.jobs import JobStore
from ticketiq_pg.errors import AnswerSealed, Fenced, LeaseLapsed

ROOT = Path(__file__).resolve().parent.parent
#: How long the locking transaction keeps the row, against a lease of LEASE seconds.
LOCKED_FOR = 2.0
LEASE = 1.0


@pytest.fixture
def app_logins(db_url: str, pg_server_url: str) -> Iterator[list[str]]:
    """Two LOGIN roles granted ticketiq_app (two applications); their conninfos."""
    roles = [f"tiq_hard_{secrets.token_hex(5)}" for _ in range(2)]
    password = secrets.token_hex(16)
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        for role in roles:
            admin.execute(sql.SQL("create role {} login password {}").format(
                sql.Identifier(role), sql.Literal(password)))
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            for role in roles:
                conn.execute(sql.SQL("grant ticketiq_app to {}").format(sql.Identifier(role)))
        yield [make_conninfo(db_url, user=role, password=password) for role in roles]
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            for role in roles:
                admin.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                              " where usename = %s", (role,))
                admin.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


async def _lock_row(conn: psycopg.AsyncConnection, table: str, column: str,
                    key: uuid.UUID) -> None:
    """Begin a transaction on ``conn`` that holds the row locked (FOR UPDATE)."""
    await conn.execute("begin")
    await conn.execute(
        sql.SQL("select 1 from ticketiq.{} where {} = %s for update").format(
            sql.Identifier(table), sql.Identifier(column)), (key,))


async def _after_the_lock(locker: psycopg.AsyncConnection, waiter: asyncio.Task) -> None:
    """Keep the lock LOCKED_FOR seconds while ``waiter`` waits for it, then commit."""
    await asyncio.sleep(LOCKED_FOR)
    assert not waiter.done(), "the statement did not wait for the row lock"
    await locker.execute("commit")


# -- 1. release_liveness ------------------------------------------------------------


async def test_release_liveness_from_another_session_changes_nothing(db_url: str) -> None:
    """Finding 1: session X releasing the victim's token gets false and changes nothing;
    the victim stays watched and still sees its own token held."""
    tiq = TicketIQ()
    victim = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    other = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    admin = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await tiq.processes.register_process("victim", conn=victim)
        await tiq.processes.hold_liveness("victim", conn=victim)
        before = await fingerprint(admin)

        assert await tiq.processes.release_liveness("victim", conn=other) is False
        assert await fingerprint(admin) == before
        assert await rows(admin, "select stopped_at, ended_reason from ticketiq.processes"
                                 " where process_id = 'victim'") == [(None, None)]
        watched = await rows(victim, "select process_id, alive, session is not null"
                                     " from ticketiq.watch_processes('victim')")
        assert watched == [("victim", True, True)]
        # its own session still releases it
        assert await tiq.processes.release_liveness("victim", conn=victim) is True
    finally:
        for conn in (victim, other, admin):
            await conn.close()


# -- 3. the clock after the row lock ----------------------------------------------------


async def test_a_checkpoint_that_waited_for_the_run_lock_past_its_lease_is_refused(
    db_url: str,
) -> None:
    """Finding 3 (I1): the run's row locked for 2 s by another transaction, a 1 s lease
    lapses during the wait: write_checkpoint raises TQ003 and writes nothing."""
    tiq = TicketIQ()
    writer = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    locker = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        run = await start(tiq, ttl=LEASE, conn=writer)
        await _lock_row(locker, "runs", "run_id", run.run_id)
        write = asyncio.create_task(tiq.write_checkpoint(
            run.run_id, 1, 1, body(call("w1")), "s1", "k", conn=writer))
        await _after_the_lock(locker, write)
        with pytest.raises(LeaseLapsed):
            await write
        assert await scalar(locker, "select count(*) from ticketiq.checkpoints") == 0
        assert await scalar(locker, "select count(*) from ticketiq.calls") == 0
        assert await scalar(locker, "select last_step from ticketiq.runs where run_id = %s",
                            (run.run_id,)) == 0
    finally:
        await writer.close()
        await locker.close()


async def test_a_checkpoint_that_waited_inside_its_lease_is_stamped_after_the_wait(
    db_url: str,
) -> None:
    """Finding 3: written_at is the database time after the row lock, not before the wait."""
    tiq = TicketIQ()
    writer = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    locker = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        run = await start(tiq, ttl=30, conn=writer)
        await _lock_row(locker, "runs", "run_id", run.run_id)
        write = asyncio.create_task(tiq.write_checkpoint(
            run.run_id, 1, 1, body(call("w1")), "s1", "k", conn=writer))
        await asyncio.sleep(LOCKED_FOR)
        released_at = await scalar(locker, "select clock_timestamp()")
        await locker.execute("commit")
        written = await write
        assert written.written_at >= released_at
        assert await scalar(locker, "select written_at from ticketiq.checkpoints") >= released_at
    finally:
        await writer.close()
        await locker.close()


async def test_a_renewal_that_waited_for_the_run_lock_past_its_lease_does_not_revive_it(
    db_url: str,
) -> None:
    """Finding 3 (I1, I12): renew_leases waiting 2 s for the row of a 1 s lease answers
    held = false and leaves the lapsed lease as it was, for the sweep."""
    tiq = TicketIQ()
    renewer = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    locker = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        run = await start(tiq, ttl=LEASE, conn=renewer)
        await _lock_row(locker, "runs", "run_id", run.run_id)
        renew = asyncio.create_task(
            tiq.processes.renew_leases("p1", [(run.run_id, 1)], 30, conn=renewer))
        await _after_the_lock(locker, renew)
        (renewal,) = await renew
        assert renewal.held is False
        assert await scalar(locker, "select lease_expires_at from ticketiq.runs"
                                    " where run_id = %s", (run.run_id,)) == run.lease_expires_at
        swept = await tiq.processes.sweep_lapsed("sweeper", conn=locker)
        assert [s.run_id for s in swept] == [run.run_id]
    finally:
        await renewer.close()
        await locker.close()


async def test_a_job_renewal_or_checkpoint_that_waited_past_its_lease_is_refused(
    db_url: str,
) -> None:
    """Finding 3, for jobs: renew_leases (kind job) answers held = false and checkpoint_job raises
    TQ003 once the job's lease lapsed while they waited for its row."""
    jobs = JobStore(TicketIQ())
    worker = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    locker = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await jobs.enqueue("source_sync", {}, conn=worker)
        await jobs.enqueue("source_sync", {}, conn=worker)
        job = await jobs.claim("w1", LEASE, conn=worker)
        assert job is not None
        await _lock_row(locker, "jobs", "job_id", job.job_id)
        renew = asyncio.create_task(jobs.renew("w1", [(job.job_id, job.epoch)], 30, conn=worker))
        await _after_the_lock(locker, renew)
        (renewal,) = await renew
        assert renewal.held is False

        second = await jobs.claim("w1", LEASE, conn=worker)
        assert second is not None and second.job_id != job.job_id
        await _lock_row(locker, "jobs", "job_id", second.job_id)
        checkpoint = asyncio.create_task(
            jobs.checkpoint(second.job_id, second.epoch, {"page": 2}, conn=worker))
        await _after_the_lock(locker, checkpoint)
        with pytest.raises(LeaseLapsed):
            await checkpoint
        assert await scalar(locker, "select progress from ticketiq.jobs where job_id = %s",
                            (second.job_id,)) == {}
    finally:
        await worker.close()
        await locker.close()


# -- 7. the trust model ---------------------------------------------------------------


async def test_trust_model_an_app_login_acts_for_any_process_only_through_the_functions(
    app_logins: list[str], db_url: str,
) -> None:
    """Finding 7, the trust model chosen: one database is one trust domain.

    An application login may act for any process (a holder's name and a run's epoch are
    identifiers, not secrets: get_run shows both), always through the fenced functions.
    It cannot read or write a table, move the clock, switch another session's liveness
    token off, write at an epoch that is not the run's, or change a sealed answer.
    """
    a_url, b_url = app_logins
    tiq = TicketIQ()
    a = await psycopg.AsyncConnection.connect(a_url, autocommit=True)
    b = await psycopg.AsyncConnection.connect(b_url, autocommit=True)
    admin = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await tiq.processes.register_process("app-a", conn=a)
        await tiq.processes.hold_liveness("app-a", conn=a)
        run = await start(tiq, holder="app-a", ttl=30, conn=a)
        await tiq.write_checkpoint(run.run_id, 1, 1, body(call("w1")), "s1", "k", conn=a)

        # What the model allows: B reads the run and renews A's lease in A's name.
        seen = await tiq.get_run(run.run_id, conn=b)
        assert (seen.lease_holder, seen.epoch) == ("app-a", 1)
        (renewal,) = await tiq.processes.renew_leases("app-a", [(run.run_id, 1)], 30, conn=b)
        assert renewal.held is True

        # What it does not allow, each leaving every table as it was.
        before = await fingerprint(admin)
        for stmt in ("select * from ticketiq.runs", "update ticketiq.runs set epoch = 9",
                     "update ticketiq.config set fake_clock_allowed = true",
                     "select ticketiq._fence('run', gen_random_uuid(), 1, now())"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await b.execute(stmt)
        await b.execute("select set_config('ticketiq.fake_now', '2100-01-01', false)")
        assert await scalar(b, "select extract(year from ticketiq.now())") < 2100
        await b.execute("select set_config('ticketiq.fake_now', '', false)")
        assert await tiq.processes.release_liveness("app-a", conn=b) is False
        with pytest.raises(Fenced):
            await tiq.write_checkpoint(run.run_id, 2, 2, body(), "s2", "k", conn=b)
        assert await fingerprint(admin) == before

        await tiq.seal_answer(run.run_id, 1, 2, {"text": "a's"}, "a1", "k", 60, conn=a)
        before = await fingerprint(admin)
        with pytest.raises(AnswerSealed):
            await tiq.seal_answer(run.run_id, 1, 2, {"text": "b's"}, "b1", "k", 60, conn=b)
        assert await fingerprint(admin) == before
    finally:
        for conn in (a, b, admin):
            await conn.close()
    doc = (ROOT / "docs" / "sql-api.md").read_text()
    assert "## Trust model" in doc
