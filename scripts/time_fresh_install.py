#!/usr/bin/env python3
"""Time a fresh install two ways, side by side (printed, not asserted).

    scripts/with_test_server.py -- .venv/bin/python scripts/time_fresh_install.py [--rounds N]
        [--schema-from REV]

* ``migrations``: what ``ticketiq-pg migrate`` does on an empty database, the SQL tree of
  this checkout (migrations 0001..N, then the functions and grants);
* ``one file``: the same installer on a copy of the tree whose only migration is the
  hand-written ``sql/schema.sql`` of git revision REV (default: c18854f, the last commit
  that had one), which created every table at the newest version in one file.

Both arms go through ``install_from_migrations_only_sync`` (the migrations in order, then
``comments.sql``, the functions and the grants, in the install transaction); each installs
into a new database of its own (created before the clock starts), the two alternating;
``tables only`` is the same without ``functions/`` and ``grants.sql`` (which both arms run
alike).  Milliseconds: median (min-max).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from ticketiq_pg.db import migrate, sqlfiles  # noqa: E402
from ticketiq_pg.testing.postgres import ENV_URL, temporary_database  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_REV = "c18854f"


def one_file_tree(dest: Path, rev: str, *, tables_only: bool) -> Path:
    """A copy of the SQL tree whose one migration is ``sql/schema.sql`` at ``rev``."""
    shutil.copytree(sqlfiles.sql_dir(), dest, ignore=shutil.ignore_patterns("tests"))
    shutil.rmtree(dest / "migrations")
    (dest / "migrations").mkdir()
    schema = subprocess.run(["git", "show", f"{rev}:sql/schema.sql"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    (dest / "migrations" / "0001_schema.sql").write_text(schema)
    return strip(dest) if tables_only else dest


def strip(root: Path) -> Path:
    """Leave out what both arms run alike: the functions and the grants."""
    shutil.rmtree(root / "functions", ignore_errors=True)
    (root / "grants.sql").unlink(missing_ok=True)
    return root


def timed_install(server: str, root: Path) -> float:
    with temporary_database(server) as url, psycopg.connect(url) as conn:
        start = time.perf_counter()
        migrate.install_from_migrations_only_sync(conn, root)
        return (time.perf_counter() - start) * 1000


def show(samples: list[float]) -> str:
    return f"{statistics.median(samples):7.1f} ({min(samples):.1f}-{max(samples):.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--schema-from", default=DEFAULT_REV, metavar="REV")
    opts = parser.parse_args()
    server = os.environ.get(ENV_URL)
    if not server:
        parser.error(f"{ENV_URL} is not set: run through scripts/with_test_server.py")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        trees = {
            ("migrations", False): sqlfiles.sql_dir(),
            ("migrations", True): strip(shutil.copytree(
                sqlfiles.sql_dir(), base / "mig", ignore=shutil.ignore_patterns("tests"))),
            ("one file", False): one_file_tree(base / "one", opts.schema_from, tables_only=False),
            ("one file", True): one_file_tree(base / "one_t", opts.schema_from, tables_only=True),
        }
        times: dict[tuple[str, bool], list[float]] = {key: [] for key in trees}
        for _ in range(opts.rounds):
            for key, root in trees.items():
                times[key].append(timed_install(server, root))
    print(f"fresh install, {opts.rounds} rounds alternating, ms median (min-max);"
          f" one file = sql/schema.sql at {opts.schema_from}")
    print(f"{'':12} {'whole install':>24} {'tables only':>24}")
    for arm in ("migrations", "one file"):
        print(f"{arm:12} {show(times[(arm, False)]):>24} {show(times[(arm, True)]):>24}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
