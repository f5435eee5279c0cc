"""Group commit (``ticketiq_pg.db.group_commit``) against a real database.

* a lone run's checkpoints go out one ``write_checkpoint`` statement each, never grouped;
* runs that step together share ``write_checkpoints`` statements, and every checkpoint is
  stored once, exactly as ``write_checkpoint`` stores it;
* a checkpoint the grouped statement leaves out gets what a lone call would have given it:
  the typed error (fenced, malformed, out of order) or ``replayed``;
* a run whose row another transaction holds locked holds up nobody else: the others are
  written, and it is written once the lock goes;
* a caller cancelled before its statement went out is left out of it;
* ``group_commit=False``: one ``write_checkpoint`` per checkpoint;
* resumes settling together share ``record_resumes`` statements, each recorded exactly
  as ``record_resume`` records it; a refused settlement gets its own typed error, and a
  resume whose run is locked holds up nobody.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from helpers import allow_fake_clock, body, call, rows, scalar, set_fake_now, start

from ticketiq_pg import errors
from ticketiq_pg.db.driver import TicketIQ


@pytest.fixture
async def tiq(db_url: str):  # type: ignore[no-untyped-def]
    db = await TicketIQ.connect(db_url, min_size=4, max_size=4)
    try:
        yield db
    finally:
        await db.close()


def _seal(n: int) -> str:
    return f"seal-{n}"


async def _runs(tiq: TicketIQ, n: int) -> list[Any]:
    return [await start(tiq) for _ in range(n)]


async def _stored(aconn: psycopg.AsyncConnection) -> list[tuple]:
    return await rows(
        aconn,
        "select c.run_id, c.step, c.epoch, c.seal, c.body from ticketiq.checkpoints as c"
        " order by c.run_id, c.step",
    )


async def test_a_lone_run_is_never_grouped(tiq: TicketIQ, aconn) -> None:
    run = await start(tiq)
    tiq.statements.clear()
    for step in range(1, 6):
        written = await tiq.write_checkpoint(run.run_id, run.epoch, step, body(), _seal(step), "k")
        assert (written.step, written.replayed) == (step, False)
    assert tiq.statements == {"write_checkpoint": 5}
    assert tiq.checkpoints is not None and tiq.checkpoints.batches == 0


async def test_runs_stepping_together_share_statements(tiq: TicketIQ, aconn) -> None:
    runs = await _runs(tiq, 9)
    tiq.statements.clear()
    bodies = [body(call(f"w{i}", "write", step_key=f"key-{i}"), note=str(i)) for i in range(9)]
    written = await asyncio.gather(*(
        tiq.write_checkpoint(r.run_id, r.epoch, 1, b, _seal(i), "k")
        for i, (r, b) in enumerate(zip(runs, bodies, strict=True))
    ))
    # the first goes out alone at once; the eight that queued behind it, fewer than a
    # group (16), together at the end of the event loop's pass
    assert tiq.statements == {"write_checkpoint": 1, "write_checkpoints": 1}
    assert tiq.checkpoints is not None
    assert (tiq.checkpoints.batches, tiq.checkpoints.batched) == (1, 8)
    assert [(w.run_id, w.step, w.replayed, w.stop_requested) for w in written] == [
        (r.run_id, 1, False, False) for r in runs
    ]
    assert all(w.lease_expires_at is not None and w.written_at is not None for w in written)
    stored = await _stored(aconn)
    assert sorted((s[0], s[1], s[2], s[3]) for s in stored) == sorted(
        (r.run_id, 1, r.epoch, _seal(i)) for i, r in enumerate(runs)
    )
    assert {s[0]: s[4] for s in stored} == {r.run_id: b for r, b in zip(runs, bodies, strict=True)}
    # one pending calls row per changing call, as write_checkpoint records it
    assert await scalar(
        aconn, "select count(*) from ticketiq.calls where state = 'pending' and step = 1"
    ) == 9
    # and the next step of each closes it
    await asyncio.gather(*(
        tiq.write_checkpoint(r.run_id, r.epoch, 2, body(outcomes={f"w{i}": {"n": i}}), "s2", "k")
        for i, r in enumerate(runs)
    ))
    assert await rows(
        aconn, "select state, settlement, count(*) from ticketiq.calls group by 1, 2"
    ) == [("settled", "skipped", 9)]  # never marked in doubt, so never made


async def test_a_refused_checkpoint_gets_its_own_error(tiq: TicketIQ, aconn) -> None:
    runs = await _runs(tiq, 5)
    # run 1 taken over (its epoch moves on): its writer is fenced
    await aconn.execute(
        "update ticketiq.runs set epoch = epoch + 1 where run_id = %s", (runs[1].run_id,)
    )
    await tiq.write_checkpoint(runs[3].run_id, runs[3].epoch, 1, body(), "first", "k")

    async def write(i: int, step: int, b: dict, seal: str) -> Any:
        return await tiq.write_checkpoint(runs[i].run_id, runs[i].epoch, step, b, seal, "k")

    outcomes = await asyncio.gather(
        write(0, 1, body(), "a"),  # alone, at once
        write(1, 1, body(), "b"),  # fenced
        write(2, 1, {"calls": []}, "c"),  # malformed
        write(3, 1, body(), "first"),  # a repeat of its written step 1
        write(4, 2, body(), "e"),  # step 2 before step 1
        write(0, 2, body(), "a2"),  # run 0 again, once its step 1 is in: not grouped with it
        return_exceptions=True,
    )
    assert outcomes[0].step == 1 and not outcomes[0].replayed
    assert isinstance(outcomes[1], errors.Fenced)
    assert isinstance(outcomes[2], errors.InvalidPayload)
    assert "checkpoint.conversation" in str(outcomes[2])
    assert outcomes[3].replayed is True
    assert isinstance(outcomes[4], errors.StepConflict)
    # run 0's step 2 raced its own step 1: it was sent after it, or refused as out of order
    assert (not isinstance(outcomes[5], Exception) and outcomes[5].step == 2) or isinstance(
        outcomes[5], errors.StepConflict
    )
    assert tiq.checkpoints is not None and tiq.checkpoints.batches >= 1
    assert await scalar(
        aconn, "select count(*) from ticketiq.checkpoints where run_id = any(%s)",
        ([runs[1].run_id, runs[2].run_id, runs[4].run_id],),
    ) == 0


async def test_a_locked_run_holds_up_nobody(tiq: TicketIQ, db_url: str, aconn) -> None:
    runs = await _runs(tiq, 5)
    blocker = await psycopg.AsyncConnection.connect(db_url)
    try:
        await blocker.execute(
            "select 1 from ticketiq.runs where run_id = %s for no key update", (runs[2].run_id,)
        )
        tasks = [
            asyncio.create_task(tiq.write_checkpoint(r.run_id, r.epoch, 1, body(), "s", "k"))
            for r in runs
        ]
        others = [t for i, t in enumerate(tasks) if i != 2]
        done, _ = await asyncio.wait(others, timeout=30)
        assert done == set(others)  # written while run 2's row is still locked
        assert not tasks[2].done()
        assert await scalar(aconn, "select count(*) from ticketiq.checkpoints") == 4
        await blocker.commit()
        written = await asyncio.wait_for(tasks[2], 30)
        assert (written.run_id, written.step, written.replayed) == (runs[2].run_id, 1, False)
    finally:
        await blocker.close()
    assert await scalar(aconn, "select count(*) from ticketiq.checkpoints") == 5


async def test_a_caller_cancelled_before_sending_is_left_out(tiq: TicketIQ, aconn) -> None:
    runs = await _runs(tiq, 3)
    first = asyncio.create_task(
        tiq.write_checkpoint(runs[0].run_id, runs[0].epoch, 1, body(), "s", "k")
    )
    await asyncio.sleep(0)  # it goes out alone, at once
    queued = [
        asyncio.create_task(tiq.write_checkpoint(r.run_id, r.epoch, 1, body(), "s", "k"))
        for r in runs[1:]
    ]
    await asyncio.sleep(0)  # both queued behind it, to go at the end of this pass
    queued[0].cancel()
    await first
    written = await queued[1]
    assert written.step == 1
    with pytest.raises(asyncio.CancelledError):
        await queued[0]
    await tiq.checkpoints.drain()  # type: ignore[union-attr]
    assert sorted(await rows(aconn, "select run_id from ticketiq.checkpoints")) == sorted(
        [(runs[0].run_id,), (runs[2].run_id,)]
    )


async def test_without_group_commit_every_checkpoint_is_its_own_statement(
    db_url: str, aconn
) -> None:
    tiq = await TicketIQ.connect(db_url, min_size=4, max_size=4, group_commit=False)
    try:
        runs = await _runs(tiq, 6)
        tiq.statements.clear()
        await asyncio.gather(*(
            tiq.write_checkpoint(r.run_id, r.epoch, 1, body(), "s", "k") for r in runs
        ))
        assert tiq.statements == {"write_checkpoint": 6}
        assert tiq.checkpoints is None
    finally:
        await tiq.close()
    assert await scalar(aconn, "select count(*) from ticketiq.checkpoints") == 6


async def test_the_group_size_is_how_many_go_together(db_url: str, aconn) -> None:
    tiq = await TicketIQ.connect(db_url, min_size=4, max_size=4, group_size=2)
    try:
        runs = await _runs(tiq, 5)
        tiq.statements.clear()
        await asyncio.gather(*(
            tiq.write_checkpoint(r.run_id, r.epoch, 1, body(), "s", "k") for r in runs
        ))
        # the first alone at once, then two by two
        assert tiq.statements == {"write_checkpoint": 1, "write_checkpoints": 2}
    finally:
        await tiq.close()
    with pytest.raises(ValueError, match="group must be at least 2"):
        TicketIQ(group_size=1)


async def test_write_checkpoints_returns_what_it_wrote(tiq: TicketIQ, aconn) -> None:
    runs = await _runs(tiq, 3)
    got = await tiq.write_checkpoints([
        (runs[0].run_id, runs[0].epoch, 1, body(), "s", "k"),
        (runs[1].run_id, runs[1].epoch + 1, 1, body(), "s", "k"),  # fenced: left out
        (runs[2].run_id, runs[2].epoch, 1, body(), "s", "k"),
        (uuid.uuid4(), 1, 1, body(), "s", "k"),  # unknown: left out
    ])
    # by index in the list given
    assert {i: (w.run_id, w.step, w.replayed) for i, w in got.items()} == {
        0: (runs[0].run_id, 1, False), 2: (runs[2].run_id, 1, False)
    }
    with pytest.raises(errors.InvalidPayload):
        await tiq.write_checkpoints([(None, 1, 1, body(), "s", "k")])  # type: ignore[list-item]


async def test_encoded_bodies_are_stored_as_their_objects(tiq: TicketIQ, aconn) -> None:
    """What seal_encoded gives to send (its canonical text for a plain ASCII body, the body
    itself otherwise) is stored as the body, alone or in a group beside plain dicts."""
    from ticketiq_pg.seal import JsonText, Sealer

    sealer = Sealer({"k": b"k" * 32})
    runs = await _runs(tiq, 5)
    notes = ["a", "b", "caf\u00e9", "d", "e"]
    bodies = [body(call(f"w{i}", "write"), note=n) for i, n in enumerate(notes)]
    sealed = [sealer.seal_encoded("checkpoint", r.run_id, 1, b) for r, b in zip(runs, bodies,
                                                                              strict=True)]
    assert [isinstance(s[2], JsonText) for s in sealed] == [True, True, False, True, True]
    await asyncio.gather(*(
        tiq.write_checkpoint(r.run_id, r.epoch, 1, sent if i != 3 else b, seal, key)
        for i, (r, b, (seal, key, sent)) in enumerate(zip(runs, bodies, sealed, strict=True))
    ))
    assert tiq.checkpoints is not None and tiq.checkpoints.batches == 1
    stored = {s[0]: s[4] for s in await _stored(aconn)}
    assert stored == {r.run_id: b for r, b in zip(runs, bodies, strict=True)}
    for r, (seal, key, _) in zip(runs, sealed, strict=True):
        sealer.verify("checkpoint", r.run_id, 1, stored[r.run_id], seal, key)


async def test_one_bad_checkpoint_fails_only_its_own_caller(tiq: TicketIQ, aconn) -> None:
    """A value the grouped statement cannot take (a NUL in a body) fails that one caller;
    the others of its group are written."""
    runs = await _runs(tiq, 5)
    bodies = [body(note="ok") for _ in runs]
    bodies[3] = body(note="bad \x00")
    outcomes = await asyncio.gather(*(
        tiq.write_checkpoint(r.run_id, r.epoch, 1, b, "s", "k")
        for r, b in zip(runs, bodies, strict=True)
    ), return_exceptions=True)
    assert isinstance(outcomes[3], psycopg.Error)
    assert [o.step for i, o in enumerate(outcomes) if i != 3] == [1, 1, 1, 1]
    assert tiq.checkpoints is not None and tiq.checkpoints.batches == 1
    assert await scalar(aconn, "select count(*) from ticketiq.checkpoints") == 4


async def test_a_run_id_given_as_text_is_matched(tiq: TicketIQ, aconn) -> None:
    runs = await _runs(tiq, 4)
    tiq.statements.clear()
    written = await asyncio.gather(*(
        tiq.write_checkpoint(str(r.run_id).upper(), r.epoch, 1, body(), "s", "k")  # type: ignore[arg-type]
        for r in runs
    ))
    assert [w.replayed for w in written] == [False] * 4
    assert tiq.statements == {"write_checkpoint": 1, "write_checkpoints": 1}


async def test_callers_are_not_left_waiting_when_the_statement_is_cancelled(
    tiq: TicketIQ, db_url: str, aconn
) -> None:
    """The batcher's statement cancelled (a loop closing) cancels its callers too."""
    runs = await _runs(tiq, 3)
    blocker = await psycopg.AsyncConnection.connect(db_url)
    try:
        await blocker.execute(
            "select 1 from ticketiq.runs where run_id = any(%s) for no key update",
            ([r.run_id for r in runs[1:]],),
        )
        first = asyncio.create_task(
            tiq.write_checkpoint(runs[0].run_id, runs[0].epoch, 1, body(), "s", "k"))
        await asyncio.sleep(0)
        queued = [asyncio.create_task(tiq.write_checkpoint(r.run_id, r.epoch, 1, body(), "s",
                                                           "k")) for r in runs[1:]]
        await first
        # the group left both locked runs out; each now waits alone for its row lock
        for _ in range(200):
            if tiq.checkpoints is not None and tiq.checkpoints.batches == 1:
                break
            await asyncio.sleep(0.01)
        assert not any(t.done() for t in queued)
        for task in list(tiq.checkpoints._tasks):  # type: ignore[union-attr]
            task.cancel()
        done, pending = await asyncio.wait(queued, timeout=30)
        assert pending == set()
        assert all(t.cancelled() for t in done)
    finally:
        await blocker.close()


# -- a resume's settlements, grouped (ticketiq.record_resumes) ----------------


async def _resumed(tiq: TicketIQ, aconn: psycopg.AsyncConnection, n: int) -> list[Any]:
    """n runs whose step 1 left one read and one write in doubt, lost and adopted by p2."""
    await allow_fake_clock(aconn)
    runs = await _runs(tiq, n)
    for r in runs:
        b = body(call("r1", "read"), call("w1", "write", step_key=f"key-{r.run_id}"))
        await tiq.write_checkpoint_alone(r.run_id, r.epoch, 1, b, _seal(1), "k")
        await tiq.mark_in_doubt(r.run_id, r.epoch, 1, "w1")
    # the adopter's clock past every lease; adopted for a minute past that
    await set_fake_now(aconn, max(r.lease_expires_at for r in runs) + timedelta(seconds=1))
    await tiq.processes.sweep_lapsed("leader", conn=aconn)
    adopted = [await tiq.adopt_run("p2", 60, r.run_id, conn=aconn) for r in runs]
    await set_fake_now(aconn, None)
    assert all(a is not None and a.epoch == 3 for a in adopted)
    return adopted


def _settled(call_id: str, how: str = "redone") -> dict[str, Any]:
    return {"call_id": call_id, "settlement": how, "outcome": {"for": call_id}}


async def test_resumes_settling_together_share_statements(tiq: TicketIQ, aconn) -> None:
    adopted = await _resumed(tiq, aconn, 9)
    tiq.statements.clear()
    audited = await asyncio.gather(*(
        tiq.record_resume(a.run_id, a.epoch, [_settled("r1")]) for a in adopted
    ))
    # the first alone at once; the eight queued behind it together
    assert tiq.statements == {"record_resume": 1, "record_resumes": 1}
    assert tiq.resumes is not None and (tiq.resumes.batches, tiq.resumes.batched) == (1, 8)
    assert [(r.run_id, r.step, r.loss_count) for r in audited] == [
        (a.run_id, 1, 1) for a in adopted
    ]
    # each as record_resume records it: on the resume's row (not yet complete: w1 is
    # left), one call_settled event each; a read has no call row to settle
    assert await rows(aconn, """
        select v.run_id, jsonb_array_length(v.settlements), (a.detail ->> 'complete')::boolean
        from ticketiq.resume_audit as v join ticketiq.audit as a using (audit_id)
        order by v.run_id""") == sorted((a.run_id, 1, False) for a in adopted)
    assert [r.audit_id for r in audited] == [
        await scalar(aconn, "select audit_id from ticketiq.resume_audit where run_id = %s",
                     (a.run_id,)) for a in adopted
    ]
    assert await scalar(
        aconn, "select count(*) from ticketiq.run_events where kind = 'call_settled'"
    ) == 9


async def test_a_refused_settlement_gets_its_own_error(tiq: TicketIQ, aconn) -> None:
    adopted = await _resumed(tiq, aconn, 5)
    # run 1 taken over again meanwhile: its resumer is fenced
    await aconn.execute(
        "update ticketiq.runs set epoch = epoch + 1 where run_id = %s", (adopted[1].run_id,)
    )
    await tiq.record_resume(adopted[3].run_id, 3, [_settled("w1", "unknown")])
    outcomes = await asyncio.gather(
        tiq.record_resume(adopted[0].run_id, 3, [_settled("r1")]),  # alone, at once
        tiq.record_resume(adopted[1].run_id, 3, [_settled("r1")]),  # fenced
        tiq.record_resume(adopted[2].run_id, 3, [_settled("w9")]),  # no such call
        tiq.record_resume(adopted[3].run_id, 3, [_settled("w1", "made")]),  # settled otherwise
        tiq.record_resume(adopted[4].run_id, 3, [_settled("w1", "unknown")]),
        return_exceptions=True,
    )
    assert isinstance(outcomes[1], errors.Fenced)
    assert isinstance(outcomes[2], errors.TicketIQError) and "no call w9" in str(outcomes[2])
    assert isinstance(outcomes[3], errors.TicketIQError) and "already" in str(outcomes[3])
    # the fenced one was left out; the group failed on the others' refusals, and each
    # went on its own: the good ones are recorded
    assert [o.run_id for o in (outcomes[0], outcomes[4])] == [
        adopted[0].run_id, adopted[4].run_id]
    assert tiq.resumes is not None and tiq.resumes.batches == 1
    assert await rows(aconn, """
        select v.run_id, v.settlements -> 0 ->> 'settlement' from ticketiq.resume_audit as v
        where jsonb_array_length(v.settlements) > 0 order by v.run_id""") == sorted([
            (adopted[0].run_id, "redone"), (adopted[3].run_id, "unknown"),
            (adopted[4].run_id, "unknown")])


async def test_a_locked_resume_holds_up_nobody(tiq: TicketIQ, db_url: str, aconn) -> None:
    """A run whose row another transaction holds is left out of the group and recorded
    alone once it is free; the others are recorded meanwhile."""
    adopted = await _resumed(tiq, aconn, 5)
    blocker = await psycopg.AsyncConnection.connect(db_url)
    try:
        await blocker.execute(
            "select 1 from ticketiq.runs where run_id = %s for no key update",
            (adopted[2].run_id,),
        )
        tasks = [asyncio.create_task(tiq.record_resume(a.run_id, a.epoch, [_settled("r1")]))
                 for a in adopted]
        others = [t for i, t in enumerate(tasks) if i != 2]
        done, _ = await asyncio.wait(others, timeout=30)
        assert done == set(others)  # recorded while run 2's row is still locked
        assert not tasks[2].done()
        assert tiq.resumes is not None and tiq.resumes.batches >= 1
        await blocker.commit()
        audited = await asyncio.wait_for(tasks[2], 30)
        assert audited.run_id == adopted[2].run_id
    finally:
        await blocker.close()
    assert await scalar(
        aconn, "select count(*) from ticketiq.run_events where kind = 'call_settled'"
    ) == 5
