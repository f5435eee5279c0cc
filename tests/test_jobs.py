"""Background jobs across real processes: kills, stalls, the sweep, typed errors.

Job workers are child processes (``python -m harness.jobs_child``) driven with real
signals (SIGKILL, SIGSTOP/SIGCONT, SIGTERM).  A lapsed lease is swept with the database
clock moved forward in the sweeping session only (``ticketiq.fake_now``), so nothing
sleeps out a lease, except in the one test where a process of the pair sweeps as the
leader would, on the real clock, with short leases.

Judged from outside the processes: the database (``ticketiq.jobs``, ``ticketiq.audit``)
and the vendor service's own record of every request (each source-sync page is one Jira
comment whose step key is ``<job id>:<page>``; each process's requests carry its name as
HTTP Basic user, see ``procs.vendor_user``).

Spec: "Which runs survive a crash" (source syncs and fine-tuning jobs are queued again
for any process's job worker) and "What is not promised" (classifier training and
red-team runs whose process stops are failed ``interrupted`` and must be started again).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from procs import KILLED, LiveProc, Stack, requester, vendor_user
from psycopg.types.json import Jsonb

from harness.scripted_jobs import scripted_handlers
from ticketiq_pg import errors
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.jobs import JobStore
from ticketiq_pg.runtime.jobs import JobContext, JobWorker

pytestmark = pytest.mark.slow

#: Short leases for the test in which a process sweeps on the real clock.
FAST = {
    "TICKETIQ_LEASE_TTL": "2",
    "TICKETIQ_RENEW_INTERVAL": "0.4",
    "TICKETIQ_SELF_FENCE_MARGIN": "0.5",
    "TICKETIQ_POLL_INTERVAL": "0.3",
}


# -- helpers -------------------------------------------------------------------------


def spawn_jobs(stack: Stack, name: str, *args: str, **extra: str) -> LiveProc:
    """``python -m harness.jobs_child --process-id NAME ...``, read live; its vendor
    requests carry ``name``."""
    extra.setdefault("TICKETIQ_VENDOR_URL", vendor_user(stack.vendor.base_url, name))
    stderr_path = stack.workdir / f"{name}.stderr.log"
    with open(stderr_path, "ab") as err:
        popen = subprocess.Popen(
            [sys.executable, "-m", "harness.jobs_child", "--process-id", name, *args],
            env=stack.env(**extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    proc = LiveProc(popen, name, stderr_path)
    stack.procs.append(proc)  # type: ignore[arg-type]  # Stack.close kills it
    proc.wait_event("ready")
    return proc


def enqueue(stack: Stack, kind: str, payload: dict[str, Any], *, resumable: bool,
            key: str | None = None) -> str:
    ((job_id,),) = stack.query(
        "select job_id from ticketiq.enqueue_job(%s, %s, %s, %s)",
        kind, Jsonb(payload), resumable, key,
    )
    return str(job_id)


def job(stack: Stack, job_id: str) -> dict[str, Any]:
    with psycopg.connect(stack.db_url, autocommit=True) as conn:
        cur = conn.execute("select * from ticketiq.get_job(%s)", [job_id])
        names = [c.name for c in cur.description or ()]
        row = cur.fetchone()
    assert row is not None
    return dict(zip(names, row, strict=True))


def sweep_jobs_as_if_later(stack: Stack, seconds: float = 3600.0) -> list[tuple[Any, ...]]:
    """Sweep jobs with the database clock moved ``seconds`` ahead in this session only."""
    with psycopg.connect(stack.db_url, autocommit=True) as conn:
        conn.execute("update ticketiq.config set fake_clock_allowed = true")
        conn.execute(
            "select set_config('ticketiq.fake_now', (clock_timestamp() + make_interval("
            "secs => %s))::text, false)",
            [seconds],
        )
        return conn.execute(
            "select job_id::text, kind, epoch, attempts, state from ticketiq.sweep_jobs('test')"
        ).fetchall()


def pages_at_vendor(stack: Stack, job_id: str) -> dict[int, list[str | None]]:
    """Per page of a source sync, who recorded it at the vendor (one entry per comment)."""
    pages: dict[int, list[str | None]] = {}
    for request in stack.vendor.requests("jira", effect="created"):
        key = request.get("key") or ""
        if key.startswith(f"{job_id}:"):
            pages.setdefault(int(key.rsplit(":", 1)[1]), []).append(requester(request))
    return pages


def job_audit(stack: Stack, job_id: str) -> list[tuple[str, int, str]]:
    return [
        (event, epoch, actor)
        for event, epoch, actor in stack.query(
            "select event, epoch, actor from ticketiq.audit where detail ->> 'job_id' = %s "
            "order by audit_id",
            job_id,
        )
    ]


# -- a process dies: resumable jobs come back, the others are failed -----------------------


def test_killed_source_sync_is_finished_by_another_process_from_its_checkpoint(
    stack: Stack,
) -> None:
    pages = 8
    victim = spawn_jobs(stack, "victim", "--kinds", "source_sync")
    job_id = enqueue(stack, "source_sync", {"pages": pages, "delay": 0.25}, resumable=True)
    victim.wait_event("job_step", job_id=job_id, page=3)
    time.sleep(0.1)  # mid page 4: sleeping, or already recording it
    victim.kill()
    assert victim.popen.returncode == KILLED

    before = job(stack, job_id)
    assert before["state"] == "running" and before["holder"] == "victim"
    done = before["progress"]["pages_done"]
    assert done in (2, 3), before  # page 3 noted; its checkpoint may not have committed

    assert sweep_jobs_as_if_later(stack) == [(job_id, "source_sync", 2, 1, "queued")]
    queued = job(stack, job_id)
    assert (queued["state"], queued["holder"], queued["progress"]) == (
        "queued", None, {"pages_done": done},
    )

    survivor = spawn_jobs(stack, "survivor", "--kinds", "source_sync")
    claimed = survivor.wait_event("job_claimed", job_id=job_id)
    assert (claimed["epoch"], claimed["attempts"], claimed["progress"]) == (
        3, 1, {"pages_done": done},
    )
    assert survivor.wait_event("job_step", job_id=job_id)["resumed_from"] == done
    completed = survivor.wait_event("job_completed", job_id=job_id, timeout=30)
    assert completed["result"] == {"pages": pages, "issue": "SYNC-1"}

    after = job(stack, job_id)
    assert (after["state"], after["epoch"], after["attempts"], after["progress"]) == (
        "completed", 3, 1, {"pages_done": pages},
    )
    assert after["result"] == {"pages": pages, "issue": "SYNC-1"}

    # Counted at the vendor: every page once, but the one in flight at the kill,
    # which may have landed before the kill and is then recorded again.
    recorded = pages_at_vendor(stack, job_id)
    assert sorted(recorded) == list(range(1, pages + 1))
    in_flight = done + 1
    for page, by in recorded.items():
        if page <= done:
            assert by == ["victim"], (page, recorded)
        elif page == in_flight:
            assert by in (["survivor"], ["victim", "survivor"]), (page, recorded)
        else:
            assert by == ["survivor"], (page, recorded)
    assert sum(len(by) for by in recorded.values()) <= pages + 1

    assert job_audit(stack, job_id) == [
        ("job.requeued", 2, "test"),
        ("job.completed", 3, "survivor"),
    ]


def test_killed_fine_tune_resumes_from_its_last_epoch(stack: Stack) -> None:
    victim = spawn_jobs(stack, "victim", "--kinds", "fine_tune")
    job_id = enqueue(stack, "fine_tune", {"epochs": 6, "delay": 0.2}, resumable=True)
    victim.wait_event("job_step", job_id=job_id, epoch=2)
    victim.kill()
    done = job(stack, job_id)["progress"]["epochs_done"]
    assert done in (1, 2)

    assert sweep_jobs_as_if_later(stack) == [(job_id, "fine_tune", 2, 1, "queued")]
    survivor = spawn_jobs(stack, "survivor", "--kinds", "fine_tune")
    survivor.wait_event("job_completed", job_id=job_id, timeout=30)
    trained = [e["epoch"] for e in survivor.find("job_step", job_id=job_id) if "epoch" in e]
    assert trained == list(range(done + 1, 7)), trained
    after = job(stack, job_id)
    assert (after["state"], after["progress"]["epochs_done"], after["attempts"]) == (
        "completed", 6, 1,
    )
    # the loss went on from the checkpoint: halved once per epoch from 1.0
    assert after["result"]["loss"] == pytest.approx(0.5**6)


@pytest.mark.parametrize(
    ("kind", "payload", "unit"),
    [
        ("classifier_training", {"epochs": 30, "delay": 0.2}, "epoch"),
        ("red_team", {"probes": 30, "delay": 0.2}, "probe"),
    ],
)
def test_killed_job_that_is_not_resumable_is_failed_interrupted_and_never_run_again(
    stack: Stack, kind: str, payload: dict[str, Any], unit: str,
) -> None:
    victim = spawn_jobs(stack, "victim", "--kinds", kind)
    job_id = enqueue(stack, kind, payload, resumable=False)
    victim.wait_event("job_step", job_id=job_id, **{unit: 2})
    victim.kill()

    assert sweep_jobs_as_if_later(stack) == [(job_id, kind, 2, 1, "failed")]
    failed = job(stack, job_id)
    assert failed["state"] == "failed"
    assert failed["failure_reason"].startswith("interrupted: "), failed
    assert "held by victim" in failed["failure_reason"]
    assert failed["finished_at"] is not None and failed["holder"] is None
    assert job_audit(stack, job_id) == [("job.interrupted", 2, "test")]

    # A worker for the kind is up and runs new jobs of it, but never the failed one.
    survivor = spawn_jobs(stack, "survivor", "--kinds", kind)
    fresh = enqueue(stack, kind, {**payload, "epochs": 1, "probes": 1, "delay": 0.0},
                    resumable=False)
    survivor.wait_event("job_completed", job_id=fresh, timeout=30)
    time.sleep(0.5)
    assert survivor.find("job_claimed", job_id=job_id) == []
    assert job(stack, job_id)["state"] == "failed"
    assert job(stack, job_id)["epoch"] == 2
    assert sweep_jobs_as_if_later(stack) == []


def test_leader_process_takes_back_a_killed_workers_jobs_on_the_real_clock(stack: Stack) -> None:
    """No fake clock: the survivor sweeps as a leader would, every 0.3 s, with 2 s leases."""
    victim = spawn_jobs(stack, "victim", "--kinds", "source_sync,red_team", **FAST)
    sync = enqueue(stack, "source_sync", {"pages": 30, "delay": 0.1}, resumable=True)
    probe = enqueue(stack, "red_team", {"probes": 50, "delay": 0.1}, resumable=False)
    victim.wait_event("job_step", job_id=sync, page=2)
    victim.wait_event("job_step", job_id=probe, probe=2)
    survivor = spawn_jobs(stack, "survivor", "--kinds", "source_sync,red_team",
                          "--sweep-interval", "0.3", **FAST)
    victim.kill()
    killed_at = time.time()

    swept = survivor.wait_event("job_swept", job_id=sync, timeout=10)
    assert swept["state"] == "queued"
    assert survivor.wait_event("job_swept", job_id=probe, timeout=10)["state"] == "failed"
    survivor.wait_event("job_completed", job_id=sync, timeout=30)
    # the lease (2 s) lapses, then at most one sweep tick (0.3 s)
    assert swept["seen_at"] - killed_at < 2.0 + 1.5

    assert job(stack, sync)["state"] == "completed"
    assert job(stack, probe)["state"] == "failed"
    assert survivor.find("job_claimed", job_id=probe) == []
    recorded = pages_at_vendor(stack, sync)
    assert sorted(recorded) == list(range(1, 31))
    assert sum(len(by) for by in recorded.values()) <= 31


# -- a stalled worker is fenced ----------------------------------------------------------------


def test_stalled_job_worker_cannot_checkpoint_after_the_sweep(stack: Stack) -> None:
    # A renewal every 14 s: after SIGCONT the stalled worker reaches its next
    # checkpoint before its next renewal tells it the job is gone, so it is the
    # database's fence that refuses it (its own deadline, 29 s, has not passed).
    slow_renewal = {"TICKETIQ_LEASE_TTL": "30", "TICKETIQ_RENEW_INTERVAL": "14"}
    stalled = spawn_jobs(stack, "stalled", "--kinds", "source_sync", **slow_renewal)
    job_id = enqueue(stack, "source_sync", {"pages": 10, "delay": 0.3}, resumable=True)
    stalled.wait_event("job_step", job_id=job_id, page=2)
    stalled.signal(signal.SIGSTOP)
    try:
        time.sleep(0.2)
        done = job(stack, job_id)["progress"]["pages_done"]
        assert sweep_jobs_as_if_later(stack) == [(job_id, "source_sync", 2, 1, "queued")]
        survivor = spawn_jobs(stack, "survivor", "--kinds", "source_sync")
        survivor.wait_event("job_claimed", job_id=job_id)
        survivor_step = survivor.wait_event("job_step", job_id=job_id)
        assert survivor_step["resumed_from"] == done
    finally:
        stalled.signal(signal.SIGCONT)

    lost = stalled.wait_event("job_lost", job_id=job_id, timeout=15)
    assert "checkpoint refused" in lost["reason"] and "epoch" in lost["reason"], lost
    # it went no further than the page it was on
    stalled_pages = [e["page"] for e in stalled.find("job_step", job_id=job_id) if "page" in e]
    assert max(stalled_pages) <= done + 1
    assert stalled.find("job_completed", job_id=job_id) == []

    survivor.wait_event("job_completed", job_id=job_id, timeout=30)
    after = job(stack, job_id)
    assert (after["state"], after["epoch"], after["progress"]) == (
        "completed", 3, {"pages_done": 10},
    )
    recorded = pages_at_vendor(stack, job_id)
    assert sorted(recorded) == list(range(1, 11))
    duplicated = {page for page, by in recorded.items() if len(by) > 1}
    assert duplicated <= {done + 1}, recorded
    assert all(by.count("stalled") <= 1 for by in recorded.values())
    assert all(page <= done + 1 for page, by in recorded.items() if "stalled" in by)

    assert stalled.terminate(30) == 0


# -- in-process: self-fencing, one renewal statement, races, errors -------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_past_its_deadline_a_worker_sends_no_checkpoint_and_no_finish(db_url: str) -> None:
    db = await TicketIQ.connect(db_url)
    clock = FakeClock()
    reached = asyncio.Event()
    go_on = asyncio.Event()
    events: list[tuple[str, dict[str, Any]]] = []

    async def handler(ctx: JobContext) -> dict[str, Any]:
        reached.set()
        await go_on.wait()
        await ctx.checkpoint({"pages_done": 1})
        return {"never": True}

    worker = JobWorker(db, "w1", {"source_sync": handler}, ttl=30, renew_interval=20, margin=1,
                       poll_interval=0.05, clock=clock,
                       on_event=lambda e, f: events.append((e, f)))
    store = JobStore(db)
    try:
        queued = await store.enqueue("source_sync", {"pages": 3})
        await worker.start()
        await asyncio.wait_for(reached.wait(), 10)
        clock.now += 29.0  # the claim's deadline: sent + 30 - 1
        go_on.set()
        lost = await _wait_for(events, "job_lost")
        assert "could have lapsed" in lost["reason"]
        assert db.statements["checkpoint_job"] == 0
        assert db.statements["finish_job"] == 0
        assert db.statements["fail_job"] == 0
        # The database still thinks it runs (its lease has not lapsed by the
        # database clock); the worker dropped it and renews it no more.
        row = await store.get(queued.job_id)
        assert (row.state, row.holder, row.progress) == ("running", "w1", {})
        assert worker.jobs == {}
    finally:
        await worker.stop(drain_timeout=1)
        await db.close()


async def test_the_leases_of_all_running_jobs_are_renewed_in_one_statement(db_url: str) -> None:
    db = await TicketIQ.connect(db_url)
    release = asyncio.Event()

    events: list[tuple[str, dict[str, Any]]] = []

    async def handler(ctx: JobContext) -> None:
        await release.wait()

    worker = JobWorker(db, "w1", {"fine_tune": handler}, ttl=30, renew_interval=10, margin=1,
                       poll_interval=0.05, on_event=lambda e, f: events.append((e, f)))
    store = JobStore(db)
    try:
        ids = [(await store.enqueue("fine_tune", {"n": n})).job_id for n in range(3)]
        await worker.start()
        await _until(lambda: len(worker.jobs) == 3)
        before = {i: (await store.get(i)).lease_expires_at for i in ids}
        sent = db.statements["renew_leases"]
        assert await worker.renew_once() == []
        assert db.statements["renew_leases"] == sent + 1
        for i in ids:
            assert (await store.get(i)).lease_expires_at > before[i]
        # a job swept away under the worker is stopped at once by the next renewal
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            await conn.execute("update ticketiq.config set fake_clock_allowed = true")
            await conn.execute("set ticketiq.fake_now = '2999-01-01 00:00:00+00'")
            swept = await JobStore(db).sweep("leader", conn=conn)
        assert {s.job_id for s in swept} == set(ids)
        assert sorted(await worker.renew_once()) == sorted(ids)
        await _until(
            lambda: {f["job_id"] for e, f in events if e == "job_lost"} == set(map(str, ids))
        )
        assert db.statements["finish_job"] == 0
        assert db.statements["checkpoint_job"] == 0
    finally:
        release.set()
        await worker.stop(drain_timeout=1)
        await db.close()


async def test_two_workers_claim_each_job_once(db_url: str) -> None:
    db = await TicketIQ.connect(db_url, max_size=12)
    claims: Counter[str] = Counter()

    def sink(event: str, fields: dict[str, Any]) -> None:
        if event == "job_claimed":
            claims[fields["job_id"]] += 1

    handlers = scripted_handlers(None)
    workers = [
        JobWorker(db, f"w{n}", {"fine_tune": handlers["fine_tune"]}, ttl=10, renew_interval=2,
                  margin=1, poll_interval=0.02, max_jobs=3, on_event=sink)
        for n in range(2)
    ]
    store = JobStore(db)
    try:
        ids = [
            str((await store.enqueue("fine_tune", {"epochs": 2, "delay": 0.01})).job_id)
            for _ in range(12)
        ]
        for worker in workers:
            await worker.start()
        await _until(lambda: sum(w.completed for w in workers) == 12, within=30)
        assert claims == Counter({i: 1 for i in ids})
        assert all(w.completed > 0 for w in workers)
        for i in ids:
            row = await store.get(uuid.UUID(i))
            assert (row.state, row.epoch, row.attempts) == ("completed", 1, 0)
    finally:
        for worker in workers:
            await worker.stop(drain_timeout=1)
        await db.close()


async def test_a_handler_error_fails_the_job_with_its_reason_and_it_is_not_retried(
    db_url: str,
) -> None:
    db = await TicketIQ.connect(db_url)
    events: list[tuple[str, dict[str, Any]]] = []
    worker = JobWorker(db, "w1", {"fine_tune": scripted_handlers(None)["fine_tune"]}, ttl=10,
                       renew_interval=2, margin=1, poll_interval=0.05,
                       on_event=lambda e, f: events.append((e, f)))
    store = JobStore(db)
    try:
        queued = await store.enqueue("fine_tune", {"epochs": 4, "delay": 0.01, "fail_at": 3})
        await worker.start()
        failed = await _wait_for(events, "job_failed")
        assert failed["reason"] == "ScriptedJobError: scripted failure at unit 3"
        row = await store.get(queued.job_id)
        assert (row.state, row.failure_reason, row.progress["epochs_done"]) == (
            "failed", "ScriptedJobError: scripted failure at unit 3", 2,
        )
        assert await store.claim("w2", 8) is None
        assert await worker.sweep_once() == []
    finally:
        await worker.stop(drain_timeout=1)
        await db.close()


async def test_bad_input_gives_typed_errors(db_url: str) -> None:
    db = await TicketIQ.connect(db_url)
    store = JobStore(db)
    try:
        with pytest.raises(errors.UnknownJob) as unknown:
            await store.get(uuid.uuid4())
        assert unknown.value.sqlstate == "TQ010"
        with pytest.raises(errors.UnknownJob):
            await store.checkpoint(uuid.uuid4(), 1, {"pages_done": 1})
        with pytest.raises(errors.UnknownJob):
            await store.finish(uuid.uuid4(), 1, {})
        with pytest.raises(errors.InvalidPayload):
            await store.enqueue("", {}, resumable=True)
        with pytest.raises(errors.InvalidPayload):
            await store.enqueue("source_sync", [1], resumable=True)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="resumable"):
            await store.enqueue("mystery", {})
        with pytest.raises(errors.InvalidPayload):
            await store.claim("w1", 0)
        with pytest.raises(errors.InvalidPayload):
            await store.claim("w1", 8, [])
        with pytest.raises(errors.InvalidPayload):
            await store.renew("w1", [(uuid.uuid4(), 1)], -1)
        with pytest.raises(errors.InvalidPayload):
            await store.sweep("", 10)

        first = await store.enqueue("source_sync", {"pages": 1}, idempotency_key="sync-7")
        again = await store.enqueue("source_sync", {"pages": 9}, idempotency_key="sync-7")
        assert (again.job_id, first.created, again.created) == (first.job_id, True, False)

        claimed = await store.claim("w1", 8)
        assert claimed is not None and claimed.job_id == first.job_id and claimed.epoch == 1
        with pytest.raises(errors.InvalidPayload):
            await store.checkpoint(claimed.job_id, 1, [1, 2])  # type: ignore[arg-type]
        with pytest.raises(errors.InvalidPayload):
            await store.fail(claimed.job_id, 1, "")
        with pytest.raises(errors.Fenced):
            await store.checkpoint(claimed.job_id, 2, {"pages_done": 1})
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as later:
            await later.execute("update ticketiq.config set fake_clock_allowed = true")
            await later.execute(
                "select set_config('ticketiq.fake_now', (clock_timestamp()"
                " + interval '1 hour')::text, false)"
            )
            with pytest.raises(errors.LeaseLapsed):
                await store.checkpoint(claimed.job_id, 1, {"pages_done": 1}, conn=later)
        ended = await store.finish(claimed.job_id, 1, {"pages": 1})
        assert ended.state == "completed"
        with pytest.raises(errors.NotOwner) as twice:  # TQ006: the job is not running
            await store.finish(claimed.job_id, 1, {"pages": 1})
        assert twice.value.sqlstate == "TQ006"
        assert (await store.get(first.job_id)).result == {"pages": 1}
        with pytest.raises(errors.RunNotRunning):
            await store.checkpoint(claimed.job_id, 1, {"pages_done": 1})
    finally:
        await db.close()


async def _until(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() >= deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


async def _wait_for(events: list[tuple[str, dict[str, Any]]], kind: str,
                    within: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        for event, fields in events:
            if event == kind:
                return fields
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {kind} event: {events}")
        await asyncio.sleep(0.02)


async def test_ready_waits_for_the_liveness_token_and_learns_the_job_was_lost(
    db_url: str,
) -> None:
    """A job's outside write waits for a fresh liveness confirmation (``JobContext.ready``).

    The handler's first write goes while the process's token is confirmed.  Then the job
    is taken over (its epoch moves, as a peer's claim after the sweep moves it) and the
    process's liveness session is ended: its lease still looks good on its own clock, so
    ``check()`` alone would let the second write go.  ``ready()`` waits instead; the token
    is held again, the job leases are renewed first, the job is found lost, and the
    handler stops without its second write.
    """
    from ticketiq_pg.runtime.liveness import Liveness

    db = await TicketIQ.connect(db_url)
    await db.processes.register_process("w1")
    liveness = Liveness(db, db_url, "w1", interval=0.05)
    events: list[tuple[str, dict[str, Any]]] = []
    writes: list[int] = []
    first_done = asyncio.Event()
    go_on = asyncio.Event()

    async def handler(ctx: JobContext) -> dict[str, Any]:
        await ctx.ready()
        writes.append(1)
        first_done.set()
        await go_on.wait()
        await ctx.ready()
        writes.append(2)
        return {}

    worker = JobWorker(db, "w1", {"source_sync": handler}, ttl=30, renew_interval=20,
                       margin=1, poll_interval=0.02, liveness=liveness,
                       on_event=lambda e, f: events.append((e, f)))
    liveness.books.append(worker.leases)
    store = JobStore(db)
    try:
        liveness.start()
        assert await liveness.wait_ok(5)
        queued = await store.enqueue("source_sync", {}, resumable=True)
        await worker.start()
        await asyncio.wait_for(first_done.wait(), 10)
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            await conn.execute("update ticketiq.jobs set epoch = epoch + 1, holder = 'w2'"
                               " where job_id = %s", [queued.job_id])
            drops = liveness.drops
            await conn.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                               " where application_name = 'ticketiq-liveness:w1'")
        await _until(lambda: liveness.drops > drops, within=5)
        go_on.set()
        lost = await _wait_for(events, "job_lost")
        assert lost["job_id"] == str(queued.job_id)
        assert writes == [1]
        assert liveness.holds >= 2  # the token was held again before anything went on
    finally:
        go_on.set()
        await worker.stop(drain_timeout=1)
        await liveness.stop()
        await db.close()


async def test_a_job_claimed_again_here_stops_the_older_attempt_of_it(db_url: str) -> None:
    """The worker claims a job again while its own older attempt still runs (that attempt's
    lease lapsed and the job was queued again): the older attempt is fenced and stopped like
    one a renewal found lost, and its end leaves the newer attempt's lease in the worker's
    care (renewed, and marked lost if the database says so)."""
    db = await TicketIQ.connect(db_url)
    events: list[tuple[str, dict[str, Any]]] = []
    attempts: list[int] = []
    release = asyncio.Event()

    async def handler(ctx: JobContext) -> dict[str, Any]:
        attempts.append(ctx.epoch)
        if len(attempts) == 1:
            await asyncio.Event().wait()  # stuck until stopped
        await release.wait()
        await ctx.ready()
        return {"epoch": ctx.epoch}

    worker = JobWorker(db, "w1", {"source_sync": handler}, ttl=30, renew_interval=20,
                       margin=1, poll_interval=0.02,
                       on_event=lambda e, f: events.append((e, f)))
    store = JobStore(db)
    try:
        queued = await store.enqueue("source_sync", {}, resumable=True)
        await worker.start()
        await _until(lambda: len(attempts) == 1)
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            # What the sweep does to a lapsed job: queued again, a new epoch, no holder.
            await conn.execute(
                "update ticketiq.jobs set state = 'queued', holder = null,"
                " lease_expires_at = null, epoch = epoch + 1 where job_id = %s",
                [queued.job_id],
            )
        lost = await _wait_for(events, "job_lost")
        assert lost["epoch"] == attempts[0]
        assert lost["reason"] == f"claimed again at epoch {attempts[1]}"
        await asyncio.sleep(0.1)  # the older attempt has ended ...
        held = worker.jobs[queued.job_id]  # ... and the newer one is still in the worker's care
        assert (held.epoch, held.lost) == (attempts[1], None)
        renewed = await store.renew("w1", [(queued.job_id, held.epoch)], 30)
        assert [r.held for r in renewed] == [True]
        release.set()
        done = await _wait_for(events, "job_completed")
        assert done["epoch"] == attempts[1] > attempts[0]
        assert (await store.get(queued.job_id)).state == "completed"
        assert worker.jobs == {}
    finally:
        release.set()
        await worker.stop(drain_timeout=1)
        await db.close()


async def test_no_job_is_claimed_while_the_liveness_token_is_unconfirmed(db_url: str) -> None:
    """A process whose token is not confirmed claims no job: a peer that found its session
    ended would cut the new claim's lease at once, costing the job an attempt."""
    from ticketiq_pg.runtime.liveness import Liveness

    db = await TicketIQ.connect(db_url)
    await db.processes.register_process("w1")
    liveness = Liveness(db, db_url, "w1", interval=0.05)  # not holding its token yet

    async def handler(ctx: JobContext) -> dict[str, Any]:
        return {}

    worker = JobWorker(db, "w1", {"source_sync": handler}, ttl=30, renew_interval=20,
                       margin=1, poll_interval=0.02, liveness=liveness)
    store = JobStore(db)
    try:
        queued = await store.enqueue("source_sync", {}, resumable=True)
        assert await worker.claim_available() == 0
        assert (await store.get(queued.job_id)).state == "queued"
        liveness.start()
        await _until(liveness.may_call, within=5)
        assert await worker.claim_available() == 1
        await _until(lambda: worker.completed == 1)
        assert (await store.get(queued.job_id)).state == "completed"
    finally:
        await worker.stop(drain_timeout=1)
        await liveness.stop()
        await db.close()


async def test_the_driver_queues_a_job_once_per_idempotency_key(db_url: str) -> None:
    db = await TicketIQ.connect(db_url, max_size=2)
    try:
        first = await db.jobs.enqueue("backlog", {"tickets": ["T-1"]}, resumable=True,
                                      idempotency_key="backlog:monday")
        again = await db.jobs.enqueue("backlog", {"tickets": ["T-2"]}, resumable=True,
                                      idempotency_key="backlog:monday")
        assert (first.created, again.created) == (True, False)
        assert again.job_id == first.job_id
        job = await db.jobs.get(first.job_id)
        assert (job.kind, job.state, job.payload) == ("backlog", "queued", {"tickets": ["T-1"]})
        async with db.pool.connection() as conn:
            (count,) = await (await conn.execute("select count(*) from ticketiq.jobs")).fetchone()
        assert count == 1
        with pytest.raises(ValueError, match="resumable"):
            await db.jobs.enqueue("backlog", {})
    finally:
        await db.close()
