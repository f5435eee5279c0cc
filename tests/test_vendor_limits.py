"""A vendor's limits shared by every process (``Tool.vendor``, ``VendorLimit``).

Two real worker processes write to a vendor that answers 429 past 10 requests in any
second (the vendor simulator's own rate limit), with the app's limit for that vendor at
8 a second: the vendor never sees more than it takes, the processes together never
meet a 429 once their first second is past, every run completes.  A 429 one process
meets slows the other too.  Judged by what the vendor recorded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from procs import Stack

pytestmark = pytest.mark.slow

LIMITS = json.dumps({"jira": {"rate": 8, "burst": 1}})
#: Calls wait for tokens holding their leases (``--exit-after`` counts a suspended run as
#: ended here); the suspension past the threshold has a test of its own, below.
HOLD = {"TICKETIQ_VENDOR_SUSPEND_AFTER": "600"}


def most_in_a_second(times: list[float]) -> int:
    """The most requests in any window of one second."""
    times = sorted(times)
    most, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def test_two_processes_keep_together_under_a_vendors_rate(stack: Stack) -> None:
    stack.vendor.rate_limit("jira", 10)
    runners = [stack.spawn("--start", "20", "--exit-after", "20", "--seed", str(seed),
                           "--steps", "3", "--plan", "mixed",
                           TICKETIQ_SCRIPT_VENDOR_LIMITS=LIMITS, **HOLD) for seed in (100, 200)]
    for runner in runners:
        assert runner.wait(180) == 0, runner.stderr[-3000:]
    assert stack.query("select status, count(*) from ticketiq.runs group by status") == [
        ("completed", 40)]
    jira = stack.vendor.requests("jira")
    start = min(r["wall_at"] for r in jira)
    landed = [r["wall_at"] for r in jira if r["status"] != 429]
    refused = [r for r in jira if r["status"] == 429 and r["wall_at"] >= start + 1.0]
    # four Jira calls a run (a read and a comment in each of two steps)
    assert len(landed) == 160
    assert most_in_a_second(landed) <= 10, most_in_a_second(landed)
    assert refused == []
    assert stack.duplicates() == {}
    with psycopg.connect(stack.db_url) as conn:
        ((taken, waited),) = conn.execute(
            "select taken, waited from ticketiq.vendor_limit_figures() where vendor = 'jira'"
        ).fetchall()
    assert taken == 160 and waited > 0


def test_a_429_one_process_meets_slows_every_process(stack: Stack) -> None:
    stack.vendor.fault("jira", "throttle", seconds=2.0, count=1)
    # steps with a model's time between them: requests before and well after the 429
    runners = [stack.spawn("--start", "3", "--exit-after", "3", "--seed", str(seed),
                           "--steps", "4", "--plan", "reads", "--model-delay", "0.4",
                           TICKETIQ_SCRIPT_VENDOR_LIMITS=json.dumps(
                               {"jira": {"rate": 100, "burst": 100}}), **HOLD)
               for seed in (300, 400)]
    for runner in runners:
        assert runner.wait(120) == 0, runner.stderr[-3000:]
    jira = stack.vendor.requests("jira")
    throttled = [r for r in jira if r["status"] == 429]
    assert len(throttled) == 1
    at = throttled[0]["wall_at"]
    after = [r["wall_at"] - at for r in jira if r["wall_at"] > at]
    # Every process waited the vendor's Retry-After (2 s) before its next request; only
    # requests already on the wire when the 429 came (tokens taken before) land at once.
    assert [t for t in after if 0.2 < t < 1.9] == [], after
    assert len([t for t in after if t >= 1.9]) >= 4, after
    with psycopg.connect(stack.db_url) as conn:
        ((slowed,),) = conn.execute(
            "select slowed from ticketiq.vendor_limit_figures() where vendor = 'jira'"
        ).fetchall()
    assert slowed == 1


def test_an_operators_limit_holds_for_every_process_without_a_restart(stack: Stack) -> None:
    cli = [sys.executable, "-m", "ticketiq_pg.ops.cli", "limits"]
    env = {**os.environ, "TICKETIQ_DATABASE_URL": stack.db_url}
    refused = subprocess.run([*cli, "set", "Jira!", "--rate", "2"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "vendor must be" in refused.stdout
    done = subprocess.run([*cli, "set", "jira", "--rate", "2", "--burst", "1", "--json"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["set_by"] == "operator"
    # The app asks for 100 a second; the operator's 2 a second is what every call takes.
    runner = stack.spawn("--start", "3", "--exit-after", "3", "--seed", "500", "--steps", "2",
                         "--plan", "reads", TICKETIQ_SCRIPT_VENDOR_LIMITS=json.dumps(
                             {"jira": {"rate": 100, "burst": 100}}), **HOLD)
    assert runner.wait(120) == 0, runner.stderr[-3000:]
    landed = [r["wall_at"] for r in stack.vendor.requests("jira")]
    assert len(landed) == 6 and most_in_a_second(landed) <= 3, landed
    shown = subprocess.run([*cli, "--json"], env=env, capture_output=True, text=True,
                           timeout=60)
    (row,) = json.loads(shown.stdout)
    assert (row["rate"], row["set_by"], row["taken"]) == (2.0, "operator", 6)


def _wait_for(stack: Stack, sql: str, timeout: float) -> list[tuple[object, ...]]:
    """Poll the database until ``sql`` returns a row (the rows), or fail at ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = stack.query(sql)
        if rows:
            return rows
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for: {sql}; runs: " + repr(stack.query(
        "select status, wait_key, claim_reason, lease_holder, epoch, count(*) "
        "from ticketiq.runs group by 1, 2, 3, 4, 5")))


def test_a_run_waiting_past_the_threshold_suspends_and_completes_at_its_turn(
        stack: Stack) -> None:
    """A run that would wait for a token past TICKETIQ_VENDOR_SUSPEND_AFTER gives its lease
    up (suspended on vendor:jira, its calls unmarked) and a timer wakes it at its turn; a
    SIGKILL of the process while runs are suspended loses nothing: another process wakes
    them, every run completes, every write lands once and no call is settled in doubt."""
    stack.vendor.rate_limit("jira", 10)
    settings = {"TICKETIQ_SCRIPT_VENDOR_LIMITS": json.dumps({"jira": {"rate": 3, "burst": 1}}),
                "TICKETIQ_VENDOR_SUSPEND_AFTER": "0.3", "TICKETIQ_LEASE_TTL": "2",
                "TICKETIQ_RENEW_INTERVAL": "0.4", "TICKETIQ_SELF_FENCE_MARGIN": "0.3",
                "TICKETIQ_SWEEP_INTERVAL": "0.5", "TICKETIQ_POLL_INTERVAL": "0.2"}
    first = stack.spawn("--start", "8", "--seed", "700", "--steps", "3", "--plan", "mixed",
                        **settings)
    first.read_event("ready", timeout=60)
    _wait_for(stack, "select 1 from ticketiq.runs where status = 'suspended' "
              "and wait_key = 'vendor:jira' and lease_holder is null", 60)
    first.kill()
    # Killed while suspended: those runs hold nothing a dead process must give back.
    held = stack.query("select count(*) from ticketiq.runs where status = 'suspended' "
                       "and lease_holder is not null")
    assert held == [(0,)]
    second = stack.spawn(**settings)
    try:
        _wait_for(stack, "select 1 where (select count(*) from ticketiq.runs "
                  "where status = 'completed') = 8", 150)
    except AssertionError as exc:
        second.kill()
        second.wait(10)
        raise AssertionError(f"{exc}\n{second.stderr[-4000:]}") from None
    second.signal(signal.SIGTERM)
    assert second.wait(60) == 0, second.stderr[-3000:]
    assert stack.query("select status, count(*) from ticketiq.runs group by status") == [
        ("completed", 8)]
    suspensions = stack.query("select count(*) from ticketiq.audit where event = 'vendor.waiting'")
    assert suspensions[0][0] > 0
    woken = stack.query("select count(*) from ticketiq.audit where event = 'agent.run.woken' "
                        "and detail->>'wait_key' = 'vendor:jira'")
    assert woken[0][0] > 0
    # Suspended before its mark: a woken call is made as a new call, never settled as
    # one in doubt (only the killed process's running runs may have one).
    assert stack.duplicates() == {}
    created = stack.created_per_call()
    # two writes a step (an incident and a Jira comment), two steps of calls, eight runs
    assert len(created) == 32 and set(created.values()) == {1}, created
    jira = stack.vendor.requests("jira")
    assert [r for r in jira if r["status"] == 429] == []
    with psycopg.connect(stack.db_url) as conn:
        ((suspended, waiting),) = conn.execute(
            "select suspended, waiting from ticketiq.vendor_limit_figures() "
            "where vendor = 'jira'").fetchall()
    assert suspended == suspensions[0][0] and waiting == 0
