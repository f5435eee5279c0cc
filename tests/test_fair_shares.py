"""Runs waiting to start are started by priority, then fairly between owners.

Owner alice has 150 runs queued, then bob 5 and an urgent one of alice's (priority 10);
two real worker processes with a per-owner limit of 6 runs in flight
(``TICKETIQ_OWNER_MAX_RUNS``) work through them.  Bob's runs start in the first turn
(they do not wait for alice's backlog), the urgent one ahead of alice's 150, alice never
has more than 6 in flight.  Judged from the inbox's own record (received, started).
"""

from __future__ import annotations

import statistics

import psycopg
import pytest
from procs import Stack, spawn_cli_worker

from ticketiq_pg.testing import wait_for

pytestmark = pytest.mark.slow

SCRIPT = '{"seed": %d, "steps": 2, "plan": "reads", "model_delay": 0.05}'


def accept(conn: psycopg.Connection, sender: str, owner: str, seed: int,
           priority: int = 0) -> None:
    conn.execute("select ticketiq.accept_entry('run', %s, %s::jsonb, %s, %s, 'run', false, "
                 "true, %s)", (sender, SCRIPT % seed, owner, owner, priority))


def test_one_owners_backlog_does_not_hold_another_owners_runs(stack: Stack) -> None:
    with psycopg.connect(stack.db_url, autocommit=True) as conn:
        for i in range(150):
            accept(conn, f"a-{i}", "alice", i)
        for i in range(5):
            accept(conn, f"b-{i}", "bob", 1000 + i)
        accept(conn, "urgent", "alice", 2000, priority=10)
    workers = [spawn_cli_worker(stack, name, TICKETIQ_OWNER_MAX_RUNS="6")
               for name in ("w1", "w2")]
    wait_for("every run to end", lambda: stack.query(
        "select count(*) from ticketiq.entries where state <> 'answered'") == [(0,)], 240)
    rows = stack.query(
        "select sender_id, owner, extract(epoch from started_at - received_at), "
        # a claim starts its runs at one time: ties share a rank (the claim's first)
        "rank() over (order by started_at) from ticketiq.entries")
    waits = {owner: sorted(float(w) for _, o, w, _ in rows if o == owner)
             for owner in ("alice", "bob")}
    rank = {sender: int(r) for sender, _, _, r in rows}
    # bob's five and the urgent one start in the two workers' first claims (however the
    # two claims split the entries between them), not after alice's 150
    first = sorted(rank.items(), key=lambda x: x[1])[:20]
    earliest = sorted(set(rank.values()))[:2]
    assert {rank[f"b-{i}"] for i in range(5)} | {rank["urgent"]} <= set(earliest), first
    print(f"waits: bob p50 {statistics.median(waits['bob']):.2f}s max {max(waits['bob']):.2f}s; "
          f"alice p50 {statistics.median(waits['alice']):.2f}s "
          f"p99 {waits['alice'][int(len(waits['alice']) * 0.99) - 1]:.2f}s")
    assert max(waits["bob"]) < statistics.median(waits["alice"])
    # alice never had more than six runs in flight at once
    spans = stack.query(
        "select r.started, r.ended from (select e.started_at as started, "
        "coalesce(e.finished_at, now()) as ended from ticketiq.entries as e "
        "where e.owner = 'alice') as r")
    most = max(sum(1 for s, e in spans if s <= at < e) for at, _ in spans)
    assert most <= 6, most
    for worker in workers:
        worker.terminate()
