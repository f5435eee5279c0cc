"""The wheel an app author installs: the public API, the SQL an install needs, nothing else
(none of the repository's harness: no simulator, kill trial or cluster).

Built from this checkout with hatchling (no network), installed into a folder of its own
and imported from there by a fresh interpreter outside the checkout, which then installs
the schema on a database of its own through the packaged CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What the repository's harness/ holds and the wheel must not: the vendor and model
#: provider simulators, the kill trials, the clusters (standby, Patroni), the edge, the pooler.
HARNESS_NAMES = ("vendor_sim", "provider_sim", "trial", "cluster", "patroni", "replicated",
                 "edge", "pooler")

pytest.importorskip("hatchling", reason="the test extra installs hatchling to build the wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (built,) = out.glob("ticketiq_pg-*.whl")
    return built


def test_the_wheel_carries_the_sql_an_install_needs_and_no_tests(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "ticketiq_pg/py.typed" in names
    assert "ticketiq_pg/sql/comments.sql" in names and "ticketiq_pg/sql/grants.sql" in names
    assert "ticketiq_pg/sql/schema.sql" not in names  # the tables are in the migrations
    assert any(n.startswith("ticketiq_pg/sql/functions/") for n in names)
    assert any(n.startswith("ticketiq_pg/sql/migrations/") for n in names)
    assert not [n for n in names if n.startswith("ticketiq_pg/sql/tests/")]
    assert not [n for n in names if n.startswith(("tests/", "examples/", "bench/"))]


def test_the_wheel_carries_no_harness(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.split("/")[0] in ("harness", "tests", "bench")]
    # every package and module of the wheel, by each part of its path
    parts = {part.removesuffix(".py") for n in names if n.endswith(".py")
             for part in n.split("/")}
    assert "testing" in parts and "apps" in parts  # the helpers for an app's tests stay
    assert sorted(p for p in parts if any(bad in p for bad in HARNESS_NAMES)) == []


def test_an_installed_wheel_gives_the_public_api_and_installs_the_schema(
    wheel: Path, tmp_path: Path, empty_db_url: str,
) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
         "-q", "--target", str(target), str(wheel)],
        check=True, capture_output=True, text=True,
    )
    code = f"""
import json, sys, ticketiq_pg
from ticketiq_pg.db.sqlfiles import sql_dir
names = [n for n in ticketiq_pg.__all__ if n != "create_front"]
values = {{n: getattr(ticketiq_pg, n) for n in names}}
web = "fastapi" in sys.modules
from ticketiq_pg.ops.cli import main
rc = main(["migrate", "--database-url", {empty_db_url!r}])
print(json.dumps({{"file": ticketiq_pg.__file__, "sql": str(sql_dir()), "names": len(names),
                  "fastapi": web, "rc": rc}}))
"""
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["file"].startswith(str(target))  # the wheel's copy, not the checkout
    assert report["sql"].startswith(str(target))
    assert report["names"] >= 40 and report["fastapi"] is False and report["rc"] == 0
