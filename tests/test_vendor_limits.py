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
import subprocess
import sys

import psycopg
import pytest
from procs import Stack

pytestmark = pytest.mark.slow

LIMITS = json.dumps({"jira": {"rate": 8, "burst": 1}})


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
                           TICKETIQ_SCRIPT_VENDOR_LIMITS=LIMITS) for seed in (100, 200)]
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
                               {"jira": {"rate": 100, "burst": 100}}))
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
                             {"jira": {"rate": 100, "burst": 100}}))
    assert runner.wait(120) == 0, runner.stderr[-3000:]
    landed = [r["wall_at"] for r in stack.vendor.requests("jira")]
    assert len(landed) == 6 and most_in_a_second(landed) <= 3, landed
    shown = subprocess.run([*cli, "--json"], env=env, capture_output=True, text=True,
                           timeout=60)
    (row,) = json.loads(shown.stdout)
    assert (row["rate"], row["set_by"], row["taken"]) == (2.0, "operator", 6)
