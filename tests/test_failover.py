"""PostgreSQL itself fails over: a synchronous standby takes over and no checkpoint is lost.

Every test runs on a private primary and synchronous streaming standby of its own
(:class:`~harness.replicated.ReplicatedCluster`), in a database it creates on
the primary, and reaches it through the pair's multi-host URL
(``target_session_attrs=read-write``).  A failover SIGKILLs the primary's postmaster
and its processes and promotes the standby; the app processes are never restarted.

* The in-doubt mark survives: the primary dies between a write's in-doubt mark and its
  settlement, and after promotion the write is settled once, counted at the vendor.
* Ambiguous commits: statements that committed on the primary and reached the standby,
  but whose answer died with the primary, are sent again by the driver and applied
  once (the function replays, or the driver recognises its own first attempt).  To
  hold a commit in exactly that state, the database commits with
  ``synchronous_commit = remote_apply`` while the standby's replay is paused: the
  commit is flushed on both, and unacknowledged, until the primary is killed.
* I13: a run whose statement fails because the primary vanished is finished by its
  own, still living, process after promotion, never handed over (loss count 0).
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from helpers import body, call
from procs import KILLED, start_stack

from harness.replicated import ReplicatedCluster
from ticketiq_pg.db import retry
from ticketiq_pg.db.driver import RESUME_CHANNEL, TicketIQ
from ticketiq_pg.db.listener import Listener, Wakeup
from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.db.sqlfiles import sql_dir
from ticketiq_pg.seal import Sealer
from ticketiq_pg.testing import wait_for
from ticketiq_pg.testing.postgres import temporary_database

pytestmark = pytest.mark.slow

T = TypeVar("T")

SEALER = Sealer({"k1": b"ticketiq-failover-test-key-01"})

#: The run writes a test waits to see cut off: what a run's own process writes of it,
#: alone or grouped (a step's calls made at once are marked in one ``mark_calls_in_doubt``).
RUN_WRITES = (
    "write_checkpoint", "write_checkpoints", "mark_in_doubt", "mark_calls_in_doubt",
    "record_attempt", "record_outcome", "record_resume", "record_resumes", "seal_answer",
    "hand_on_answer",
)


# -- the pair and a database on it ----------------------------------------------------


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicatedCluster]:
    cluster = ReplicatedCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def db(pair: ReplicatedCluster) -> Iterator[str]:
    """A fresh database with the schema, on the current primary, with a synchronous standby."""
    if pair.standby is None:
        pair.rebuild_standby()
    assert [(s, sync) for _, s, sync in pair.replication()] == [("streaming", "sync")]
    with temporary_database(pair.admin_url, prefix="tiq_failover") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            install_sync(conn)
        yield url


def wait_until(what: str, check: Callable[[], T], timeout: float = 60.0) -> T:
    return wait_for(what, check, timeout, interval=0.02)


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else []


def dbname(url: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(url)["dbname"])


def commit_on_apply(pair: ReplicatedCluster, url: str) -> None:
    """Sessions of ``url`` opened from now on commit once the standby *applied* the commit."""
    query(pair.admin_url, f'alter database "{dbname(url)}" set synchronous_commit = remote_apply')


def pause_replay(pair: ReplicatedCluster) -> None:
    """From now on such a commit is flushed on both nodes but never acknowledged.

    With the standby's replay paused a ``remote_apply`` commit waits for good, and the
    primary's death cuts it off: the ambiguous commit, made on purpose.  (Promotion ends
    the pause and replays everything received.)
    """
    standby = pair.standby
    assert standby is not None
    query(standby.admin_url, "select pg_wal_replay_pause()")


def sync_waiters(pair: ReplicatedCluster, url: str, like: str = "%") -> list[str]:
    """The statements of ``url``'s sessions waiting for the standby (committed, unanswered)."""
    return [q for (q,) in query(
        pair.primary.admin_url,
        "select query from pg_stat_activity where datname = %s and wait_event = 'SyncRep' "
        "and query like %s", dbname(url), like)]


def standby_has_it_all(pair: ReplicatedCluster) -> bool:
    """Every WAL record the primary flushed is flushed on the standby too."""
    ((flushed,),) = query(pair.primary.admin_url, "select pg_current_wal_flush_lsn()::text")
    standby = pair.standby
    assert standby is not None
    ((behind,),) = query(standby.admin_url,
                         "select pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_receive_lsn())", flushed)
    return behind <= 0


def is_stopped(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2:].split()[0] == "T"


# -- every function the driver calls is classified ------------------------------------


def test_every_function_has_a_retry_rule() -> None:
    """A function nobody classified is never repeated once sent; say which it is."""
    functions = {p.stem for p in (sql_dir() / "functions").glob("*.sql")
                 if not p.stem.startswith("_")}
    functions.discard("answers_write_once")  # a trigger function, not a call
    assert sorted(functions - set(retry.RULES)) == []
    assert sorted(set(retry.RULES) - functions) == []
    assert retry.may_repeat("write_checkpoint", ())
    assert not retry.may_repeat("adopt_run", ())
    assert not retry.may_repeat("claim_entries", ())
    assert retry.may_repeat("enqueue_job", ("k", {}, True, "key-1"))
    assert not retry.may_repeat("enqueue_job", ("k", {}, True, None))
    assert not retry.may_repeat("no_such_function", ())


def test_the_failover_doc_lists_every_rule() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "failover.md").read_text()
    listed = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[1] in set(retry.Repeat):
            listed[cells[0].strip("`")] = cells[1]
    assert listed == {name: r.repeat.value for name, r in retry.RULES.items()}


def test_the_pair_fails_over_and_takes_a_new_standby(pair: ReplicatedCluster, db: str) -> None:
    old_primary = pair.primary.port
    query(db, "create table kept (x int)")
    query(db, "insert into kept values (1)")  # acknowledged: on both nodes
    timing = pair.failover()
    assert timing["writable"] < 30
    assert pair.primary.port != old_primary and pair.standby is None
    # With no standby the new primary must not wait for one: commits go through.
    assert query(pair.primary.admin_url, "show synchronous_standby_names") == [("",)]
    query(db, "insert into kept values (2)")
    assert query(db, "select array_agg(x order by x) from kept") == [([1, 2],)]
    with psycopg.connect(db) as conn:
        assert conn.info.port == pair.primary.port
    pair.rebuild_standby()
    assert pair.standby is not None and pair.standby.port == old_primary
    assert [(s, sync) for _, s, sync in pair.replication()] == [("streaming", "sync")]
    assert query(pair.primary.admin_url, "show synchronous_standby_names") == [
        (pair.sync_names,)]


# -- (a) the primary dies between an in-doubt mark and the call's settlement ----------

# mixed plan, step 1: jira.get_issue (read), incident.create (1st write), jira.comment
# (2nd write).  The judged write is the Jira comment: Jira does not dedupe, so a comment
# made twice lands twice; a call in doubt is read back, never resent.
SETTLE_CASES = [
    # the owner lives: frozen right after the mark (nothing sent), or right after the
    # call returned (sent, its result not yet written down); the primary dies meanwhile
    ("owner_lives", "after_mark@1.2:STOP", "made"),
    ("owner_lives", "after_call@1.3:STOP", "made"),
    # the owner dies with the primary, after the call reached Jira: the mark, committed
    # on both nodes before the call, makes the resume read it back instead of resending
    ("owner_dies", "after_call@1.3", "read_back"),
]


@pytest.mark.parametrize(("owner", "fault", "settlement"), SETTLE_CASES,
                         ids=[f"{o}-{f.partition(':')[0]}" for o, f, _ in SETTLE_CASES])
def test_a_write_in_doubt_is_settled_once_after_the_primary_fails_over(
    pair: ReplicatedCluster, db: str, tmp_path: Path, owner: str, fault: str, settlement: str,
) -> None:
    stack = start_stack(db, tmp_path / "stack")
    # Generous leases: a frozen owner must still hold its run after the failover.
    stack.settings.update(TICKETIQ_LEASE_TTL="30", TICKETIQ_RENEW_INTERVAL="2")
    try:
        victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "21", "--steps", "2",
                             "--plan", "mixed", faults=fault)
        run_id = victim.read_event("started")["run_id"]
        if owner == "owner_lives":
            wait_until("the owner to stop at the fault point", lambda: is_stopped(victim.pid))
        else:
            assert victim.wait(60) == KILLED, victim.stderr

        # The mark is committed, so it is on the standby: the primary dies now.
        ((state, marked_epoch, step_key),) = query(
            db, "select state, marked_epoch, step_key from ticketiq.calls "
                "where run_id = %s and tool = 'jira.comment'", run_id)
        assert (state, marked_epoch) == ("in_doubt", 1)
        sent_before = [r for r in stack.vendor.requests("jira")
                       if r["method"] == "POST" and r["key"] == step_key]
        assert len(sent_before) == (1 if "after_call" in fault else 0)
        pair.failover()

        if owner == "owner_lives":
            victim.signal(signal.SIGCONT)
            assert victim.wait(90) == 0, victim.stderr
            (outcome,) = victim.outcomes()
        else:
            assert len(stack.sweep_as_if_later()) == 1
            resumer = stack.run("--exit-after", "1", timeout=90)
            assert resumer.popen.returncode == 0, resumer.stderr
            (outcome,) = resumer.outcomes()
        assert (outcome["run_id"], outcome["status"]) == (run_id, "completed")

        # Settled once, on the new primary, with the mark the old one committed.
        ((state, marked_epoch, how),) = query(
            db, "select state, marked_epoch, settlement from ticketiq.calls "
                "where run_id = %s and tool = 'jira.comment'", run_id)
        assert (marked_epoch, how) == (1, settlement)
        assert state == ("done" if settlement == "made" else "settled")
        comments = [r for r in stack.vendor.requests("jira")
                    if r["method"] == "POST" and r["key"] == step_key]
        assert [r["effect"] for r in comments] == ["created"]
        assert stack.duplicates() == {}

        ((status, epoch, losses),) = query(
            db, "select status, epoch, loss_count from ticketiq.runs where run_id = %s", run_id)
        resumes = query(db, "select detail from ticketiq.audit where run_id = %s "
                            "and event = 'agent.run.crash_resumed'", run_id)
        if owner == "owner_lives":
            # Its own process went on: never lost, never taken over.
            assert (status, epoch, losses) == ("completed", 1, 0)
            assert resumes == []
        else:
            assert (status, losses) == ("completed", 1)
            ((detail,),) = resumes
            settled = {s["call_id"]: s["settlement"] for s in detail["settlements"]}
            assert sorted(settled.values()).count("read_back") == 1
        # I8: no model step asked twice.
        assert set(stack.model_asks(run_id).values()) == {1}
    finally:
        stack.close()


# -- (b) statements cut off by the failover are applied once --------------------------


async def _started(tiq: TicketIQ, ttl: float = 300.0, **kwargs: Any) -> uuid.UUID:
    run = await tiq.start_run(holder="p1", owner="alice", run_as="alice", channel="teams",
                              entry_point="failover.test", may_wait=False, ttl=ttl, **kwargs)
    assert run.epoch == 1
    return run.run_id


def _sealed(kind: str, run_id: uuid.UUID, step: int, content: Any) -> tuple[str, str]:
    return SEALER.seal(kind, run_id, step, content)


#: The calls cut off together by one failover.  A commit that NOTIFYs holds
#: PostgreSQL's notify queue lock until it is acknowledged, synchronous standby wait
#: included, so two of them never wait for the standby at once: each goes alone.
WAVES = {
    "steps": ("write_checkpoint", "write_checkpoints", "mark_in_doubt", "record_outcome",
              "seal_answer",
              "record_resume", "record_resumes", "start_run", "start_run_keyed",
              "claim_entries"),
    "hand_on_answer": ("hand_on_answer",),
    "fail_run": ("fail_run",),
    "release_run": ("release_run",),
}


@pytest.mark.parametrize("wave", list(WAVES))
async def test_statements_cut_off_by_a_failover_are_applied_once(
    pair: ReplicatedCluster, db: str, wave: str
) -> None:
    checkpoint = body(call("c1"))
    answer = {"text": "done"}
    async with await TicketIQ.connect(db, min_size=1, max_size=16) as tiq:
        # -- the runs, each one statement away from the one the failover cuts off --
        a = await _started(tiq)  # write_checkpoint
        grouped = [await _started(tiq) for _ in range(2)]  # write_checkpoints (group commit)
        b = await _started(tiq)  # mark_in_doubt
        c = await _started(tiq)  # record_outcome
        d = await _started(tiq)  # seal_answer
        e = await _started(tiq)  # hand_on_answer
        g = await _started(tiq)  # fail_run
        h = await _started(tiq)  # release_run
        f = await _started(tiq, ttl=3)  # record_resume, once lapsed and adopted
        # record_resumes (group commit), once lapsed and adopted
        resumed = [await _started(tiq, ttl=3) for _ in range(2)]
        lapses = time.monotonic() + 3
        for run in (f, *resumed, b, c):
            await tiq.write_checkpoint(run, 1, 1, checkpoint, *_sealed("checkpoint", run, 1,
                                                                       checkpoint))
        for run in (f, *resumed, c):
            await tiq.mark_in_doubt(run, 1, 1, "c1", "write")
        await tiq.seal_answer(e, 1, 1, answer, *_sealed("answer", e, 1, answer), 3600)
        await asyncio.sleep(max(0.0, lapses - time.monotonic()) + 0.2)
        assert sorted(r.run_id for r in await tiq.processes.sweep_lapsed("test")) == sorted(
            [f, *resumed])
        adopted = await tiq.adopt_run("p2", 300, f)
        assert adopted is not None
        epochs = [(await tiq.adopt_run("p2", 300, r)).epoch for r in resumed]  # type: ignore[union-attr]
        await tiq.entries.accept_entry("webhook", "failover-1", {"seed": 1}, owner="alice",
                               run_as="alice", channel="webhook")
        new_run = uuid.uuid4()

        # -- commits flushed on both nodes, never acknowledged --
        commit_on_apply(pair, db)
        pause_replay(pair)
        async with await TicketIQ.connect(db, min_size=1, max_size=16) as cut:
            calls = {
                "write_checkpoint": lambda: cut.write_checkpoint(
                    a, 1, 1, checkpoint, *_sealed("checkpoint", a, 1, checkpoint)),
                # queued behind a's, they go out together in one write_checkpoints
                "write_checkpoints": lambda: asyncio.gather(*(cut.write_checkpoint(
                    r, 1, 1, checkpoint, *_sealed("checkpoint", r, 1, checkpoint))
                    for r in grouped)),
                "mark_in_doubt": lambda: cut.mark_in_doubt(b, 1, 1, "c1", "write"),
                "record_outcome": lambda: cut.record_outcome(c, 1, 1, "c1", {"ok": True},
                                                             "made"),
                "seal_answer": lambda: cut.seal_answer(
                    d, 1, 1, answer, *_sealed("answer", d, 1, answer), 3600),
                "hand_on_answer": lambda: cut.hand_on_answer(e, 1),
                "record_resume": lambda: cut.record_resume(
                    f, adopted.epoch,
                    [{"call_id": "c1", "settlement": "unknown", "outcome": None}]),
                # queued behind f's, they go out together in one record_resumes
                "record_resumes": lambda: asyncio.gather(*(cut.record_resume(
                    r, epoch, [{"call_id": "c1", "settlement": "unknown", "outcome": None}])
                    for r, epoch in zip(resumed, epochs, strict=True))),
                "fail_run": lambda: cut.fail_run(g, 1, "the test fails it"),
                "release_run": lambda: cut.release_run(h, 1),
                "start_run": lambda: cut.start_run(
                    holder="p1", owner="alice", run_as="alice", channel="teams",
                    entry_point="failover.new", may_wait=False, ttl=300, run_id=new_run),
                "start_run_keyed": lambda: cut.start_run(
                    holder="p1", owner="alice", run_as="alice", channel="teams",
                    entry_point="failover.keyed", may_wait=False, ttl=300,
                    idempotency_key="failover:keyed"),
                # never repeated: a repeat would claim other entries, or none
                "claim_entries": lambda: cut.entries.claim_entries("p1", 300, 5),
            }
            tasks = {name: asyncio.ensure_future(calls[name]()) for name in WAVES[wave]}
            deadline = time.monotonic() + 60
            while len(await asyncio.to_thread(sync_waiters, pair, db, "%ticketiq.%")) < len(tasks):
                ended = {k: t.exception() or t.result() for k, t in tasks.items() if t.done()}
                assert not ended and time.monotonic() < deadline, (ended, query(
                    pair.primary.admin_url, "select wait_event, left(query, 50) from "
                    "pg_stat_activity where datname = %s", dbname(db)))
                await asyncio.sleep(0.05)
            await asyncio.to_thread(wait_until, "the standby to hold every commit",
                                    lambda: standby_has_it_all(pair))
            assert not any(t.done() for t in tasks.values())

            await asyncio.to_thread(pair.failover)
            done = await asyncio.gather(*tasks.values(), return_exceptions=True)
            results = dict(zip(tasks, done, strict=True))
            retries, recognised = cut.retries, cut.recognised
            cut_batches = cut.checkpoints.batches if cut.checkpoints is not None else 0
            resume_batches = cut.resumes.batches if cut.resumes is not None else 0

    # Each was cut off after its commit and sent again (on a fresh connection to the
    # new primary); none raised, except the one never repeated.
    if "claim_entries" in results:
        assert isinstance(results.pop("claim_entries"), psycopg.OperationalError)
        assert retries["claim_entries"] == 0
    assert {k: v for k, v in results.items() if isinstance(v, BaseException)} == {}
    for name in results:
        assert retries[name.removesuffix("_keyed")] >= 1, name

    def one(sql: str, *params: Any) -> Any:
        ((value,),) = query(db, sql, *params)
        return value

    # The function itself says it saw its own repeat, or the driver recognised its own
    # committed first attempt; and the database holds each effect once.
    if wave == "steps":
        assert results["write_checkpoint"].replayed is True
        # the group's repeat wrote nothing; each then went alone and found its own row
        assert [w.replayed for w in results["write_checkpoints"]] == [True, True]
        assert cut_batches == 1
        assert one("select count(*) from ticketiq.checkpoints where run_id = any(%s)",
                   grouped) == 2
        assert results["mark_in_doubt"].already_marked is True
        assert results["record_outcome"].replayed is True
        assert results["seal_answer"].replayed is True
        assert (recognised["record_resume"], recognised["start_run"]) == (0, 2)
        # the group's repeat recorded nothing twice and returned each resume's own row
        assert resume_batches == 1
        assert [r.run_id for r in results["record_resumes"]] == resumed
        for r, audited in zip(resumed, results["record_resumes"], strict=True):
            assert query(db, "select audit_id, jsonb_array_length(detail -> 'settlements') "
                         "from ticketiq.audit where run_id = %s "
                         "and event = 'agent.run.crash_resumed'", r) == [(audited.audit_id, 1)]
            assert query(db, "select state, settlement from ticketiq.calls where run_id = %s",
                         r) == [("settled", "unknown")]
        # record_resume's repeat returned the audit row its first attempt wrote
        assert results["record_resume"].audit_id == one(
            "select audit_id from ticketiq.audit where run_id = %s"
            " and event = 'agent.run.crash_resumed'", f)
        assert results["start_run"].run_id == new_run
        assert results["start_run"].created is True and results["start_run"].epoch == 1
        assert results["start_run_keyed"].created is True
        assert one("select count(*) from ticketiq.checkpoints where run_id = %s", a) == 1
        assert query(db, "select state, marked_epoch from ticketiq.calls where run_id = %s",
                     b) == [("in_doubt", 1)]
        assert query(db, "select state, settlement from ticketiq.calls where run_id = %s",
                     c) == [("done", "made")]
        assert one("select count(*) from ticketiq.answers where run_id = %s", d) == 1
        assert one("select count(*) from ticketiq.audit where run_id = %s "
                   "and event = 'agent.run.crash_resumed'", f) == 1
        assert one("select count(*) from ticketiq.runs where entry_point = 'failover.new'") == 1
        assert one("select count(*) from ticketiq.runs "
                   "where entry_point = 'failover.keyed'") == 1
        # The entry the unrepeated claim took is committed: held, its run started, by p1.
        assert query(db, "select e.state, r.lease_holder from ticketiq.entries as e "
                         "join ticketiq.runs as r using (run_id) "
                         "where e.sender_id = 'failover-1'") == [("running", "p1")]
    elif wave == "hand_on_answer":
        assert recognised["hand_on_answer"] == 1
        assert results["hand_on_answer"].body == answer
        # the answer it handed on, read back whole: its step and its seal, which verifies
        seal, key_id = _sealed("answer", e, 1, answer)
        assert (results["hand_on_answer"].step, results["hand_on_answer"].seal,
                results["hand_on_answer"].seal_key_id) == (1, seal, key_id)
        assert one("select status from ticketiq.runs where run_id = %s", e) == "completed"
        assert one("select count(*) from ticketiq.audit where run_id = %s "
                   "and event = 'agent.run.completed'", e) == 1
        assert one("select count(*) from ticketiq.transcript_entries where run_id = %s "
                   "and kind = 'answer'", e) == 1
    elif wave == "fail_run":
        assert recognised["fail_run"] == 1
        assert results["fail_run"].status == "failed"
        assert one("select count(*) from ticketiq.audit where run_id = %s "
                   "and event = 'agent.run.failed'", g) == 1
    else:
        assert recognised["release_run"] == 1
        assert results["release_run"].epoch == 2
        assert query(db, "select status, epoch from ticketiq.runs where run_id = %s",
                     h) == [("claimed", 2)]


async def test_the_pool_and_the_listener_come_back_after_a_failover(
    pair: ReplicatedCluster, db: str
) -> None:
    async with await TicketIQ.connect(db, min_size=3, max_size=5) as tiq:
        wakeup = Wakeup([RESUME_CHANNEL])
        listener = Listener(db, wakeup, application_name="failover-listener")
        listener.start()
        try:
            await asyncio.wait_for(listener.connected.wait(), 20)
            first_backend = listener.backend_pid
            before = await tiq.now()

            await asyncio.to_thread(pair.failover)

            # The pool hands out working connections to the new primary.
            assert await tiq.now() > before
            run = await _started(tiq)
            assert sum(tiq.retries.values()) == 0
            # The LISTEN session is back, on the new primary, and hears NOTIFY there.
            deadline = time.monotonic() + 20
            while not (listener.connected.is_set() and listener.backend_pid != first_backend):
                assert time.monotonic() < deadline, "LISTEN did not come back"
                await asyncio.sleep(0.05)
            assert listener.reconnects >= 1
            await wakeup.wait(RESUME_CHANNEL, 0)  # forget the reconnect's wake-up
            await asyncio.to_thread(query, db, "select pg_notify(%s, %s)", RESUME_CHANNEL,
                                    str(run))
            assert str(run) in await wakeup.wait(RESUME_CHANNEL, 10)
        finally:
            await listener.stop()


# -- (c) I13: the primary vanishes mid-run; the run's own process finishes it ---------


def test_a_run_cut_off_mid_step_is_finished_by_its_own_process(
    pair: ReplicatedCluster, db: str, tmp_path: Path
) -> None:
    stack = start_stack(db, tmp_path / "stack")
    # Every session of the process commits once the standby applied the commit.
    commit_on_apply(pair, db)
    try:
        victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "31", "--steps",
                             "4", "--plan", "mixed", "--model-delay", "0.2")
        run_id = victim.read_event("started")["run_id"]
        wait_until("step 1 written", lambda: query(
            db, "select 1 from ticketiq.runs where run_id = %s and last_step >= 1", run_id))
        # The run's next write commits on both nodes and is never acknowledged ...
        pause_replay(pair)

        def run_write_waiting() -> list[str]:
            ((status,),) = query(db, "select status from ticketiq.runs where run_id = %s",
                                 run_id)
            # Said at once, not after a minute's wait, if the pause came too late.
            assert status == "running", f"the run was {status} before replay paused"
            return [q for q in sync_waiters(pair, db, "%ticketiq.%")
                    if any(f"ticketiq.{name}(" in q for name in RUN_WRITES)]

        waiting = wait_until("a write of the run to wait for the standby", run_write_waiting)
        assert len(waiting) == 1, waiting
        wait_until("the standby to hold it", lambda: standby_has_it_all(pair))
        # ... the primary dies under it, and the standby takes over.
        pair.failover()

        assert victim.wait(90) == 0, victim.stderr
        (outcome,) = victim.outcomes()
        assert (outcome["run_id"], outcome["status"]) == (run_id, "completed")
        # The process sent the cut-off write again and went on: the run was never lost
        # or taken over.
        cut_off = waiting[0].partition("ticketiq.")[2].partition("(")[0]
        assert f"{cut_off} failed on its connection" in victim.stderr, victim.stderr
        ((status, epoch, losses),) = query(
            db, "select status, epoch, loss_count from ticketiq.runs where run_id = %s", run_id)
        assert (status, epoch, losses) == ("completed", 1, 0)
        events = {e for (e,) in query(db, "select event from ticketiq.audit where run_id = %s",
                                      run_id)}
        assert "agent.run.lease_lapsed" not in events and "agent.run.adopted" not in events
        assert set(stack.model_asks(run_id).values()) == {1}
        assert stack.duplicates() == {}
    finally:
        stack.close()

