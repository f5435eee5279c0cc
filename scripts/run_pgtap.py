#!/usr/bin/env python3
"""Run the pgTAP suite in sql/tests/ with pg_prove against a fresh database.

    scripts/run_pgtap.py [--sql-dir DIR] [--jobs N] [--keep-db] [TEST_FILE ...]

Creates a fresh database on TICKETIQ_TEST_DATABASE_URL's server, installs the schema
(ticketiq_pg.db.migrate.install_sync), ``CREATE EXTENSION pgtap``, runs
``sql/tests/helpers.sql`` if it exists (test helpers in schema ``tiq_test``), then
``pg_prove --recurse --ext .sql`` over every ``*.sql`` below sql/tests/ except
helpers.sql (or over the files given).  Connection details go to pg_prove through PG*
environment variables.  Exits with pg_prove's code; the database is always dropped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from ticketiq_pg.db.migrate import InstallError, install_sync  # noqa: E402
from ticketiq_pg.db.sqlfiles import sql_dir  # noqa: E402
from ticketiq_pg.testing.postgres import ENV_URL, create_database, drop_database  # noqa: E402

HELPERS = "helpers.sql"


def pg_env(url: str) -> dict[str, str]:
    """PG* variables for psql/pg_prove from a URL or conninfo."""
    params = conninfo_to_dict(url)
    mapping = {
        "host": "PGHOST",
        "port": "PGPORT",
        "user": "PGUSER",
        "password": "PGPASSWORD",
        "dbname": "PGDATABASE",
        "sslmode": "PGSSLMODE",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for key, var in mapping.items():
        if params.get(key) is not None:
            env[var] = str(params[key])
    return env


def _display(path: Path) -> str:
    """Path relative to the current directory when below it (shorter pg_prove lines)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sql-dir", type=Path, help="SQL tree (default: the package's)")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="pg_prove --jobs")
    parser.add_argument("--keep-db", action="store_true", help="do not drop the database")
    parser.add_argument("files", nargs="*", type=Path, help="test files (default: all)")
    opts = parser.parse_args(argv)

    admin_url = os.environ.get(ENV_URL)
    if not admin_url:
        print(
            f"run_pgtap: {ENV_URL} is not set (run via scripts/with_test_server.py)",
            file=sys.stderr,
        )
        return 2
    pg_prove = shutil.which("pg_prove")
    if not pg_prove:
        print("run_pgtap: pg_prove not found (`make deps`)", file=sys.stderr)
        return 2

    root = opts.sql_dir or sql_dir()
    tests_dir = root / "tests"
    files = [f.resolve() for f in opts.files] or sorted(
        p.resolve() for p in tests_dir.rglob("*.sql") if p.name != HELPERS
    )
    if not files:
        print(f"run_pgtap: no pgTAP tests in {tests_dir}: nothing to run")
        return 0

    db_url = create_database(admin_url, prefix="tiq_pgtap")
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            try:
                version = install_sync(conn, root)
            except InstallError as exc:
                print(f"run_pgtap: schema install failed: {exc}", file=sys.stderr)
                return 1
            try:
                conn.execute("create extension pgtap")
            except psycopg.Error as exc:
                print(f"run_pgtap: pgtap is not available ({exc}); `make deps`", file=sys.stderr)
                return 2
            helpers = tests_dir / HELPERS
            if helpers.is_file():
                try:
                    with conn.transaction():
                        conn.execute(helpers.read_text(encoding="utf-8"), prepare=False)
                except psycopg.Error as exc:
                    print(f"run_pgtap: {helpers} failed: {exc}", file=sys.stderr)
                    return 1
        print(f"run_pgtap: schema version {version}, {len(files)} test files", flush=True)
        cmd = [pg_prove, "--recurse", "--ext", ".sql", "--failures", "--jobs", str(opts.jobs)]
        cmd += [_display(f) for f in files]
        return subprocess.run(cmd, env=pg_env(db_url), check=False).returncode
    finally:
        if opts.keep_db:
            print(f"run_pgtap: kept database {db_url}", file=sys.stderr)
        else:
            drop_database(admin_url, db_url)


if __name__ == "__main__":
    sys.exit(main())
