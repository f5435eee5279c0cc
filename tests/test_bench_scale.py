"""The scale sections of the bench (issue 24), at smoke size, on the test server.

``python -m bench --smoke --only concurrency,takeover``: throughput against
concurrency with the server's CPU and WAL per step for both arms, and a worker
process holding runs SIGKILLed and taken over: every run resumed once, none
lost, each figure in the JSON and the table; and a worker whose runs all
suspended, with the memory they left in it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_smoke_bench_measures_concurrency_and_a_takeover(pg_server_url: str,
                                                              tmp_path: Path) -> None:
    out_json = tmp_path / "bench.json"
    env = dict(os.environ, TICKETIQ_BENCH_DATABASE_URL=pg_server_url)
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--only", "concurrency,takeover", "--json",
         str(out_json)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sections = json.loads(out_json.read_text())["sections"]
    conc = sections["concurrency"]["by_latency"]
    assert set(conc) == {"0", "20"}
    for by_c in conc.values():
        assert set(by_c) == {"1", "8"}
        for fig in by_c.values():
            assert fig["ticketiq_steps_per_s"] > 0 and fig["raw_update_steps_per_s"] > 0
            # a checkpoint writes WAL: a meter that saw nothing would read 0
            assert fig["wal_bytes_per_step"]["ticketiq"] > 500
            assert fig["wal_bytes_per_step"]["raw_update"] > 500
            assert fig["server_cpu_us_per_step"]["ticketiq"] > 0
    take = sections["takeover"]["takeover"]
    runs = take["runs"]
    assert (take["lost"], take["duplicates"]) == (0, 0)
    assert take["taken_over"] == take["by_session"] == runs
    assert take["next_step_written_s"]["n"] == len(take["samples_s"]) == runs
    assert 0 < take["claimed_s"]["max"] <= take["adopted_s"]["max"] \
        <= take["next_step_written_s"]["max"]
    memory = sections["takeover"]["memory"][str(runs)]
    assert memory["rss_in_flight_kib"] > memory["rss_before_kib"] > 0
    suspended = sections["takeover"]["memory_suspended"][str(runs)]
    assert suspended["suspended_in_db"] == runs
    assert suspended["outcomes"] == {"suspended": runs}
    assert suspended["heap_per_run_bytes"] > 0
    assert "worker memory, 20 runs suspended" in done.stdout
    assert "a killed process's 20 runs: kill -> next step written" in done.stdout
    assert "8 at once, model 20 ms" in done.stdout
