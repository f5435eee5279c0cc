"""Liveness tokens: a dead process is noticed by its PostgreSQL session; the lease stays the fence.

Real worker processes (``python -m harness.scripted``) with the default 8 s
leases and liveness on (``TICKETIQ_LIVENESS_INTERVAL`` 0.1 s, the default), driven
with real signals and real session terminations; judged from the database, the
vendor service's own record and the scripted model's log.

* SIGKILL: the survivor finds the victim's session ended, cuts its leases to the
  grace (0.3 s) and claims the run when that passes, long before the lease would
  have lapsed (compared on the database's clock, not a stopwatch).
* SIGSTOP: a stalled process keeps its session, so it is *not* taken for dead; only
  its lease lapsing hands the run over.
* A live process whose liveness connection is cut loses its run to a peer and makes
  no further outside call for it (:meth:`LeaseKeeper.ready`), then goes on working.
* A PostgreSQL restart ends every session at once: no run is handed over.

Invariants: I1 (fence), I3 (once per loss), I12/I13 (no call after a takeover),
I14 (crash resume audited).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psycopg
import pytest
from netproxy import Proxy
from procs import KILLED, start_stack
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from test_workers import (
    FAST,
    RECOVERY_BOUND,
    asked,
    audit,
    lease_expiry,
    lease_expiry_at,
    process_state,
    run_row,
    spawn_worker,
    up,
    vendor_requests_by,
    wait_until,
)

from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import PrivateCluster, temporary_database

pytestmark = pytest.mark.slow

#: The grace a dead process's leases get: three liveness intervals of 0.1 s.
GRACE = 0.3


def session_ended(stack, process_id: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [a for a in audit(stack, "process.session_ended")
            if a["detail"]["process_id"] == process_id]


def liveness_backend(stack, process_id: str) -> int | None:  # type: ignore[no-untyped-def]
    rows = stack.query("select pid from pg_stat_activity where application_name = %s",
                       f"ticketiq-liveness:{process_id}")
    return rows[0][0] if rows else None


def test_sigkill_is_noticed_by_the_session_long_before_the_lease(stack) -> None:  # type: ignore[no-untyped-def]
    """The victim's session ends with it: its run is claimed at once, lease unexpired."""
    owner = up(spawn_worker(stack, "owner"))
    survivor = up(spawn_worker(stack, "survivor"))
    wait_until("both hold liveness tokens",
               lambda: liveness_backend(stack, "owner") and liveness_backend(stack, "survivor"), 10)
    time.sleep(0.5)  # the survivor's watcher has seen the owner alive in its session

    owner.send(cmd="start", seed=41, steps=3, plan="mixed", model_delay=1.0)
    run_id = owner.wait_event("started")["run_id"]
    wait_until("step 2 asked", lambda: asked(stack, run_id, 2, owner.pid), 15, 0.01)
    full_lease = lease_expiry(stack, run_id)
    killed_at = time.time()
    owner.signal(signal.SIGKILL)
    assert owner.wait(10) == KILLED

    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed",
               RECOVERY_BOUND, 0.05)
    (lapse,) = audit(stack, "agent.run.lease_lapsed", run_id)
    (ended,) = session_ended(stack, "owner")
    (adopted,) = audit(stack, "agent.run.adopted", run_id)
    print(f"\nSIGKILL -> session noticed {ended['at'] - killed_at:.3f}s, claimed "
          f"{lapse['at'] - killed_at:.3f}s, adopted {adopted['at'] - killed_at:.3f}s; "
          f"lease cut to {lease_expiry_at(lapse) - killed_at:.2f}s; it would have lapsed at "
          f"{full_lease - killed_at:.2f}s")
    # Claimed by the session's end: the lease was cut to the grace when the death
    # was found (database clock), and claimed once that passed.
    assert lapse["detail"]["reason"] == "session_ended"
    assert lapse["actor"] == ended["actor"] == "survivor"
    assert lease_expiry_at(lapse) == pytest.approx(ended["at"] + GRACE, abs=0.002)
    assert lapse["at"] >= lease_expiry_at(lapse)
    assert lapse["at"] < full_lease - 5  # seconds before the 8 s lease would have lapsed
    row = run_row(stack, run_id)
    assert (row["loss_count"], row["epoch"]) == (1, 3)
    (resume,) = audit(stack, "agent.run.crash_resumed", run_id)
    assert (resume["actor"], resume["detail"]["reason"]) == ("survivor", "session_ended")
    assert stack.duplicates() == {}
    assert survivor.terminate() == 0


def test_a_stalled_process_keeps_its_session_and_is_left_to_its_lease(stack) -> None:  # type: ignore[no-untyped-def]
    """SIGSTOP is not death: no session ends, so only the lapsed lease hands the run over."""
    stack.settings.update(FAST)
    stalled = up(spawn_worker(stack, "stalled"))
    survivor = up(spawn_worker(stack, "survivor"))
    wait_until("both hold liveness tokens",
               lambda: liveness_backend(stack, "stalled") and liveness_backend(stack, "survivor"),
               10)
    time.sleep(0.5)

    stalled.send(cmd="start", seed=42, steps=3, plan="mixed", model_delay=1.5)
    run_id = stalled.wait_event("started")["run_id"]
    wait_until("step 2 asked", lambda: asked(stack, run_id, 2, stalled.pid), 15, 0.01)
    stalled.signal(signal.SIGSTOP)
    wait_until("the owner stopped", lambda: process_state(stalled.pid) == "T", 15, 0.01)
    stopped_at = time.time()
    wait_until("the survivor adopted the run",
               lambda: audit(stack, "agent.run.adopted", run_id), 20)
    (lapse,) = audit(stack, "agent.run.lease_lapsed", run_id)
    assert "reason" not in lapse["detail"]  # the sweep's claim, not the session's
    assert lapse["at"] >= lease_expiry_at(lapse)
    assert session_ended(stack, "stalled") == []
    stalled.signal(signal.SIGCONT)
    assert stalled.wait_event("outcome", timeout=15, run_id=run_id)["status"] == "lost"
    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed", 20)
    assert [r for r in vendor_requests_by(stack, "stalled") if r["wall_at"] > stopped_at] == []
    assert stack.duplicates() == {}
    assert stalled.terminate() == 0
    assert survivor.terminate() == 0


def test_a_live_process_whose_liveness_session_is_cut_makes_no_further_call(stack) -> None:  # type: ignore[no-untyped-def]
    """Taken for dead while alive: the peer takes the run; this process calls nobody for it.

    The owner is inside the first of two reads of step 1 (the vendor holds that request
    1 s) when its liveness session is cut and it cannot connect for 2.5 s.  The
    survivor claims and resumes the run at once.  The owner's second read has no
    database write before it, so only ``LeaseKeeper.ready`` (waiting for the token to
    be held again and the leases renewed, which says the run is gone) keeps it from
    calling the vendor.
    """
    # The owner reaches PostgreSQL through a proxy the test can partition.  One run at
    # a time: it cannot adopt the run back itself while the cut attempt still holds
    # its slot, so the survivor resumes it.  Renewals every 3.5 s: the periodic
    # renewal is unlikely to be what notices the takeover before the held read ends.
    db = conninfo_to_dict(stack.db_url)
    proxy = Proxy(str(db.get("host") or "127.0.0.1"), int(db.get("port") or 5432))
    proxied = make_conninfo(stack.db_url, host="127.0.0.1", port=proxy.port)
    try:
        owner = up(spawn_worker(stack, "owner", "--max-runs", "1",
                                TICKETIQ_DATABASE_URL=proxied, TICKETIQ_RENEW_INTERVAL="3.5"))
        survivor = up(spawn_worker(stack, "survivor"))
        wait_until("both hold liveness tokens", lambda: liveness_backend(stack, "owner")
                   and liveness_backend(stack, "survivor"), 10)
        time.sleep(0.5)
        stack.vendor.fault("jira", "delay", method="GET", seconds=1.0, count=1)

        owner.send(cmd="start", seed=43, steps=2, plan="reads", model_delay=0.2)
        run_id = owner.wait_event("started")["run_id"]
        wait_until("step 1 written", lambda: run_row(stack, run_id)["last_step"] >= 1, 15, 0.01)
        time.sleep(0.3)  # the owner's first read is held at the vendor
        # A partition of 2.5 s for new connections, and the liveness session cut: the
        # survivor's watcher (every 0.1 s) finds the token gone; the held read comes
        # back 0.7 s after the cut while the owner still cannot hold a token.
        proxy.refusing.set()
        cut_at = time.time()
        stack.query("select pg_terminate_backend(pid) from pg_stat_activity"
                    " where application_name = 'ticketiq-liveness:owner'")
        time.sleep(2.5)
        proxy.refusing.clear()
        _judge_cut(stack, owner, survivor, run_id, cut_at)
    finally:
        proxy.close()


def _judge_cut(stack, owner, survivor, run_id: str, cut_at: float) -> None:  # type: ignore[no-untyped-def]
    wait_until("the survivor adopted the run",
               lambda: audit(stack, "agent.run.adopted", run_id), 10)
    assert [a["actor"] for a in audit(stack, "agent.run.adopted", run_id)] == ["survivor"]
    (lapse,) = audit(stack, "agent.run.lease_lapsed", run_id)
    (ended,) = session_ended(stack, "owner")
    assert lapse["detail"]["reason"] == "session_ended"
    assert lease_expiry_at(lapse) == pytest.approx(ended["at"] + GRACE, abs=0.002)
    # The owner stops the run (its lease renewal, after the gap, says it is gone) ...
    lost = owner.wait_event("outcome", timeout=15, run_id=run_id)
    assert lost["status"] == "lost", lost
    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed", 20)
    # ... having sent nothing after its session was cut: the held read was sent before.
    late = [r for r in vendor_requests_by(stack, "owner") if r["wall_at"] > cut_at]
    assert late == [], json.dumps(late, default=str)[:2000]
    assert [r for r in vendor_requests_by(stack, "survivor")]  # the survivor made the reads
    assert stack.duplicates() == {}

    # The owner is alive and well: it holds a new token and runs new work.
    wait_until("the owner holds a token again",
               lambda: stack.query("select stopped_at is null from ticketiq.processes"
                                   " where process_id = 'owner'")[0][0], 10)
    owner.send(cmd="start", seed=44, steps=2, plan="mixed")
    later = owner.wait_event("started", seed=44)["run_id"]
    assert owner.wait_event("outcome", timeout=20, run_id=later)["status"] == "completed"
    assert owner.terminate() == 0
    assert survivor.terminate() == 0


def test_a_job_of_a_live_process_whose_liveness_session_is_cut_writes_nothing_more(stack) -> None:  # type: ignore[no-untyped-def]
    """Taken for dead while alive: the peer runs the job on; this process writes nothing more.

    The owner runs a ``source_sync`` job (a vendor write per page, 1.5 s apart).  Right
    after page 1 is written and checkpointed its liveness session is cut and it cannot
    connect for 4 s.  The survivor cuts the job's lease to the grace, queues the job again
    and runs it on from its checkpoint.  The owner's next write comes after the page's
    sleep with no database write before it, while its lease (on its own clock) still looks
    good; only ``JobContext.ready`` (waiting for the token to be held again and the job
    leases renewed, which says the job is gone) keeps it from sending that write.
    """
    from test_jobs import enqueue, job

    db = conninfo_to_dict(stack.db_url)
    proxy = Proxy(str(db.get("host") or "127.0.0.1"), int(db.get("port") or 5432))
    proxied = make_conninfo(stack.db_url, host="127.0.0.1", port=proxy.port)
    try:
        owner = up(spawn_worker(stack, "owner", TICKETIQ_DATABASE_URL=proxied,
                                TICKETIQ_RENEW_INTERVAL="3.5"))
        wait_until("the owner holds a token", lambda: liveness_backend(stack, "owner"), 10)
        job_id = enqueue(stack, "source_sync", {"pages": 5, "delay": 1.5}, resumable=True)
        wait_until("the owner claimed the job", lambda: job(stack, job_id)["holder"] == "owner",
                   10, 0.01)
        survivor = up(spawn_worker(stack, "survivor"))
        wait_until("both hold liveness tokens", lambda: liveness_backend(stack, "survivor"), 10)
        time.sleep(0.3)  # the survivor's watcher has seen the owner alive in its session
        done = int(job(stack, job_id)["progress"].get("pages_done", 0))
        wait_until("the owner's next page written and checkpointed",
                   lambda: job(stack, job_id)["progress"].get("pages_done", 0) > done, 10, 0.005)
        proxy.refusing.set()
        cut_at = time.time()
        stack.query("select pg_terminate_backend(pid) from pg_stat_activity"
                    " where application_name = 'ticketiq-liveness:owner'")
        time.sleep(4.0)
        proxy.refusing.clear()

        wait_until("the job completed", lambda: job(stack, job_id)["state"] == "completed", 45)
        (ended,) = session_ended(stack, "owner")
        late = [r for r in vendor_requests_by(stack, "owner") if r["wall_at"] > cut_at]
        assert late == [], json.dumps(late, default=str)[:2000]
        assert vendor_requests_by(stack, "survivor")  # the survivor wrote the pages left
        assert job(stack, job_id)["epoch"] >= 2
        assert [a["actor"] for a in audit(stack, "job.completed")] == ["survivor"]
        assert stack.duplicates() == {}
        assert owner.terminate() == 0
        assert survivor.terminate() == 0
    finally:
        proxy.close()


@pytest.fixture
def restart_stack(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A stack on a private cluster of its own, which the test restarts."""
    cluster = PrivateCluster()
    cluster.start()
    try:
        with temporary_database(cluster.admin_url, prefix="tiq_liveness") as url:
            with psycopg.connect(url, autocommit=True) as conn:
                install_sync(conn)
            world = start_stack(url, tmp_path / "stack")
            try:
                yield world, cluster
            finally:
                world.close()
    finally:
        cluster.stop()


def test_a_postgres_restart_hands_over_no_run_of_a_live_process(restart_stack) -> None:  # type: ignore[no-untyped-def]
    """Every session ends at once, the watchers' too: nobody is taken for dead."""
    stack, cluster = restart_stack
    a = up(spawn_worker(stack, "a"))
    b = up(spawn_worker(stack, "b"))
    wait_until("both hold liveness tokens",
               lambda: liveness_backend(stack, "a") and liveness_backend(stack, "b"), 10)
    time.sleep(0.5)
    a.send(cmd="start", seed=45, steps=3, plan="reads", model_delay=4.0)
    b.send(cmd="start", seed=46, steps=3, plan="reads", model_delay=4.0)
    runs = [a.wait_event("started")["run_id"], b.wait_event("started")["run_id"]]
    wait_until("step 1 written everywhere",
               lambda: all(run_row(stack, r)["last_step"] >= 1 for r in runs), 15, 0.02)

    cluster.restart("immediate")

    for run_id in runs:
        wait_until("the run completed",
                   lambda run_id=run_id: run_row(stack, run_id)["status"] == "completed", 40)
        assert run_row(stack, run_id)["loss_count"] == 0
        assert audit(stack, "agent.run.lease_lapsed", run_id) == []
    assert audit(stack, "process.session_ended") == []
    wait_until("both hold liveness tokens again",
               lambda: liveness_backend(stack, "a") and liveness_backend(stack, "b"), 15)
    assert a.terminate() == 0
    assert b.terminate() == 0


# -- the Liveness class in one process, two connections ---------------------------------


async def _wait_for(what: str, check, seconds: float = 10.0):  # type: ignore[no-untyped-def]
    import asyncio

    deadline = time.monotonic() + seconds
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:g}s waiting for {what}")
        await asyncio.sleep(0.02)


async def test_liveness_claims_a_dead_peers_runs_and_spares_a_clean_exit(db_url: str) -> None:
    """Unit-level: a session that ends is a death; release_liveness is a clean exit."""
    import asyncio

    from ticketiq_pg.db.driver import TicketIQ
    from ticketiq_pg.runtime.liveness import Liveness

    db = await TicketIQ.connect(db_url)
    try:
        for name in ("watcher", "dies", "leaves"):
            await db.processes.register_process(name)
        claimed: list[int] = []
        watcher = Liveness(db, db_url, "watcher", interval=0.05, on_claimed=claimed.append)
        dies = Liveness(db, db_url, "dies", interval=0.05)
        leaves = Liveness(db, db_url, "leaves", interval=0.05)
        for live in (watcher, dies, leaves):
            live.start()
            assert await live.wait_ok(5)
        dead_run = (await db.start_run(holder="dies", owner="o", run_as="o", channel="c",
                                       entry_point="e", may_wait=False, ttl=60)).run_id
        kept_run = (await db.start_run(holder="leaves", owner="o", run_as="o", channel="c",
                                       entry_point="e", may_wait=False, ttl=60)).run_id
        await asyncio.sleep(0.3)  # the watcher has seen both alive in its session

        await leaves.stop(release=True)  # a clean exit
        await dies.stop(release=False)  # the session just ends, as when the process dies

        async def dead_claimed() -> bool:
            return (await db.get_run(dead_run)).status == "claimed"

        await _wait_for("the dead process's run claimed", dead_claimed)
        assert claimed == [1]
        assert watcher.reaped_peers == ["dies"]
        await asyncio.sleep(0.3)
        kept = await db.get_run(kept_run)
        assert (kept.status, kept.lease_holder, kept.epoch) == ("running", "leaves", 1)
        await watcher.stop()
    finally:
        await db.close()


async def test_a_busy_event_loop_does_not_make_the_confirmations_late(db_url: str) -> None:
    """Unit-level: the watch runs in a thread of its own, so a process whose event loop
    is busy for seconds (a takeover of thousands of runs) is still confirmed alive, and
    its calls need not wait for a watch queued behind the runs' work.

    Before, the watch ran on the app's loop: after 1.5 s of the loop's own work the
    last confirmation was at least 1.5 s old, far past the 0.24 s a call may go on
    (every call waited; 24,115 of them in a 10,000-run takeover, bench section 8).
    """

    from ticketiq_pg.db.driver import TicketIQ
    from ticketiq_pg.runtime.liveness import Liveness

    db = await TicketIQ.connect(db_url)
    try:
        await db.processes.register_process("busy")
        live = Liveness(db, db_url, "busy", interval=0.1)
        live.start()
        try:
            assert await live.wait_ok(10)
            before = live.confirmed_sent
            spin_until = time.monotonic() + 1.5
            while time.monotonic() < spin_until:  # the loop's own work: no await
                pass
            age = live.clock() - live.confirmed_sent
            assert live.confirmed_sent > before and age < 1.0, age
            assert live.calls_held == 0
        finally:
            await live.stop()
        assert not live.may_call()
    finally:
        await db.close()


async def test_a_process_is_ready_only_once_it_watches_its_peers(db_url: str) -> None:
    """Unit-level: a peer that dies the moment a new process says it is ready is
    noticed by its session, not left to its lease (issue 46, finding 18).

    ``Worker.start`` returns only after a watch has listed the live peers: a peer
    seen alive in the watcher's session whose token is then gone is dead.  Before,
    it returned once its own token was held, before any watch, and a peer that died
    then was never seen alive: its runs waited for their leases (8.6 s p50).
    """
    import asyncio

    from ticketiq_pg.db.driver import TicketIQ
    from ticketiq_pg.runtime.liveness import Liveness

    db = await TicketIQ.connect(db_url)
    worker = _answering_worker(db_url, "newcomer")
    try:
        await db.processes.register_process("peer")
        peer = Liveness(db, db_url, "peer", interval=0.05)
        peer.start()
        assert await peer.wait_ok(5)
        run_id = (await db.start_run(holder="peer", owner="o", run_as="o", channel="c",
                                     entry_point="e", may_wait=False, ttl=60)).run_id
        await worker.start()
        assert worker.liveness is not None
        assert worker.liveness.peers == ["peer"]  # seen alive before it said it was ready
        await peer.stop(release=False)  # dies at once: the session just ends

        async def completed() -> bool:
            return (await db.get_run(run_id)).status == "completed"

        await _wait_for("the dead peer's run taken over and completed", completed, 10)
        claimed = [a for a in await asyncio.to_thread(_audit_rows, db_url, run_id)
                   if a[0] == "agent.run.lease_lapsed"]
        assert [c[1]["reason"] for c in claimed] == ["session_ended"]
    finally:
        await worker.shutdown()
        await db.close()


def _audit_rows(url: str, run_id: object) -> list[tuple[str, dict]]:
    with psycopg.connect(url) as conn:
        return [(e, d) for e, d in conn.execute(
            "select event, detail from ticketiq.audit where run_id = %s order by audit_id",
            [run_id]).fetchall()]


async def test_a_process_whose_token_is_unconfirmed_adopts_no_run(db_url: str) -> None:
    """Unit-level: no run is adopted while the process's liveness token is unconfirmed.

    A peer that found the process's session ended would cut the lease of a run adopted
    meanwhile and claim it again, a loss counted for nothing.  Adoption waits for the
    token; once it is held and confirmed again, the run is adopted and finishes.
    """
    import asyncio

    from ticketiq_pg.db.driver import TicketIQ

    worker = _answering_worker(db_url, "adopter")
    db = await TicketIQ.connect(db_url)
    try:
        await worker.start()
        liveness = worker.liveness
        assert liveness is not None

        async def confirmed() -> bool:
            return liveness.may_call()

        await _wait_for("the token confirmed", confirmed)
        await liveness.stop(release=False)  # the token is gone, not yet held again
        run_id = (await db.start_run(holder="gone", owner="o", run_as="o", channel="c",
                                     entry_point="e", may_wait=False, ttl=0.05)).run_id
        await asyncio.sleep(0.1)
        assert [r.run_id for r in await db.processes.sweep_lapsed("sweeper")] == [run_id]
        await asyncio.sleep(1.0)  # ten polls of the resume worker, and a NOTIFY
        held = await db.get_run(run_id)
        assert (held.status, held.lease_holder) == ("claimed", None)
        liveness.start()

        async def completed() -> bool:
            return (await db.get_run(run_id)).status == "completed"

        await _wait_for("the run adopted and completed", completed)
        done = await db.get_run(run_id)
        assert (done.epoch, done.loss_count) == (3, 1)  # started, claimed, adopted
    finally:
        await worker.shutdown()
        await db.close()


async def test_a_process_whose_token_is_unconfirmed_starts_no_run_until_it_is(
    db_url: str,
) -> None:
    """Unit-level: a run started by app code waits for the token, then runs at epoch 1.

    Started during the gap, the run would be cut and claimed at once by a peer that
    found this process's session ended: a loss counted for nothing.
    """
    import asyncio
    import uuid

    from ticketiq_pg.db.driver import TicketIQ
    from ticketiq_pg.errors import UnknownRun

    proxy, proxied = _proxy(db_url)
    worker = _answering_worker(proxied, "starter")
    db = await TicketIQ.connect(db_url)
    try:
        await worker.start()
        await _cut_liveness(db, worker, proxy)
        run_id = uuid.uuid4()
        started = asyncio.create_task(worker.start_run(
            owner="o", run_as="o", channel="c", entry_point="e", input={"n": 1}, run_id=run_id))
        await asyncio.sleep(1.0)
        assert not started.done()
        with pytest.raises(UnknownRun):  # nothing written while unconfirmed
            await db.get_run(run_id)
        proxy.refusing.clear()  # the token is held again and confirmed: the run starts
        outcome = await (await asyncio.wait_for(started, 10)).outcome()
        assert outcome.status == "completed"
        done = await db.get_run(run_id)
        assert (done.epoch, done.loss_count) == (1, 0)
    finally:
        proxy.refusing.clear()
        await worker.shutdown()
        await db.close()
        proxy.close()


async def test_a_run_start_gives_up_when_the_token_stays_unconfirmed(db_url: str) -> None:
    """Unit-level: unconfirmed for the lease TTL, start raises LivenessUnconfirmed; no write."""
    import uuid

    from ticketiq_pg.agent import Tools
    from ticketiq_pg.db.driver import TicketIQ
    from ticketiq_pg.errors import LivenessUnconfirmed, UnknownRun
    from ticketiq_pg.runtime.leases import LeaseKeeper
    from ticketiq_pg.runtime.liveness import Liveness
    from ticketiq_pg.runtime.runner import Runner
    from ticketiq_pg.seal import Sealer

    db = await TicketIQ.connect(db_url)
    try:
        await db.processes.register_process("never-held")
        leases = LeaseKeeper(db, "never-held", ttl=0.6, renew_interval=0.2, margin=0.1)
        leases.liveness = Liveness(db, db_url, "never-held", interval=0.05)  # never started
        runner = Runner(db, leases, Sealer({"k1": b"k" * 32}), model=None,  # type: ignore[arg-type]
                        tools=Tools())
        run_id = uuid.uuid4()
        t0 = time.monotonic()
        with pytest.raises(LivenessUnconfirmed):
            await runner.start(owner="o", run_as="o", channel="c", entry_point="e",
                               run_id=run_id)
        assert time.monotonic() - t0 >= 0.6
        with pytest.raises(UnknownRun):
            await db.get_run(run_id)
    finally:
        await db.close()


async def test_a_process_whose_token_is_unconfirmed_claims_no_entry(db_url: str) -> None:
    """Unit-level: the entry pump claims nothing while the token is unconfirmed.

    Claiming an entry starts its run, held by this process: a peer that found the
    session ended would take it over at once.  Once the token is held again, the
    entry is claimed and answered, its run never lost.
    """
    import asyncio

    from ticketiq_pg.db.driver import TicketIQ

    proxy, proxied = _proxy(db_url)
    worker = _answering_worker(proxied, "pump")
    db = await TicketIQ.connect(db_url)
    try:
        await worker.start()
        await _cut_liveness(db, worker, proxy)
        await db.entries.accept_entry("webhook", "gap-1", {"body": {}}, owner="o", run_as="o",
                              channel="c")
        await asyncio.sleep(1.0)  # ten polls of the pump, and a NOTIFY
        entry = await db.entries.get_entry("webhook", "gap-1")
        # Pending: no run yet (its id, chosen when the entry was written, names none).
        assert entry is not None and (entry.state, entry.run_status) == ("pending", None)
        planned = entry.run_id
        proxy.refusing.clear()

        async def answered() -> bool:
            found = await db.entries.get_entry("webhook", "gap-1")
            return found is not None and found.state == "answered"

        await _wait_for("the entry claimed and answered", answered)
        entry = await db.entries.get_entry("webhook", "gap-1")
        assert entry is not None and entry.run_id == planned
        run = await db.get_run(entry.run_id)
        assert (run.status, run.epoch, run.loss_count) == ("completed", 1, 0)
    finally:
        proxy.refusing.clear()
        await worker.shutdown()
        await db.close()
        proxy.close()


def _answering_worker(url: str, process_id: str):  # type: ignore[no-untyped-def]
    """A worker whose model answers at once, looking at liveness every 0.05 s."""
    from ticketiq_pg.agent import ModelStep, Tools
    from ticketiq_pg.config import Settings
    from ticketiq_pg.runtime.app import App
    from ticketiq_pg.runtime.worker import Worker

    class Answers:
        async def step(self, request):  # type: ignore[no-untyped-def]
            return ModelStep(text="done")

    settings = Settings(database_url=url, seal_keys={"k1": b"k" * 32}, poll_interval=0.1,
                        liveness_interval=0.05)
    return Worker(settings, App(model=Answers(), tools=Tools()), process_id=process_id)


def _proxy(db_url: str) -> tuple[Proxy, str]:
    """A proxy to the test database and the URL through it."""
    db = conninfo_to_dict(db_url)
    proxy = Proxy(str(db.get("host") or "127.0.0.1"), int(db.get("port") or 5432))
    return proxy, make_conninfo(db_url, host="127.0.0.1", port=proxy.port)


async def _cut_liveness(db, worker, proxy: Proxy) -> None:  # type: ignore[no-untyped-def]
    """Once the worker's token is confirmed, end its liveness session and keep it out.

    New connections through the proxy are refused until the test clears
    ``proxy.refusing``; the pool's open connections keep working.
    """
    liveness = worker.liveness
    assert liveness is not None

    async def confirmed() -> bool:
        return liveness.may_call()

    await _wait_for("the token confirmed", confirmed)
    proxy.refusing.set()
    async with db.pool.connection() as conn:
        await conn.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity"
            " where application_name = %s", (f"ticketiq-liveness:{worker.process_id}",))

    async def unconfirmed() -> bool:
        return not liveness.may_call()

    await _wait_for("the token unconfirmed", unconfirmed)
