#!/usr/bin/env python3
"""plpgsql_check over every PL/pgSQL function of schema ``ticketiq``.

    scripts/lint_plpgsql.py [--sql-dir DIR] [--keep-db]

Creates a fresh database on TICKETIQ_TEST_DATABASE_URL's server, ``CREATE EXTENSION
plpgsql_check``, installs the schema (ticketiq_pg.db.migrate.install_sync), then runs
``plpgsql_check_function_tb(oid, fatal_errors => false, extra_warnings => true,
performance_warnings => false)`` for each function; trigger functions are checked once
per table they are attached to (relid, and transition table names when the trigger has
them).  Every finding fails the run, whatever its level: errors, warnings and extra
warnings (unused variables or parameters, ...) alike.  A trigger function attached to no
table cannot be checked and fails as well.

Exit codes: 0 clean, 1 findings, 2 could not run.  The database is always dropped.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from ticketiq_pg.db.migrate import InstallError, install_sync  # noqa: E402
from ticketiq_pg.testing.postgres import ENV_URL, create_database, drop_database  # noqa: E402

FUNCTIONS_SQL = """
select p.oid, p.oid::regprocedure::text as signature,
       t.typname as rettype
from pg_catalog.pg_proc as p
join pg_catalog.pg_language as l on l.oid = p.prolang
join pg_catalog.pg_type as t on t.oid = p.prorettype
where p.pronamespace = 'ticketiq'::regnamespace
  and l.lanname = 'plpgsql'
order by 2
"""

TRIGGERS_SQL = """
select tg.tgrelid::regclass::text, tg.tgname, tg.tgoldtable, tg.tgnewtable, tg.tgrelid
from pg_catalog.pg_trigger as tg
where tg.tgfoid = %s and not tg.tgisinternal
order by 1, 2
"""

CHECK_SQL = """
select lineno, statement, sqlstate, message, detail, hint, level, "position", query, context
from plpgsql_check_function_tb(
    %(oid)s::oid::regprocedure,
    relid => %(relid)s::oid::regclass,
    fatal_errors => false,
    other_warnings => true,
    extra_warnings => true,
    performance_warnings => false,
    oldtable => %(oldtable)s,
    newtable => %(newtable)s
)
"""


@dataclass
class Finding:
    target: str
    level: str
    text: str


def _format_row(target: str, row: tuple) -> Finding:
    lineno, statement, sqlstate, message, detail, hint, level, position, query, context = row
    where = f"line {lineno}" if lineno is not None else "function"
    if statement:
        where += f" at {statement}"
    lines = [f"{target}: {where}: {level}: {message} [{sqlstate}]"]
    if query:
        lines.append(f"    query: {' '.join(query.split())}")
        if position:
            lines.append(f"    position: {position}")
    for label, value in (("detail", detail), ("hint", hint), ("context", context)):
        if value:
            lines.append(f"    {label}: {value}")
    return Finding(target, level or "?", "\n".join(lines))


def check_all(conn: psycopg.Connection) -> tuple[int, list[Finding]]:
    functions = conn.execute(FUNCTIONS_SQL).fetchall()
    findings: list[Finding] = []
    checked = 0
    for oid, signature, rettype in functions:
        targets: list[tuple[str, int, str | None, str | None]] = []
        if rettype == "trigger":
            triggers = conn.execute(TRIGGERS_SQL, (oid,)).fetchall()
            if not triggers:
                findings.append(
                    Finding(
                        signature,
                        "error",
                        f"{signature}: trigger function attached to no table: cannot be "
                        "checked (attach it in the file that defines it, or remove it)",
                    )
                )
                continue
            for relname, tgname, oldtable, newtable, relid in triggers:
                targets.append(
                    (f"{signature} [trigger {tgname} on {relname}]", relid, oldtable, newtable)
                )
        else:
            targets.append((signature, 0, None, None))
        for target, relid, oldtable, newtable in targets:
            checked += 1
            params = {"oid": oid, "relid": relid, "oldtable": oldtable, "newtable": newtable}
            try:
                rows = conn.execute(CHECK_SQL, params).fetchall()
            except psycopg.Error as exc:
                findings.append(Finding(target, "error", f"{target}: check failed: {exc}"))
                continue
            findings.extend(_format_row(target, row) for row in rows)
    return checked, findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sql-dir", type=Path, help="SQL tree (default: the package's)")
    parser.add_argument("--keep-db", action="store_true", help="do not drop the database")
    opts = parser.parse_args(argv)

    admin_url = os.environ.get(ENV_URL)
    if not admin_url:
        print(
            f"lint_plpgsql: {ENV_URL} is not set (run via scripts/with_test_server.py)",
            file=sys.stderr,
        )
        return 2

    db_url = create_database(admin_url, prefix="tiq_lint")
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            try:
                conn.execute("create extension plpgsql_check")
            except psycopg.Error as exc:
                print(
                    f"lint_plpgsql: plpgsql_check is not available ({exc}); `make deps`",
                    file=sys.stderr,
                )
                return 2
            try:
                version = install_sync(conn, opts.sql_dir)
            except InstallError as exc:
                print(f"lint_plpgsql: schema install failed: {exc}", file=sys.stderr)
                return 1
            checked, findings = check_all(conn)
    finally:
        if opts.keep_db:
            print(f"lint_plpgsql: kept database {db_url}", file=sys.stderr)
        else:
            drop_database(admin_url, db_url)

    for finding in findings:
        print(finding.text)
    by_level: dict[str, int] = {}
    for finding in findings:
        by_level[finding.level] = by_level.get(finding.level, 0) + 1
    summary = ", ".join(f"{n} {level}" for level, n in sorted(by_level.items())) or "no findings"
    print(
        f"plpgsql_check: schema version {version}, {checked} checks of PL/pgSQL functions: "
        f"{summary}"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
