"""The server-side measuring scripts of docs/performance.md section 1 still run.

``scripts/checkpoint_floor.py`` and ``scripts/checkpoint_cpu.py`` create a
database of their own on the test server, send each of their statements
through ``pgbench`` for a second, print their table and drop the database.
The figures are not judged here (timings are the bench's business); only that
every arm ran (and, for the floor, that each fenced arm wrote one row per
transaction, which the script itself checks), so the published commands
cannot rot.  ``scripts/checkpoint_sum.py``, which adds the saved figures up
(section 1's sum), is checked on figures made up here with a known answer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[1]

needs_pgbench = pytest.mark.skipif(shutil.which("pgbench") is None,
                                   reason="pgbench (PostgreSQL's client tools) is not installed")


def _run(pg_server_url: str, *args: str) -> str:
    env = dict(os.environ, TICKETIQ_TEST_DATABASE_URL=pg_server_url)
    out = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _leftover(pg_server_url: str, prefix: str) -> list[str]:
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        rows = conn.execute("select datname from pg_database where datname like %s",
                            (prefix + "%",)).fetchall()
    return [row[0] for row in rows]


@needs_pgbench
def test_checkpoint_floor_measures_every_arm(pg_server_url: str) -> None:
    out = _run(pg_server_url, "scripts/checkpoint_floor.py", "--seconds", "1", "--rounds", "1",
               "--settings", "cpu")
    arms = ("raw UPDATE", "INSERT, keyed", "INSERT into checkpoints", "UPDATE run + INSERT",
            "INSERT, run row locked", "write_checkpoint")
    for arm in arms:
        found = re.search(rf"^    {re.escape(arm)} +([\d,]+)/s +([\d.]+)", out, re.MULTILINE)
        assert found is not None, (arm, out)
        assert float(found.group(1).replace(",", "")) > 0, (arm, out)
    # the script checks each fenced arm wrote one row per transaction (or exits non-zero)
    assert "every fenced arm wrote one row per transaction" in out
    assert "1.00" in out.splitlines()[2]  # the raw UPDATE is the 1.00 of its setting
    assert _leftover(pg_server_url, "tiq_floor") == []


@needs_pgbench
def test_checkpoint_cpu_measures_every_arm(pg_server_url: str) -> None:
    out = _run(pg_server_url, "scripts/checkpoint_cpu.py", "--seconds", "1", "--rounds", "1")
    for arm in ("raw UPDATE of the same body", "write_checkpoint, current schema (8)",
                "write_checkpoint, + column checks", "write_checkpoint, + pglz"):
        found = re.search(rf"^{re.escape(arm)} +([\d,]+)/s", out, re.MULTILINE)
        assert found is not None, (arm, out)
        assert float(found.group(1).replace(",", "")) > 0, (arm, out)
    assert _leftover(pg_server_url, "tiq_ckcpu") == []


FLOOR_OUTPUT = """\
pgbench -M prepared, 2 s x 2 rounds per arm, rotating; median tps (ratio to the raw UPDATE)
2 clients, synchronous_commit off (CPU): every fenced arm wrote one row per transaction
    raw UPDATE                    9,999/s   1.00  (9,999, 9,999)
    UPDATE run + INSERT           1,000/s   0.10  (1,000, 1,000)
1 client, durable commits (latency): every fenced arm wrote one row per transaction
    raw UPDATE                     5,000/s   1.00  (4,000, 6,000)
    INSERT, keyed                  5,000/s   1.00  (5,000, 5,000)
    UPDATE run + INSERT            2,500/s   0.50  (2,500, 2,500)
    INSERT, run row locked         4,000/s   0.80  (4,000, 4,000)
    write_checkpoint               2,000/s   0.40  (2,000, 2,000)
"""


def _sum(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/checkpoint_sum.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)


def test_checkpoint_sum_adds_the_measured_parts(tmp_path: Path) -> None:
    """Section 1's sum: B 1.0 ms, less 0.1 dumps, + loop 0.1 + seal 0.2 = a 1.2 ms step
    with a free write; the 1-client floor adds 0.05 / 0.2 / 0.3 ms (from medians of
    5,000, 4,000, 2,500, 2,000/s); C spends 0.3 ms more client CPU than B."""
    floor = tmp_path / "floor.txt"
    floor.write_text(FLOOR_OUTPUT)
    report = tmp_path / "bench.json"
    report.write_text(json.dumps({"sections": {"throughput": {
        "client_breakdown_us": {"json_dumps_us": 100.0, "seal_us": 200.0},
        "by_concurrency": {"1": {
            "raw_update_ms": 1.0, "loop_alone_ms": 0.1,
            "client_cpu_us_per_step": {"write_checkpoint_alone": 500.0, "raw_update": 200.0},
        }},
    }}}))
    done = _sum(str(floor), str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    expected = {
        "free: exactly one raw UPDATE": 1 / 1.2,
        "the insert-only statement, no function, no driver cost": 1 / 1.25,
        "the fenced two-row statement, no function": 1 / 1.4,
        "write_checkpoint as it is": 1 / 1.5,
        "write_checkpoint as it is, through the driver": 1 / 1.8,
        "insert-only inside a function like today's, through the driver": 1 / 1.65,
        "insert-only, no function cost, through the driver": 1 / 1.55,
    }
    for label, ratio in expected.items():
        found = re.search(rf"^    {re.escape(label)} +([\d.]+)$", out, re.MULTILINE)
        assert found is not None, (label, out)
        assert float(found.group(1)) == pytest.approx(ratio, abs=0.005), (label, out)
    assert "insert-only, per round: 0.000 to 0.083 ms" in out  # 1/4000 - 1/4000, 1/4000 - 1/6000
    assert re.search(r"room 0\.8 leaves the write over the raw UPDATE \(ms\): 0\.050$", out,
                     re.MULTILINE), out


def test_checkpoint_sum_refuses_a_floor_without_its_figures(tmp_path: Path) -> None:
    floor = tmp_path / "floor.txt"
    floor.write_text(FLOOR_OUTPUT.split("1 client")[0])
    report = tmp_path / "bench.json"
    report.write_text("{}")
    out = _sum(str(floor), str(report))
    assert out.returncode != 0
    assert "no '1 client, durable commits' figures" in out.stderr


def test_step_lines_counts_where_a_step_differs(pg_server_url: str, tmp_path: Path) -> None:
    """``python -m bench.step_lines --old REV`` (performance.md section 17) counts a step's
    calls and library lines in REV's tree and in this one: against this very commit the
    two counts agree, and each names the step's functions."""
    out = tmp_path / "lines.json"
    env = {**os.environ, "TICKETIQ_TEST_DATABASE_URL": pg_server_url}
    env.pop("TICKETIQ_BENCH_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "bench.step_lines", "--old", "HEAD", "--short", "1",
         "--long", "2", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(out.read_text())
    old, new = (sum(got[arm]["lines"].values()) for arm in ("old", "new"))
    assert old > 100 and abs(new - old) <= 0.01 * old, (old, new)
    assert got["new"]["lines"].get("runtime/runner.py:_drive", 0) > 0
    assert "library lines a step by function" in done.stdout
