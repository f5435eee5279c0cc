"""The step loop in one process: round trips per step, write-ahead order, sealed answers.

A read-only step costs exactly one statement (its checkpoint); its changing calls,
made at once, one more together (their in-doubt marks, just before they are sent)
and one each (its outcome as it returns).
Counted twice: by the driver, and by PostgreSQL's pg_stat_statements where the
server has it loaded.
"""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest
from procs import SEAL_KEYS, Stack

from harness.scripted import ScriptedModel, vendor_tools
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import Fenced, LeaseLapsed
from ticketiq_pg.runtime.leases import LeaseKeeper, LeaseLost
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.seal import Sealer

FUNCTIONS = ("start_run", "write_checkpoint", "mark_in_doubt", "mark_calls_in_doubt",
             "seal_answer", "hand_on_answer")


async def make_runner(stack: Stack, db: TicketIQ, holder: str = "proc-a") -> Runner:
    leases = LeaseKeeper(db, holder, ttl=30, renew_interval=5, margin=1)
    return Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)),
                  ScriptedModel(stack.model_log), vendor_tools(stack.vendor.base_url))


def server_counts(db_url: str) -> Counter[str] | None:
    """Calls per ticketiq function in this database, from pg_stat_statements."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        loaded = conn.execute(
            "select 1 from pg_settings where name = 'shared_preload_libraries' "
            "and setting like '%%pg_stat_statements%%'"
        ).fetchone()
        if not loaded:
            return None
        rows = conn.execute(
            "select query, calls from pg_stat_statements s join pg_database d "
            "on d.oid = s.dbid where d.datname = current_database()"
        ).fetchall()
    counts: Counter[str] = Counter()
    for query, calls in rows:
        for name in (*FUNCTIONS, "renew_leases", "record_outcome", "adopt_run"):
            if f"ticketiq.{name}(" in query:
                counts[name] += calls
    return counts


def reset_server_counts(db_url: str) -> bool:
    with psycopg.connect(db_url, autocommit=True) as conn:
        try:
            conn.execute("create extension if not exists pg_stat_statements")
            conn.execute("select pg_stat_statements_reset()")
        except psycopg.Error:
            return False
    return True


@pytest.mark.parametrize(
    ("plan", "steps", "marks_per_step"),
    [("reads", 4, 0), ("writes", 4, 2), ("mixed", 3, 2)],
)
async def test_round_trips_per_step(stack: Stack, plan: str, steps: int,
                                    marks_per_step: int) -> None:
    measured = reset_server_counts(stack.db_url)
    db = await TicketIQ.connect(stack.db_url)
    try:
        runner = await make_runner(stack, db)
        outcome = await runner.start_and_run(
            owner="alice", run_as="alice", channel="playground", entry_point="test",
            input={"seed": 1, "steps": steps, "plan": plan},
        )
    finally:
        await db.close()
    assert outcome.status == "completed"
    tool_steps = steps - 1
    expected = Counter({
        "start_run": 1,
        "write_checkpoint": tool_steps,
        "seal_answer": 1,
        "hand_on_answer": 1,
    })
    if marks_per_step:
        # the step's changing calls: their in-doubt marks together, in one statement
        # just before they are sent; each one's outcome as it returns
        marking = "mark_calls_in_doubt" if marks_per_step > 1 else "mark_in_doubt"
        expected[marking] = tool_steps
        expected["record_outcome"] = marks_per_step * tool_steps
    counted = Counter({k: v for k, v in db.statements.items() if k != "check_schema"})
    counted.pop("schema_version", None)
    assert counted == expected
    if measured:
        on_server = server_counts(stack.db_url)
        assert on_server is not None
        assert +on_server == expected


async def test_each_checkpoint_is_committed_before_its_calls(stack: Stack) -> None:
    """I5, judged by timestamps: no vendor request of step n precedes checkpoint n."""
    db = await TicketIQ.connect(stack.db_url)
    try:
        runner = await make_runner(stack, db)
        outcome = await runner.start_and_run(
            owner="alice", run_as="alice", channel="playground", entry_point="test",
            input={"seed": 4, "steps": 4, "plan": "mixed"},
        )
    finally:
        await db.close()
    rows = stack.query(
        "select c.step, extract(epoch from c.written_at), k.marked_at is not null, "
        "extract(epoch from k.marked_at), k.step_key, k.classification "
        "from ticketiq.checkpoints c join ticketiq.calls k using (run_id, step) "
        "where run_id = %s", outcome.run_id,
    )
    requests = stack.vendor.requests()
    # three steps with calls, two changing calls each: six marked rows, each sent after
    assert len(rows) == 6
    for _step, written, marked, marked_at, step_key, classification in rows:
        assert classification != "read"  # a read has no row: it is never marked
        assert marked and marked_at >= written
        landed = [r["wall_at"] for r in requests if r["key"] == step_key]
        assert landed and min(landed) >= marked_at
    # the reads: each step's read reached the vendor only after its checkpoint
    bodies = stack.query(
        "select step, extract(epoch from written_at), body from ticketiq.checkpoints "
        "where run_id = %s order by step", outcome.run_id)
    reads_seen = 0
    for step, written, body in bodies:
        for call in body["calls"]:
            if call["classification"] != "read":
                continue
            issue = call["arguments"]["issue_key"]
            landed = [r["wall_at"] for r in requests
                      if r["method"] == "GET" and r["path"].endswith(f"/issue/{issue}")]
            assert landed and max(landed) >= written, (step, issue)
            reads_seen += 1
    assert reads_seen == 3


async def test_a_stalled_attempt_writes_nothing_after_a_takeover(stack: Stack) -> None:
    """I1: once another attempt adopted the run, the old one is fenced at its next write."""
    db = await TicketIQ.connect(stack.db_url)
    try:
        runner = await make_runner(stack, db)
        state = await runner.start(owner="alice", run_as="alice", channel="playground",
                                   entry_point="test", input={"seed": 2, "steps": 3})
        assert not isinstance(state, type(None))
        stack.sweep_as_if_later()
        adopted = await db.adopt_run("proc-b", 30)
        assert adopted is not None and adopted.epoch == state.epoch + 2
        before = len(stack.vendor.requests())
        outcome = await runner.run(state)
        assert outcome.status == "lost"
        assert "epoch" in outcome.reason
        assert len(stack.vendor.requests()) == before
        assert stack.query("select count(*) from ticketiq.checkpoints where run_id = %s",
                           state.run_id) == [(0,)]
    finally:
        await db.close()


async def test_a_process_that_cannot_renew_stops_acting(stack: Stack) -> None:
    """I12: past its self-fence deadline the runner makes no call, even if the DB would allow."""
    fake_now = [0.0]
    db = await TicketIQ.connect(stack.db_url)
    try:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1,
                             clock=lambda: fake_now[0])
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)),
                        ScriptedModel(stack.model_log), vendor_tools(stack.vendor.base_url))
        state = await runner.start(owner="alice", run_as="alice", channel="playground",
                                   entry_point="test", input={"seed": 2, "steps": 3})
        fake_now[0] = 29.5  # no renewal confirmed for 29.5 s of a 30 s lease
        with pytest.raises(LeaseLost):
            leases.check(state.run_id)
        before = len(stack.vendor.requests())
        outcome = await runner.run(state)
        assert outcome.status == "lost"
        assert len(stack.vendor.requests()) == before
    finally:
        await db.close()


async def test_fenced_errors_are_typed(stack: Stack) -> None:
    db = await TicketIQ.connect(stack.db_url)
    try:
        run = await db.start_run(holder="p", owner="o", run_as="o", channel="c",
                                 entry_point="e", may_wait=False, ttl=30)
        body = {"conversation": [], "calls": [], "counters": {}, "history": [],
                "delegation_keys": {}}
        with pytest.raises(Fenced):
            await db.write_checkpoint(run.run_id, (run.epoch or 0) + 1, 1, body, "s", "k1")
        stack.query("update ticketiq.config set fake_clock_allowed = true")
        async with await psycopg.AsyncConnection.connect(stack.db_url, autocommit=True) as conn:
            await conn.execute("set ticketiq.fake_now = '2100-01-01'")
            with pytest.raises(LeaseLapsed):
                await db.write_checkpoint(run.run_id, run.epoch or 0, 1, body, "s", "k1",
                                          conn=conn)
    finally:
        await db.close()


async def test_a_delivery_failing_after_the_hand_on_leaves_the_run_completed(
    stack: Stack,
) -> None:
    """A delivery without a reader is made after the hand-on, at most once: when it
    fails, the run is completed with its answer (not reported lost) and it is not sent
    again."""
    sent = []

    async def deliver(run, answer):  # type: ignore[no-untyped-def]
        sent.append(answer)
        raise ConnectionError("the channel hung up")

    db = await TicketIQ.connect(stack.db_url)
    try:
        runner = await make_runner(stack, db)
        runner.deliver = deliver
        outcome = await runner.start_and_run(
            owner="alice", run_as="alice", channel="playground", entry_point="test",
            input={"seed": 1, "steps": 2, "plan": "reads"},
        )
    finally:
        await db.close()
    ((status,),) = stack.query("select status from ticketiq.runs where run_id = %s",
                               outcome.run_id)
    assert (outcome.status, "delivery failed" in outcome.reason) == ("completed", True)
    assert outcome.answer is not None and sent == [outcome.answer]
    assert status == "completed"


async def test_a_later_step_waits_while_a_takeovers_resumes_are_pending(stack: Stack) -> None:
    """ResumesFirst: while a resume has not taken its first step, another run's step
    waits for it (so a dead peer's runs are back before the survivor's own go on), and
    at most ``resumes_first_wait`` seconds (nobody starves behind a slow resume)."""
    import asyncio

    db = await TicketIQ.connect(stack.db_url)
    try:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)),
                        ScriptedModel(stack.model_log), vendor_tools(stack.vendor.base_url),
                        resumes_first_wait=60)
        start = {"owner": "alice", "run_as": "alice", "channel": "playground",
                 "entry_point": "test", "input": {"seed": 7, "steps": 3, "plan": "reads"}}
        turn = runner.setup.resumes.begin()  # a resume adopted, its first step not taken
        state = await runner.start(**start)
        task = asyncio.create_task(runner.run(state))  # type: ignore[arg-type]
        await asyncio.sleep(1.0)
        written = stack.query("select count(*) from ticketiq.checkpoints where run_id = %s",
                              state.run_id)  # type: ignore[union-attr]
        assert written == [(0,)] and not task.done()
        turn.end()  # the resume's first step is written: the others go on
        outcome = await asyncio.wait_for(task, 30)
        assert outcome.status == "completed"
        assert runner.setup.resumes.waited == 1 and runner.setup.resumes.pending == 0

        # A resume that never takes its step holds the others back at most the wait.
        runner.setup.resumes.max_wait = 0.2
        stuck = runner.setup.resumes.begin()
        state = await runner.start(**{**start, "input": {"seed": 8, "steps": 3,
                                                         "plan": "reads"}})
        outcome = await asyncio.wait_for(runner.run(state), 30)  # type: ignore[arg-type]
        assert outcome.status == "completed"
        assert runner.setup.resumes.waited >= 3  # each of its steps waited, then went on
        stuck.end()
        stuck.end()  # once only
        assert runner.setup.resumes.pending == 0
    finally:
        await db.close()


async def test_a_resume_awaiting_its_model_holds_no_other_run(stack: Stack) -> None:
    """ResumesFirst puts the resumes' own work first, not the answers they wait for: while
    a resumed run awaits its model, it is not pending, and another run's steps go on (the
    order's wait, 60 s here, would hold each of them)."""
    import asyncio

    class HeldFor:
        """The scripted model, holding one run's answer until released."""

        def __init__(self, model: ScriptedModel) -> None:
            self.model = model
            self.held_run: object = None
            self.release = asyncio.Event()
            self.asked = asyncio.Event()

        async def step(self, request):  # type: ignore[no-untyped-def]
            if request.run_id == self.held_run:
                self.asked.set()
                await self.release.wait()
            return await self.model.step(request)

    db = await TicketIQ.connect(stack.db_url)
    try:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        model = HeldFor(ScriptedModel(stack.model_log))
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), model,
                        vendor_tools(stack.vendor.base_url), resumes_first_wait=60)
        start = {"owner": "alice", "run_as": "alice", "channel": "playground",
                 "entry_point": "test", "input": {"seed": 9, "steps": 3, "plan": "reads"}}
        resumed = await runner.start(**start)
        resumed.resuming = runner.setup.resumes.begin()  # type: ignore[union-attr]
        model.held_run = resumed.run_id  # type: ignore[union-attr]
        held = asyncio.create_task(runner.run(resumed))  # type: ignore[arg-type]
        await asyncio.wait_for(model.asked.wait(), 10)
        assert runner.setup.resumes.pending == 0  # awaiting its model: none to wait for
        other = await runner.start(**{**start, "input": {"seed": 10, "steps": 3,
                                                         "plan": "reads"}})
        outcome = await asyncio.wait_for(runner.run(other), 30)  # type: ignore[arg-type]
        assert outcome.status == "completed" and runner.setup.resumes.waited == 0
        model.release.set()
        assert (await asyncio.wait_for(held, 30)).status == "completed"
        assert runner.setup.resumes.pending == 0
    finally:
        await db.close()


def test_a_resume_turn_paused_counts_once_and_ends_once() -> None:
    """pause and unpause move a turn out of the pending count and back; ending a paused
    turn does not count it out a second time; each is safe to repeat."""
    from ticketiq_pg.runtime.setup import ResumesFirst

    order = ResumesFirst(5)
    first, second = order.begin(), order.begin()
    assert order.pending == 2
    first.pause()
    first.pause()
    assert order.pending == 1
    first.unpause()
    first.unpause()
    assert order.pending == 2
    first.pause()
    first.end()  # its first step written while paused: counted out once, not twice
    first.unpause()
    assert order.pending == 1
    second.end()
    second.end()
    assert order.pending == 0
