"""The lease keeper: self-fencing deadlines and attempts told apart by epoch."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from procs import Stack

from ticketiq_pg.runtime.leases import RENEW_CHUNK, LeaseBook, LeaseKeeper, LeaseLost

RUN = uuid.UUID(int=7)


def keeper(now: list[float]) -> LeaseKeeper:
    return LeaseKeeper(None, "p", ttl=8, renew_interval=2, margin=1,  # type: ignore[arg-type]
                       clock=lambda: now[0])


def test_a_newer_attempt_of_the_same_run_fences_the_older_one() -> None:
    now = [0.0]
    leases = keeper(now)
    leases.hold(RUN, 3, now[0])
    leases.check(RUN, 3)
    # the run was taken over and adopted again by this very process
    leases.hold(RUN, 5, now[0])
    with pytest.raises(LeaseLost, match="epoch 5"):
        leases.check(RUN, 3)
    leases.check(RUN, 5)
    leases.drop(RUN, 3)  # the old attempt ending must not drop the new lease
    leases.check(RUN, 5)
    leases.drop(RUN, 5)
    with pytest.raises(LeaseLost):
        leases.check(RUN, 5)


def test_a_lease_held_at_adoption_keeps_its_renewed_deadline_when_the_resume_holds_it() -> None:
    """The worker holds an adopted run's lease as the batch comes back; its resume, a
    while later, holds it again with the adoption's send time: the deadline a renewal
    moved meanwhile is kept, not put back."""
    now = [100.0]
    leases = keeper(now)
    held = leases.hold(RUN, 2, now[0])  # adopted at 100: deadline 107
    held.deadline = 112.0  # renewed at 105
    now[0] = 108.0
    assert leases.hold(RUN, 2, 100.0) is held  # the resume's own hold, sent at 100
    leases.check(RUN, 2)
    held.lost = "renewal refused: taken over"  # found lost before the resume held it
    leases.hold(RUN, 2, 108.0)
    with pytest.raises(LeaseLost, match="lost"):
        leases.check(RUN, 2)  # a lost lease never comes back


async def test_a_renewal_of_many_leases_goes_in_statements_of_a_thousand() -> None:
    """A renewal statement holds its runs' rows locked until it commits: 2,500 leases go
    in three statements, each lease's deadline counted from its own statement's send,
    and a lease any of them refuses is found lost."""
    now = [0.0]
    sent: list[list[tuple[uuid.UUID, int]]] = []
    refused = uuid.UUID(int=2_400)

    async def renew(leases: list[tuple[uuid.UUID, int]], conn: object) -> list[
            tuple[uuid.UUID, int, bool]]:
        sent.append(leases)
        now[0] += 1.0  # each statement takes a second
        return [(key, epoch, key != refused) for key, epoch in leases]

    book = LeaseBook("run", renew, ttl=8, renew_interval=2, margin=1,  # type: ignore[arg-type]
                     clock=lambda: now[0])
    for n in range(2_500):
        book.hold(uuid.UUID(int=n), 1, 0.0)
    assert await book.renew_once() == [refused]
    assert [len(s) for s in sent] == [RENEW_CHUNK, RENEW_CHUNK, 500] == [1000, 1000, 500]
    deadlines = {book.entries[uuid.UUID(int=n)].deadline for n in (0, 1_500, 2_100)}
    assert deadlines == {book.deadline(0.0), book.deadline(1.0), book.deadline(2.0)}
    with pytest.raises(LeaseLost):
        book.check(refused, 1)


async def test_a_failed_chunk_still_tells_the_leases_found_lost_before_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    lost_key = uuid.UUID(int=5)

    async def renew(leases: list[tuple[uuid.UUID, int]], conn: object) -> list[
            tuple[uuid.UUID, int, bool]]:
        if leases[0][0] != uuid.UUID(int=0):
            raise ConnectionError("the second statement's connection broke")
        return [(key, epoch, key != lost_key) for key, epoch in leases]

    book = LeaseBook("run", renew, ttl=8, renew_interval=2, margin=1,  # type: ignore[arg-type]
                     clock=lambda: now[0])
    for n in range(RENEW_CHUNK + 1):
        book.hold(uuid.UUID(int=n), 1, 0.0)
    with pytest.raises(ConnectionError):
        await book.renew_once()
    assert f"lease on run {lost_key} no longer held" in caplog.text
    with pytest.raises(LeaseLost):
        book.check(lost_key, 1)


def test_past_the_deadline_nothing_may_act() -> None:
    now = [100.0]
    leases = keeper(now)
    leases.hold(RUN, 1, now[0])
    now[0] = 106.9
    assert leases.may_act(RUN, 1)
    now[0] = 107.0  # sent at 100, ttl 8, margin 1
    assert not leases.may_act(RUN, 1)


def test_sigterm_while_waiting_for_an_approval_hands_the_run_over_without_a_loss(
    stack: Stack,
) -> None:
    worker = stack.spawn("--start", "1", "--seed", "3", "--steps", "2", "--plan", "approval",
                         "--no-may-wait")
    run_id = worker.read_event("started")["run_id"]
    deadline = time.monotonic() + 20
    while not stack.query("select 1 from ticketiq.approval_requests where run_id = %s", run_id):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    worker.popen.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.stderr
    ((status, losses, reason),) = stack.query(
        "select status, loss_count, claim_reason from ticketiq.runs where run_id = %s", run_id)
    assert (status, losses, reason) == ("claimed", 0, "released")
    assert [o["status"] for o in worker.outcomes()] == ["released"]
