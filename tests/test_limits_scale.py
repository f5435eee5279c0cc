"""Issue 43's scale checks, small (scripts/limits_scale.py runs the same code at full size).

A vendor that answers 429 past 10 requests a second: two worker processes and 60 runs
writing to it under the app's 8 a second see at most 10 in any second after the first,
no 429 after it, every run completed, none lost, no write twice.  Owner A's 120 runs
queued against B's 5 submitted later, two processes with a per-owner limit of 6: B's
runs start before A's median wait and with at most one turn of A's (two processes'
claims) started meanwhile; A's urgent run starts in the first claims, ahead of the
normal ones queued before it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.limits_scale import fair_check, vendor_check

pytestmark = pytest.mark.slow


def test_two_processes_and_many_runs_keep_under_a_vendors_rate(db_url: str,
                                                                  tmp_path: Path) -> None:
    figures = vendor_check(db_url, tmp_path, runs=60)
    print(figures)
    assert figures["completed"] == 60 and figures["failed"] == 0, figures
    assert figures["not_ended"] == 0 and figures["duplicates"] == 0, figures
    assert figures["max_in_1s_after_first_second"] <= 10, figures
    assert figures["429_after_first_second"] == 0, figures
    assert figures["tokens_taken"] == 60, figures


def test_an_owners_backlog_holds_another_owners_runs_one_turn_at_most(
        db_url: str, tmp_path: Path) -> None:
    figures = fair_check(db_url, tmp_path, a_runs=120, b_runs=5, owner_limit=6)
    print(figures)
    assert figures["b_wait_max"] < figures["a_wait_p50"], figures
    # a turn: each process's claim gives each owner one run before any owner's second,
    # and A holds at most its limit in flight: at most that many of A's start meanwhile
    assert figures["a_started_while_b_waited"] <= 2 * 6, figures
    assert figures["a_normal_started_before_urgent"] <= 2 * 6, figures
    assert figures["a_most_in_flight"] <= 6, figures
