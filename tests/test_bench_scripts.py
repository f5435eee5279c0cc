"""The server-side measuring scripts of docs/performance.md section 1 still run.

``scripts/checkpoint_floor.py`` and ``scripts/checkpoint_cpu.py`` create a
database of their own on the test server, send each of their statements
through ``pgbench`` for a second, print their table and drop the database.
The figures are not judged here (timings are the bench's business); only that
every arm ran (and, for the floor, that each fenced arm wrote one row per
transaction, which the script itself checks), so the published commands
cannot rot.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("pgbench") is None,
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


def test_checkpoint_cpu_measures_every_arm(pg_server_url: str) -> None:
    out = _run(pg_server_url, "scripts/checkpoint_cpu.py", "--seconds", "1", "--rounds", "1")
    for arm in ("raw UPDATE of the same body", "write_checkpoint, current schema (8)",
                "write_checkpoint, + column checks", "write_checkpoint, + pglz"):
        found = re.search(rf"^{re.escape(arm)} +([\d,]+)/s", out, re.MULTILINE)
        assert found is not None, (arm, out)
        assert float(found.group(1).replace(",", "")) > 0, (arm, out)
    assert _leftover(pg_server_url, "tiq_ckcpu") == []
