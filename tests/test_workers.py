"""Two (or more) real worker processes over one PostgreSQL: kills, stalls, hand-overs.

Every process is a child (``python -m harness.scripted`` or ``ticketiq-pg worker``)
driven with real signals: SIGKILL, SIGSTOP/SIGCONT, SIGTERM.  Nothing here moves a
clock: where a test is about a bound the spec sets (15 s recovery, one 8 s lease
period, "at once"), the processes run with the default 8 s leases; the other tests
shorten the leases with the TICKETIQ_* variables to keep the suite fast.

Everything is judged from outside the processes: the database (runs, checkpoints,
calls, audit, transcript, leader lease), the vendor service's own record of every
request it received (each process's requests carry its name as HTTP Basic user, see
``procs.vendor_user``) and the scripted model's fsynced log of every step asked.

Invariants: I1 (fence), I3 (once per loss), I4 (losses counted, a run lost more than
twice failed for good), I8 (no step asked twice), I12 (self-fencing), I13 (the lease
is the fence), I14 (one resume audit per resume).
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from typing import Any

import psycopg
import pytest
from procs import KILLED, LiveProc, Stack, requester, spawn_cli_worker, spawn_worker

from harness.scripted import read_model_log
from ticketiq_pg.testing import wait_for as wait_until

pytestmark = pytest.mark.slow

#: Short leases for the tests that are not about the spec's time bounds.
FAST = {
    "TICKETIQ_LEASE_TTL": "2",
    "TICKETIQ_RENEW_INTERVAL": "0.4",
    "TICKETIQ_SELF_FENCE_MARGIN": "0.5",
    "TICKETIQ_SWEEP_INTERVAL": "0.3",
    "TICKETIQ_POLL_INTERVAL": "0.3",
}

#: The spec's numbers (the defaults of ticketiq_pg.config).
LEASE_TTL = 8.0
RECOVERY_BOUND = 15.0


# -- helpers -------------------------------------------------------------------------


def run_row(stack: Stack, run_id: str) -> dict[str, Any]:
    rows = stack.query(
        "select status, epoch, loss_count, last_step, lease_holder, failure_reason,"
        " extract(epoch from finished_at)::float8 from ticketiq.runs where run_id = %s",
        run_id,
    )
    assert rows, f"no run {run_id}"
    names = ("status", "epoch", "loss_count", "last_step", "holder", "reason", "finished_at")
    return dict(zip(names, rows[0], strict=True))


def audit(stack: Stack, event: str, run_id: str | None = None) -> list[dict[str, Any]]:
    """Audit rows of one event (of one run), oldest first; ``at`` in epoch seconds."""
    rows = stack.query(
        "select extract(epoch from at)::float8, actor, epoch, detail from ticketiq.audit"
        " where event = %s and (%s::uuid is null or run_id = %s::uuid) order by audit_id",
        event, run_id, run_id,
    )
    return [dict(at=r[0], actor=r[1], epoch=r[2], detail=r[3]) for r in rows]


def leader(stack: Stack) -> str | None:
    rows = stack.query(
        "select holder from ticketiq.leader_leases where name = 'sweeper'"
        " and expires_at > clock_timestamp()"
    )
    return rows[0][0] if rows else None


def asks(stack: Stack, run_id: str) -> list[dict[str, Any]]:
    """Every model step asked for this run: step, pid, at (the model's own log)."""
    return [e for e in read_model_log(stack.model_log) if e["run_id"] == run_id]


def asked(stack: Stack, run_id: str, step: int, pid: int | None = None) -> bool:
    return any(e["step"] == step and (pid is None or e["pid"] == pid)
               for e in asks(stack, run_id))


def ghost_run(stack: Stack, spec: dict[str, Any], *, ttl: float = 60.0,
              release: bool = False) -> str:
    """A run held by a process that does not exist (holder 'ghost'), lease ``ttl`` s.

    With ``release`` it is handed back at once (claimed, NOTIFY ticketiq_resume), as a
    process shutting down would.
    """
    ((run_id,),) = stack.query(
        "select run_id::text from ticketiq.start_run(p_holder => 'ghost', p_owner => 'alice',"
        " p_run_as => 'alice', p_channel => 'playground', p_entry_point => 'scripted',"
        " p_may_wait => true, p_ttl_seconds => %s, p_input => %s::jsonb)",
        ttl, json.dumps(spec),
    )
    if release:
        stack.query("select * from ticketiq.release_run(%s, 1, 'test')", run_id)
    return run_id


def up(proc: LiveProc) -> LiveProc:
    proc.wait_event("ready", timeout=30)
    return proc


def vendor_requests_by(stack: Stack, name: str) -> list[dict[str, Any]]:
    return [r for r in stack.vendor.requests() if requester(r) == name]


# -- SIGKILL the owner: the other process finishes the run within 15 s ----------------


def lease_expiry(stack: Stack, run_id: str) -> float | None:
    rows = stack.query("select extract(epoch from lease_expires_at)::float8 from ticketiq.runs"
                       " where run_id = %s", run_id)
    return rows[0][0] if rows else None


def test_sigkill_owner_mid_run_other_process_finishes_within_15s(stack: Stack) -> None:
    """I3, I4, I8, I14 with the default 8 s leases, at their worst, by lease alone.

    Liveness tokens are off here (``TICKETIQ_LIVENESS_INTERVAL=0``: the fallback a
    host that vanishes without closing its sockets gets; tests/test_liveness.py has
    the same kill noticed by its session).  The victim is also the sweep leader, and
    it is killed just after it renewed the run's lease, so the lease runs a full 8 s
    after the kill before anybody may take the run over.  Then the survivor must take
    the leadership, sweep, adopt and finish the run: its last step (the answer, 2.2 s
    of model time) is asked again.
    """
    stack.settings["TICKETIQ_LIVENESS_INTERVAL"] = "0"
    owner = up(spawn_worker(stack, "owner"))
    wait_until("the first process to lead", lambda: leader(stack) == "owner", 10)
    survivor = up(spawn_worker(stack, "survivor"))

    owner.send(cmd="start", seed=21, steps=2, plan="mixed", model_delay=2.2)
    run_id = owner.wait_event("started")["run_id"]
    # Step 1's checkpoint is committed and step 2 is being generated (2.2 s, longer
    # than the 2 s between renewals): wait for a renewal, then kill.
    wait_until("step 2 asked", lambda: asked(stack, run_id, 2, owner.pid), 15, 0.01)
    before = lease_expiry(stack, run_id)
    wait_until("a renewal", lambda: lease_expiry(stack, run_id) != before, 3, 0.01)
    killed_at = time.time()
    owner.signal(signal.SIGKILL)
    assert owner.wait(10) == KILLED
    killed = run_row(stack, run_id)
    assert (killed["status"], killed["last_step"], killed["holder"]) == ("running", 1, "owner")

    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed",
               RECOVERY_BOUND + 10, 0.05)
    row = run_row(stack, run_id)
    recovery = row["finished_at"] - killed_at
    (lapse,) = audit(stack, "agent.run.lease_lapsed", run_id)
    (adopted,) = audit(stack, "agent.run.adopted", run_id)
    print(f"\nSIGKILL -> lease ran out {lease_expiry_at(lapse) - killed_at:.2f}s, swept "
          f"{lapse['at'] - killed_at:.2f}s, adopted {adopted['at'] - killed_at:.2f}s, "
          f"completed in the database {recovery:.2f}s")
    assert lease_expiry_at(lapse) - killed_at > LEASE_TTL - 1  # the worst case, really
    assert lapse["at"] >= lease_expiry_at(lapse)  # swept once lapsed, not before
    assert "reason" not in lapse["detail"]
    assert recovery <= RECOVERY_BOUND, recovery

    # The loss counted once, one resume audited, by the survivor, from step 1.
    assert (row["loss_count"], row["epoch"]) == (1, 3)
    assert lapse["actor"] == "survivor"  # it took the leadership over to sweep
    assert lapse["detail"]["lapsed_holder"] == "owner"
    assert adopted["actor"] == "survivor"
    (resume,) = audit(stack, "agent.run.crash_resumed", run_id)
    assert (resume["actor"], resume["detail"]["step"], resume["detail"]["loss_count"]) == (
        "survivor", 1, 1)

    # I8: the survivor asked only for the step after the last one written (the one
    # being generated at the kill is asked again, as the spec allows).
    by_pid = Counter((e["step"], e["pid"]) for e in asks(stack, run_id))
    assert by_pid == Counter({(1, owner.pid): 1, (2, owner.pid): 1, (2, survivor.pid): 1})
    assert stack.duplicates() == {}
    assert survivor.popen.poll() is None
    assert survivor.terminate() == 0
    (outcome,) = survivor.outcomes()
    assert (outcome["run_id"], outcome["status"]) == (run_id, "completed")


def lease_expiry_at(lapse: dict[str, Any]) -> float:
    """When the lapsed lease ran out (epoch seconds), from a lease_lapsed audit row."""
    from datetime import datetime

    return datetime.fromisoformat(lapse["detail"]["lapsed_at"]).timestamp()


# -- SIGSTOP the owner past its lease ------------------------------------------------


def process_state(pid: int) -> str:
    """The one-letter state of a process (``T``: stopped), from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


# (how the owner is stopped, its plan, the step whose checkpoint it wrote before)
STALLS = [
    # SIGSTOP from outside while step 2 is being generated; next comes a checkpoint.
    pytest.param("mixed", None, 1, id="mid-model-step"),
    # It stops itself between the two reads of step 2 (checkpoint written); next comes
    # a read, which no database write precedes: only self-fencing (I12) can stop it.
    pytest.param("reads", "after_call@2.1:STOP", 2, id="between-two-reads"),
]


@pytest.mark.parametrize(("plan", "faults", "written"), STALLS)
def test_stalled_owner_is_fenced_after_takeover_and_goes_on(
    stack: Stack, plan: str, faults: str | None, written: int
) -> None:
    """I1, I12, I13: a process stalled past its lease writes and calls nothing more."""
    stack.settings.update(FAST)
    stalled = up(spawn_worker(stack, "stalled", faults=faults))
    wait_until("the first process to lead", lambda: leader(stack) == "stalled", 10)
    survivor = up(spawn_worker(stack, "survivor"))

    stalled.send(cmd="start", seed=31, steps=3, plan=plan, model_delay=1.5)
    run_id = stalled.wait_event("started")["run_id"]
    if faults is None:
        wait_until("step 2 asked", lambda: asked(stack, run_id, 2, stalled.pid), 15, 0.01)
        stalled.signal(signal.SIGSTOP)
    wait_until("the owner stopped", lambda: process_state(stalled.pid) == "T", 15, 0.01)
    stopped_at = time.time()
    assert run_row(stack, run_id)["last_step"] == written

    # The survivor takes the leadership and the run over while the owner is stopped.
    wait_until("the survivor adopted the run",
               lambda: [a for a in audit(stack, "agent.run.adopted", run_id)
                        if a["actor"] == "survivor"], 20)
    (adopted,) = audit(stack, "agent.run.adopted", run_id)
    takeover = adopted["at"]
    assert takeover > stopped_at
    stalled.signal(signal.SIGCONT)

    # The stalled process stops that run at once (refused: its lease is gone) ...
    lost = stalled.wait_event("outcome", timeout=15, run_id=run_id)
    assert lost["status"] == "lost", lost
    # ... while the survivor finishes it.
    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed", 20)
    row = run_row(stack, run_id)
    assert (row["loss_count"], row["epoch"]) == (1, adopted["epoch"])
    assert len(audit(stack, "agent.run.crash_resumed", run_id)) == 1
    second_started_at = time.time()

    # It did not crash: a run it starts now completes there.
    stalled.send(cmd="start", seed=32, steps=2, plan="mixed")
    later = stalled.wait_event("started", seed=32)["run_id"]
    assert stalled.wait_event("outcome", timeout=20, run_id=later)["status"] == "completed"

    # The vendor's record: nothing from the stalled process between its stop and the
    # run it started afterwards; the survivor made the calls the run still needed.
    from_stalled = vendor_requests_by(stack, "stalled")
    assert [r for r in from_stalled if stopped_at <= r["wall_at"] < second_started_at] == []
    assert [r for r in from_stalled if r["wall_at"] >= second_started_at]  # the later run
    assert [r for r in vendor_requests_by(stack, "survivor") if r["wall_at"] > takeover]
    assert stack.duplicates() == {}

    # The database: nothing written with the old epoch after the takeover.
    old = 1  # the epoch the stalled process held; the sweep made it 2, the adoption 3
    assert adopted["epoch"] == old + 2
    assert stack.query(
        "select step, epoch from ticketiq.checkpoints where run_id = %s"
        " and epoch = %s and step > %s", run_id, old, written) == []
    assert stack.query(
        "select call_id from ticketiq.calls where run_id = %s and ("
        " marked_epoch = %s and extract(epoch from marked_at) > %s"
        " or finished_epoch = %s and extract(epoch from finished_at) > %s)",
        run_id, old, stopped_at, old, stopped_at) == []
    assert stack.query(
        "select event from ticketiq.audit where run_id = %s and actor = 'stalled'"
        " and extract(epoch from at) > %s", run_id, stopped_at) == []
    # Nor did it ask its model for anything more of that run.
    assert [e for e in asks(stack, run_id) if e["pid"] == stalled.pid and e["step"] > 2] == []
    assert stalled.terminate() == 0
    assert survivor.terminate() == 0


# -- a run lost three times -------------------------------------------------------------


def test_run_killed_three_times_is_failed_for_good(stack: Stack) -> None:
    """I4: lost more than twice, the run is failed with its reason and never resumed."""
    stack.settings.update(FAST)
    first = up(spawn_worker(stack, "victim-1", faults="after_checkpoint@1"))
    first.send(cmd="start", seed=41, steps=5, plan="reads")
    run_id = first.wait_event("started")["run_id"]
    assert first.wait(20) == KILLED

    # Each next process is alone: it takes the lead, sweeps the lapsed run, adopts it
    # and is killed after one more step.
    for n, fault in ((2, "after_checkpoint@2"), (3, "after_checkpoint@3")):
        victim = spawn_worker(stack, f"victim-{n}", faults=fault)
        assert victim.wait(30) == KILLED, victim.stderr_text()
        assert run_row(stack, run_id)["last_step"] == n

    keeper = up(spawn_worker(stack, "keeper"))
    wait_until("the run failed", lambda: run_row(stack, run_id)["status"] == "failed", 20)
    failed_at = time.time()
    row = run_row(stack, run_id)
    assert row["loss_count"] == 3
    assert "lost 3 times" in row["reason"], row
    transcript = stack.query(
        "select body from ticketiq.transcript_entries where run_id = %s and kind = 'failed'",
        run_id,
    )
    assert transcript == [({"reason": row["reason"]},)]
    (failure,) = audit(stack, "agent.run.failed", run_id)
    assert (failure["actor"], failure["detail"]["reason"]) == ("keeper", row["reason"])
    # Two losses resumed (once each), the third not.
    resumes = audit(stack, "agent.run.crash_resumed", run_id)
    assert [(r["actor"], r["detail"]["loss_count"]) for r in resumes] == [
        ("victim-2", 1), ("victim-3", 2)]

    # Never resumed again: the keeper leads, sweeps and polls for a while, and nothing moves.
    time.sleep(10 * float(FAST["TICKETIQ_POLL_INTERVAL"]))
    assert run_row(stack, run_id) == row
    assert len(audit(stack, "agent.run.adopted", run_id)) == 2
    assert [e for e in asks(stack, run_id) if e["at"] >= failed_at - 0.5] == []
    assert keeper.outcomes() == []
    assert keeper.terminate() == 0


# -- SIGTERM hands runs over at once ------------------------------------------------


def test_sigterm_hands_the_run_over_without_waiting_for_the_lease(stack: Stack) -> None:
    """A graceful stop releases at the step boundary; NOTIFY wakes the other at once."""
    owner = up(spawn_worker(stack, "owner"))
    # The survivor's poll is 30 s: only the NOTIFY can wake it in time.
    survivor = up(spawn_worker(stack, "survivor", TICKETIQ_POLL_INTERVAL="30"))
    owner.send(cmd="start", seed=51, steps=4, plan="mixed", model_delay=1.0)
    run_id = owner.wait_event("started")["run_id"]
    wait_until("step 2 asked", lambda: asked(stack, run_id, 2, owner.pid), 15, 0.01)
    terminated_at = time.time()
    owner.signal(signal.SIGTERM)

    adopted = wait_until("the survivor adopted the run",
                         lambda: audit(stack, "agent.run.adopted", run_id), 10)[0]
    (released,) = audit(stack, "agent.run.released", run_id)
    print(f"\nSIGTERM -> adopted: {adopted['at'] - terminated_at:.2f}s; "
          f"released -> adopted: {adopted['at'] - released['at']:.3f}s")
    assert adopted["actor"] == "survivor"
    assert adopted["at"] - released["at"] < 1.0
    assert adopted["at"] - terminated_at < LEASE_TTL / 2
    assert owner.wait(20) == 0, owner.stderr_text()
    assert [(o["run_id"], o["status"]) for o in owner.outcomes()] == [(run_id, "released")]

    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed", 20)
    row = run_row(stack, run_id)
    assert row["loss_count"] == 0
    assert audit(stack, "agent.run.lease_lapsed", run_id) == []
    # Released after step 2's calls, with their results: nothing asked or made twice.
    assert released["detail"]["step"] == 2
    assert Counter(e["step"] for e in asks(stack, run_id)) == Counter({1: 1, 2: 1, 3: 1, 4: 1})
    assert {e["pid"] for e in asks(stack, run_id) if e["step"] > 2} == {survivor.pid}
    calls = stack.query(
        "select state, settlement from ticketiq.calls where run_id = %s and step = 2", run_id)
    assert set(calls) == {("done", "made")}, calls
    assert stack.duplicates() == {}
    assert survivor.terminate() == 0


# -- leader failover ----------------------------------------------------------------------


def leader_expiry(stack: Stack) -> float | None:
    rows = stack.query("select extract(epoch from expires_at)::float8"
                       " from ticketiq.leader_leases where name = 'sweeper'")
    return rows[0][0] if rows else None


def test_killed_leader_is_replaced_and_a_follower_sweeps_within_one_lease(stack: Stack) -> None:
    """Default 8 s leases: from the kill to the follower's first sweep, at most 8 s.

    The leader is killed just after it renewed its leader lease, the worst moment.
    """
    lead = up(spawn_worker(stack, "leader"))
    wait_until("the first process to lead", lambda: leader(stack) == "leader", 10)
    follower = up(spawn_worker(stack, "follower"))
    before = leader_expiry(stack)
    wait_until("the leader renewed its lease", lambda: leader_expiry(stack) != before, 5, 0.01)
    assert leader(stack) == "leader"

    # A run of a dead process whose lease lapses just after the kill: only a sweep
    # by the new leader can claim it.
    run_id = ghost_run(stack, {"seed": 61, "steps": 2, "plan": "reads"}, ttl=0.3)
    killed_at = time.time()
    lead.signal(signal.SIGKILL)
    assert lead.wait(10) == KILLED

    swept = wait_until("the follower swept the lapsed run",
                       lambda: audit(stack, "agent.run.lease_lapsed", run_id), 15)[0]
    claims = [c for c in audit(stack, "leader.claimed") if c["actor"] == "follower"]
    print(f"\nleader SIGKILL -> follower leads: {claims[0]['at'] - killed_at:.2f}s, "
          f"sweeps: {swept['at'] - killed_at:.2f}s")
    assert swept["actor"] == "follower"
    assert swept["at"] - killed_at <= LEASE_TTL
    assert leader(stack) == "follower"
    wait_until("the swept run completed",
               lambda: run_row(stack, run_id)["status"] == "completed", 10)
    assert follower.terminate() == 0


def test_resigning_leader_lets_the_follower_take_over_at_once(stack: Stack) -> None:
    """SIGTERM: the leader resigns before it drains its runs; NOTIFY ticketiq_leader."""
    # Leader lease of 27 s and a follower that ticks every 30 s: only the NOTIFY can
    # make the follower lead within seconds.
    lead = up(spawn_worker(stack, "leader", TICKETIQ_LEASE_TTL="30"))
    wait_until("the first process to lead", lambda: leader(stack) == "leader", 10)
    follower = up(spawn_worker(stack, "follower", TICKETIQ_SWEEP_INTERVAL="30"))
    lead.send(cmd="start", seed=71, steps=3, plan="reads", model_delay=2.0)
    run_id = lead.wait_event("started")["run_id"]
    wait_until("step 1 asked", lambda: asked(stack, run_id, 1, lead.pid), 10, 0.01)
    time.sleep(0.3)
    assert leader(stack) == "leader"

    terminated_at = time.time()
    lead.signal(signal.SIGTERM)
    claim = wait_until("the follower leads",
                       lambda: [c for c in audit(stack, "leader.claimed")
                                if c["actor"] == "follower"], 10)[0]
    (resigned,) = audit(stack, "leader.resigned")
    print(f"\nleader SIGTERM -> follower leads: {claim['at'] - terminated_at:.3f}s "
          f"(resigned -> claimed {claim['at'] - resigned['at']:.3f}s)")
    assert claim["at"] - resigned["at"] < 1.0
    assert claim["at"] - terminated_at < 2.0
    # It resigned first, then drained its run (released at the end of step 1).
    released = wait_until("the run released",
                          lambda: audit(stack, "agent.run.released", run_id), 10)[0]
    assert resigned["at"] < released["at"]
    assert lead.wait(20) == 0, lead.stderr_text()
    wait_until("the run completed", lambda: run_row(stack, run_id)["status"] == "completed", 20)
    assert run_row(stack, run_id)["loss_count"] == 0
    assert follower.terminate() == 0


# -- ticketiq-pg worker ------------------------------------------------------------------


def test_cli_worker_resumes_runs_and_hands_them_over_on_sigterm(stack: Stack) -> None:
    """``ticketiq-pg worker`` (app from TICKETIQ_APP): adopt, then SIGTERM."""
    cli = spawn_cli_worker(stack, "cli", app=None, TICKETIQ_APP="harness.scripted:app")
    wait_until("the CLI worker to lead", lambda: leader(stack) == "cli", 15)
    run_id = ghost_run(stack, {"seed": 81, "steps": 4, "plan": "mixed", "model_delay": 0.7},
                       release=True)
    wait_until("the CLI worker asked step 1", lambda: asked(stack, run_id, 1, cli.pid), 10, 0.01)
    adopted = audit(stack, "agent.run.adopted", run_id)
    assert [a["actor"] for a in adopted] == ["cli"]
    cli.signal(signal.SIGTERM)
    assert cli.wait(20) == 0, cli.stderr_text()
    log = cli.stderr_text()
    for text in ("worker cli started", "SIGTERM: shutting down gracefully",
                 "worker cli stopped", "1 released"):
        assert text in log, log
    ghost, released = audit(stack, "agent.run.released", run_id)
    assert ghost["actor"] == "ghost"
    assert (released["actor"], released["detail"]["step"]) == ("cli", 1)
    assert leader(stack) is None  # resigned

    # Another process takes the released run on and finishes it.
    other = up(spawn_worker(stack, "other"))
    done = other.wait_event("outcome", timeout=20, run_id=run_id)
    assert done["status"] == "completed"
    assert run_row(stack, run_id)["loss_count"] == 0
    assert Counter(e["step"] for e in asks(stack, run_id)) == Counter({1: 1, 2: 1, 3: 1, 4: 1})
    assert other.terminate() == 0


def test_cli_worker_needs_an_app(stack: Stack) -> None:
    missing = spawn_cli_worker(stack, "no-app", app="harness.scripted:no_such_thing")
    assert missing.wait(20) == 1
    assert "has no 'no_such_thing'" in missing.stderr_text()
    unset = spawn_cli_worker(stack, "unset", app=None, TICKETIQ_APP="")
    assert unset.wait(20) == 1
    assert "pass --app module:function or set TICKETIQ_APP" in unset.stderr_text()
    assert stack.query("select process_id from ticketiq.processes") == []


# -- LISTEN reconnect ---------------------------------------------------------------------


def listener_pid(stack: Stack, name: str) -> int | None:
    rows = stack.query(
        "select pid from pg_stat_activity where application_name = %s",
        f"ticketiq-listen:{name}",
    )
    return rows[0][0] if len(rows) == 1 else None


def test_listener_reconnects_after_its_session_is_terminated(stack: Stack) -> None:
    """The LISTEN session is killed twice; NOTIFY (and the wake-up on reconnect) still work."""
    stack.settings.update(FAST)
    # A 30 s poll: a run adopted within a second was found through the listener.
    worker = up(spawn_worker(stack, "listening", TICKETIQ_POLL_INTERVAL="30"))
    first_pid = wait_until("the listener session", lambda: listener_pid(stack, "listening"), 5)
    stack.query("select pg_terminate_backend(%s)", first_pid)
    second_pid = wait_until(
        "a new listener session",
        lambda: (p := listener_pid(stack, "listening")) not in (None, first_pid) and p, 10)

    def adopted_within(run_id: str, seconds: float) -> float:
        released_at = audit(stack, "agent.run.released", run_id)[0]["at"]
        done = worker.wait_event("outcome", timeout=20, run_id=run_id)
        assert done["status"] == "completed"
        (adopted,) = audit(stack, "agent.run.adopted", run_id)
        assert adopted["actor"] == "listening"
        took = adopted["at"] - released_at
        assert took < seconds, took
        return took

    # 1. Reconnected: the NOTIFY of a released run wakes the worker at once.
    first = ghost_run(stack, {"seed": 91, "steps": 2, "plan": "reads"}, release=True)
    took_notify = adopted_within(first, 1.0)

    # 2. A run released in the same transaction that ends the listener's session: its
    #    NOTIFY may go nowhere; the poll the listener makes when it is back finds it.
    ((second,),) = stack.query(
        "select run_id::text from ticketiq.start_run(p_holder => 'ghost', p_owner => 'alice',"
        " p_run_as => 'alice', p_channel => 'playground', p_entry_point => 'scripted',"
        " p_may_wait => true, p_ttl_seconds => 60, p_input => %s::jsonb)",
        json.dumps({"seed": 92, "steps": 2, "plan": "reads"}),
    )
    with psycopg.connect(stack.db_url) as conn:  # one transaction
        conn.execute("select pg_terminate_backend(%s)", [second_pid])
        conn.execute("select * from ticketiq.release_run(%s, 1, 'test')", [second])
    took_gap = adopted_within(second, 5.0)
    third_pid = wait_until("the listener again", lambda: listener_pid(stack, "listening"), 10)
    assert third_pid not in (first_pid, second_pid)
    print(f"\nadopted after reconnect: {took_notify:.3f}s; across the gap: {took_gap:.3f}s")
    assert worker.terminate() == 0
    assert worker.stderr_text().count("LISTEN connection lost") == 2, worker.stderr_text()



async def test_a_worker_keeps_only_its_newest_outcomes_and_counts_them_all(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that ends millions of runs must not keep each one's outcome (and answer)."""
    from test_liveness import _answering_worker

    from ticketiq_pg.runtime import worker as worker_module

    monkeypatch.setattr(worker_module, "RECENT_OUTCOMES", 2)
    worker = _answering_worker(db_url, "keeper-of-two")
    await worker.start()
    try:
        handles = [await worker.start_run(owner="u", run_as="u", channel="api",
                                          entry_point="api", input={"n": n})
                   for n in range(5)]
        ended = [await h.outcome() for h in handles]
        assert [o.status for o in ended] == ["completed"] * 5
        assert len(worker.outcomes) == 2
        assert {o.run_id for o in worker.outcomes} <= {o.run_id for o in ended}
        assert worker.ended == Counter(completed=5)
    finally:
        await worker.shutdown()
