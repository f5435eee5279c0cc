"""The migrations build the schema docs/schema.sql shows; installing is idempotent; an
upgraded database equals a fresh one; unknown versions are refused.

* each table is written once, by the migrations, which a fresh install runs from 0001:
  a database installed fresh (``install_sync``, the same steps as
  ``install_from_migrations_only_sync``) has every table, view, function, trigger, comment
  and grant, and its tables, indexes, views, types and comments are what the generated
  snapshot ``docs/schema.sql`` shows (``scripts/schema_snapshot.py``; a
  ``pg_dump --schema-only`` without the functions, which sql/functions/ holds);
* the comparison is not blind: a copy of the SQL tree whose migration lacks a column, an
  index, a default or a comment builds a schema that differs from the snapshot;
* installing again (either way, or twice at once) changes nothing and keeps the data;
* the driver refuses a schema version it does not know, and the installer refuses to
  downgrade.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import psycopg
import pytest
from psycopg.types.json import Jsonb

from ticketiq_pg.db import migrate, sqlfiles
from ticketiq_pg.db.driver import KNOWN_SCHEMA_VERSIONS, TicketIQ
from ticketiq_pg.db.migrate import InstallError
from ticketiq_pg.errors import SchemaVersionMismatch
from ticketiq_pg.testing.postgres import find_bindir, temporary_database

ROOT = Path(__file__).resolve().parent.parent
NEWEST = max(migrate.load_tree().latest_migration, 1)
ALL_VERSIONS = [(m.version, m.name) for m in migrate.load_tree().migrations]

TABLES = (
    "schema_migrations",
    "config",
    "processes",
    "runs",
    "checkpoints",
    "calls",
    "answers",
    "transcript_entries",
    "audit",
    "leader_leases",
)
VIEWS = ("runs_in_flight", "calls_in_doubt", "resume_audit")


def pg_dump_path() -> str:
    """pg_dump of the server's major version (15): the server's bindir first, then PATH."""
    candidates = []
    try:
        candidates.append(str(find_bindir() / "pg_dump"))
    except Exception:  # noqa: BLE001 - no server binaries: fall back to PATH
        pass
    candidates += ["/usr/lib/postgresql/15/bin/pg_dump", shutil.which("pg_dump") or ""]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    pytest.skip("pg_dump not found")


SKIP_LINE = re.compile(
    r"^(--.*|SET .*|SELECT pg_catalog\.set_config\(.*|\\restrict .*|\\unrestrict .*|)$"
)


def normalise(dump: str) -> str:
    """Drop what differs between two dumps of equal schemas: comments (``--`` lines, with the
    dump's own header and each object's "Name: ...; Owner: ..." banner), SET lines, the
    search_path reset, the ``\\restrict`` keys of recent pg_dump, blank lines."""
    lines = [line.rstrip() for line in dump.splitlines()]
    return "\n".join(line for line in lines if not SKIP_LINE.match(line)) + "\n"


def dump_schema(url: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    out = subprocess.run(
        [pg_dump_path(), "--schema-only", "--schema=ticketiq", f"--dbname={url}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return normalise(out.stdout)


def diff(a: str, b: str, names: tuple[str, str] = ("first", "second")) -> str:
    return "".join(
        difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True), *names, n=2
        )
    )


def data(url: str) -> list:
    """The rows an install writes itself (the migrations), not the applied_at."""
    with psycopg.connect(url) as conn:
        return [
            conn.execute(
                "select version, name from ticketiq.schema_migrations order by 1"
            ).fetchall(),
            conn.execute("select * from ticketiq.config").fetchall(),
        ]


def install_fresh(url: str, root: Path | None = None) -> int:
    with psycopg.connect(url) as conn:
        return migrate.install_sync(conn, root)


def install_migrations(url: str, root: Path | None = None) -> int:
    with psycopg.connect(url) as conn:
        return migrate.install_from_migrations_only_sync(conn, root)


def assert_dump_is_complete(dump: str) -> None:
    """The dump holds the whole schema, so comparing two of them compares something."""
    for table in TABLES:
        assert f"CREATE TABLE ticketiq.{table} (" in dump, table
    for view in VIEWS:
        assert f"CREATE VIEW ticketiq.{view} AS" in dump, view
    for name in migrate.load_tree().function_names:
        assert f"FUNCTION ticketiq.{name}(" in dump, name
    assert "CREATE TRIGGER answers_write_once" in dump
    assert "CREATE INDEX runs_running_lease_idx" in dump
    assert re.search(r"GRANT .* ON FUNCTION ticketiq\.start_run\(.*TO ticketiq_app;", dump)
    assert "COMMENT ON VIEW ticketiq.resume_audit IS" in dump


def schema_snapshot():  # type: ignore[no-untyped-def]
    """scripts/schema_snapshot.py as a module, and its pg_dump (skips without one, or when
    it is not the major version docs/schema.sql was made with)."""
    spec = importlib.util.spec_from_file_location(
        "schema_snapshot", ROOT / "scripts" / "schema_snapshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pg_dump = module.pg_dump_path()
    if pg_dump is None:
        pytest.skip("pg_dump not found")
    made_with = re.search(r"\(pg_dump (\d+)\)", module.SNAPSHOT.read_text())
    assert made_with, "docs/schema.sql names no pg_dump version in its header"
    if int(made_with.group(1)) != module.pg_dump_major(pg_dump):
        pytest.skip(f"docs/schema.sql was made with pg_dump {made_with.group(1)}, "
                    f"this is {module.pg_dump_major(pg_dump)}")
    return module, pg_dump


def test_the_migrations_build_the_schema_the_snapshot_shows(pg_server_url: str) -> None:
    snap, pg_dump = schema_snapshot()
    with temporary_database(pg_server_url) as fresh:
        assert install_fresh(fresh) == NEWEST
        assert_dump_is_complete(dump_schema(fresh))
        built = snap.snapshot_of(fresh, pg_dump)
        assert data(fresh)[0] == ALL_VERSIONS
        assert data(fresh)[1] == [(True, False)]
    committed = snap.SNAPSHOT.read_text()
    assert built == committed, (
        "docs/schema.sql is not what the migrations build (run scripts/schema_snapshot.py):\n"
        + diff(committed, built, ("docs/schema.sql", "migrations")))
    # and the driver knows the version the migrations arrive at
    assert NEWEST in KNOWN_SCHEMA_VERSIONS, (
        f"the SQL tree installs version {NEWEST}; the driver knows {KNOWN_SCHEMA_VERSIONS}"
    )


def test_both_install_functions_build_the_same_schema(pg_server_url: str) -> None:
    with temporary_database(pg_server_url) as fresh, temporary_database(pg_server_url) as migr:
        assert install_fresh(fresh) == NEWEST
        assert install_migrations(migr) == NEWEST
        a, b = dump_schema(fresh), dump_schema(migr)
        assert a == b, diff(a, b, ("install_sync", "install_from_migrations_only_sync"))
        assert data(fresh) == data(migr)


# Each mutation takes something out of a copy of the first migration only.
MUTATIONS = {
    "missing-column": (
        "    input jsonb not null default '{}',\n",
        "",
        "input jsonb",
    ),
    # (an index sql/comments.sql comments on fails the install instead, by its name)
    "missing-index": (
        "create index transcript_entries_run_idx on ticketiq.transcript_entries"
        " (run_id, entry_id);\n",
        "",
        "transcript_entries_run_idx",
    ),
    "other-default": (
        "    may_wait boolean not null default false,\n",
        "    may_wait boolean not null default true,\n",
        "may_wait boolean DEFAULT",
    ),
    "missing-comment": (
        "comment on view ticketiq.resume_audit is\n"
        "'One row per crash resume: the step, how often the run was lost, how each call it"
        " left was settled.';\n",
        "",
        "COMMENT ON VIEW ticketiq.resume_audit",
    ),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_the_comparison_catches_a_migration_that_differs(
    pg_server_url: str, tmp_path: Path, mutation: str
) -> None:
    snap, pg_dump = schema_snapshot()
    old, new, shows = MUTATIONS[mutation]
    root = tmp_path / "sql"
    shutil.copytree(sqlfiles.sql_dir(), root)
    first = sorted((root / "migrations").glob("0001_*.sql"))[0]
    text = first.read_text()
    assert text.count(old) == 1, f"{mutation}: the migration no longer has {old!r}"
    first.write_text(text.replace(old, new))
    a, b = snap.SNAPSHOT.read_text(), snap.build(pg_server_url, pg_dump, root)
    assert a != b
    changed = [
        line for line in diff(a, b).splitlines() if line[:1] in "+-" and line[:3] not in "+++---"
    ]
    assert any(shows in line for line in changed), diff(a, b)


def test_installing_again_changes_nothing(db_url: str) -> None:
    before = dump_schema(db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        versions = conn.execute("select * from ticketiq.schema_migrations").fetchall()
        run_id = conn.execute(
            "select run_id from ticketiq.start_run('p1', 'o', 'r', 'c', 'e', false, 60,"
            " %s)",
            (Jsonb({"keep": "me"}),),
        ).fetchone()[0]
        run = conn.execute("select * from ticketiq.runs").fetchall()
        audit = conn.execute("select * from ticketiq.audit").fetchall()
    assert install_fresh(db_url) == NEWEST
    assert install_migrations(db_url) == NEWEST
    assert install_fresh(db_url) == NEWEST
    assert dump_schema(db_url) == before
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert conn.execute("select * from ticketiq.schema_migrations").fetchall() == versions
        assert conn.execute("select * from ticketiq.runs").fetchall() == run
        assert conn.execute("select * from ticketiq.audit").fetchall() == audit
        # the functions were replaced, not duplicated, and still work on the old data
        assert conn.execute(
            "select count(*) from pg_proc where pronamespace = 'ticketiq'::regnamespace"
        ).fetchone()[0] == len(migrate.load_tree().function_names)
        assert conn.execute(
            "select held from ticketiq.renew_leases('p1', array[%s]::uuid[], '{1}', 60, 'run')",
            (run_id,),
        ).fetchone() == (True,)


def test_migrations_only_installs_again_and_matches(pg_server_url: str) -> None:
    with temporary_database(pg_server_url) as migr:
        assert install_migrations(migr) == NEWEST
        first = dump_schema(migr)
        assert install_migrations(migr) == NEWEST
        assert install_fresh(migr) == NEWEST
        assert dump_schema(migr) == first


def test_two_installs_at_once_serialise(empty_db_url: str) -> None:
    """The advisory lock makes a concurrent second install wait, then find the schema."""
    barrier = threading.Barrier(2)
    results: list[object] = []

    def install() -> None:
        try:
            with psycopg.connect(empty_db_url) as conn:
                barrier.wait(timeout=30)
                results.append(migrate.install_sync(conn))
        except Exception as exc:  # noqa: BLE001 - reported below
            results.append(exc)

    threads = [threading.Thread(target=install) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == [NEWEST, NEWEST]
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(
            "select version, name from ticketiq.schema_migrations order by 1"
        ).fetchall() == ALL_VERSIONS


async def test_driver_accepts_both_installs_and_refuses_unknown_versions(
    pg_server_url: str,
) -> None:
    with temporary_database(pg_server_url) as fresh, temporary_database(pg_server_url) as migr:
        install_fresh(fresh)
        install_migrations(migr)
        for url in (fresh, migr):
            tiq = await TicketIQ.connect(url)
            try:
                assert await tiq.check_schema() == NEWEST
                run = await tiq.start_run(
                    holder="p1", owner="o", run_as="r", channel="c", entry_point="e",
                    may_wait=False, ttl=30,
                )
                assert run.epoch == 1
            finally:
                await tiq.close()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("insert into ticketiq.schema_migrations values (999, 'future')")
            with pytest.raises(SchemaVersionMismatch, match="999"):
                await TicketIQ.connect(url)
            # and the installer will not take a newer database back to version 1
            with pytest.raises(InstallError, match="newer than the newest migration"):
                install_fresh(url)
            with psycopg.connect(url) as conn:
                assert migrate.schema_version_sync(conn) == 999


def test_schema_version_sync_without_the_schema(empty_db_url: str) -> None:
    with psycopg.connect(empty_db_url) as conn:
        assert migrate.schema_version_sync(conn) is None
        assert migrate.install_from_migrations_only_sync(conn) == NEWEST
        assert migrate.schema_version_sync(conn) == NEWEST


def sql_tree_up_to(tmp_path: Path, version: int) -> Path:
    """The SQL tree as it was at ``version``, its functions included (they may use columns
    a later migration adds): from git, the tree before the commit that added the next
    migration (the working tree's when that migration is not committed yet), without the
    migrations after ``version``."""
    root = tmp_path / "sql"
    shutil.copytree(sqlfiles.sql_dir(), root)
    later = sorted(p for p in (root / "migrations").glob("*.sql") if int(p.name[:4]) > version)
    repo = sqlfiles.sql_dir().parent
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", f"sql/migrations/{later[0].name}"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout.split() if later else []
    if added:
        shutil.rmtree(root)
        archive = subprocess.run(["git", "archive", f"{added[-1]}^", "sql"], cwd=repo,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    for path in (root / "migrations").glob("*.sql"):
        if int(path.name[:4]) > version:
            path.unlink()
    return root


def test_a_populated_database_at_version_7_upgrades_keeping_its_rows(
    pg_server_url: str, tmp_path: Path
) -> None:
    """Migration 8 changes the types of columns that hold data (their rules become
    domains): a database at version 7 with a run in flight and a finished one upgrades,
    keeps every row as it was, ends with the schema of a fresh install, and its run goes
    on where it was."""
    root = sql_tree_up_to(tmp_path, 7)
    body = Jsonb({"conversation": [], "calls": [], "counters": {}, "history": [],
                  "delegation_keys": {}, "outcomes": {}})
    with temporary_database(pg_server_url) as url, temporary_database(pg_server_url) as fresh:
        assert install_migrations(url, root) == 7
        with psycopg.connect(url, autocommit=True) as conn:
            (live, epoch), (done, done_epoch) = (
                conn.execute(
                    "select run_id, epoch from ticketiq.start_run(%s, 'o', 'r', 'c', 'e', false,"
                    " 600, '{}')", (holder,),
                ).fetchone()
                for holder in ("p1", "p2")
            )
            for step in (1, 2):
                conn.execute("select ticketiq.write_checkpoint(%s, %s, %s, %s, 's', 'k')",
                             (live, epoch, step, body))
            conn.execute("select ticketiq.fail_run(%s, %s, 'gave up')", (done, done_epoch))
            snapshot = [
                conn.execute(f"select to_jsonb(t) from ticketiq.{table} as t order by 1")
                .fetchall()
                for table in ("runs", "checkpoints", "audit")
            ]
        assert install_fresh(url) == NEWEST
        install_fresh(fresh)
        assert dump_schema(url) == dump_schema(fresh)
        with psycopg.connect(url, autocommit=True) as conn:
            assert [
                conn.execute(f"select to_jsonb(t) from ticketiq.{table} as t order by 1")
                .fetchall()
                for table in ("runs", "checkpoints", "audit")
            ] == snapshot
            assert conn.execute(
                "select step, replayed from ticketiq.write_checkpoint(%s, %s, 3, %s, 's', 'k')",
                (live, epoch, body),
            ).fetchone() == (3, False)
            assert conn.execute(
                "select status, last_step from ticketiq.get_run(%s)", (live,)
            ).fetchone() == ("running", 3)


def test_a_populated_database_at_version_8_upgrades_to_9_keeping_its_rows(
    pg_server_url: str, tmp_path: Path
) -> None:
    """Migration 9 adds the tables attempts and audit_once_keys: a database at version 8
    with a run in flight (checkpoints, a call in doubt) and a finished one upgrades, keeps
    every row as it was, ends with the schema of a fresh install, and its run in flight
    counts failed attempts and audits once from where it was."""
    root = sql_tree_up_to(tmp_path, 8)
    body = Jsonb({"conversation": [], "calls": [
        {"call_id": "w1", "tool": "crm.update", "arguments": {}, "classification": "write",
         "step_key": None}], "counters": {}, "history": [], "delegation_keys": {}})
    tables = ("runs", "checkpoints", "calls", "audit", "transcript_entries", "processes")
    with temporary_database(pg_server_url) as url, temporary_database(pg_server_url) as fresh:
        assert install_migrations(url, root) == 8
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("select ticketiq.register_process('p1', 'host-a', 1)")
            (live, epoch), (done, done_epoch) = (
                conn.execute(
                    "select run_id, epoch from ticketiq.start_run(%s, 'o', 'r', 'c', 'e', false,"
                    " 600, '{}')", (holder,),
                ).fetchone()
                for holder in ("p1", "p2")
            )
            conn.execute("select ticketiq.write_checkpoint(%s, %s, 1, %s, 's', 'k')",
                         (live, epoch, body))
            conn.execute("select ticketiq.mark_in_doubt(%s, %s, 1, 'w1')", (live, epoch))
            conn.execute("select ticketiq.fail_run(%s, %s, 'gave up')", (done, done_epoch))
            # a column a later migration adds is null on an old row: nulls are left out
            snapshot = [
                conn.execute(
                    f"select jsonb_strip_nulls(to_jsonb(t)) from ticketiq.{table} as t order by 1")
                .fetchall()
                for table in tables
            ]
        assert install_fresh(url) == NEWEST
        install_fresh(fresh)
        assert dump_schema(url) == dump_schema(fresh)
        with psycopg.connect(url, autocommit=True) as conn:
            assert [
                conn.execute(
                    f"select jsonb_strip_nulls(to_jsonb(t)) from ticketiq.{table} as t order by 1")
                .fetchall()
                for table in tables
            ] == snapshot
            assert conn.execute(
                "select version, name from ticketiq.schema_migrations order by 1"
            ).fetchall() == ALL_VERSIONS
            for count in (1, 2):
                assert conn.execute(
                    "select attempts from ticketiq.record_attempt(%s, %s, 1, 'w1', 'timeout')",
                    (live, epoch),
                ).fetchone() == (count,)
            audit = ("select audit_id, inserted from ticketiq.audit_once(%s, %s,"
                     " 'agent.run.guarantee_downgraded', 'w1', '{}')")
            first = conn.execute(audit, (live, epoch)).fetchone()
            assert first is not None and first[1] is True
            assert conn.execute(audit, (live, epoch)).fetchone() == (first[0], False)
            assert conn.execute(
                "select status, last_step from ticketiq.get_run(%s)", (live,)
            ).fetchone() == ("running", 1)


def test_a_database_at_version_9_upgrades_to_10_disabling_the_crons_that_cannot_fire(
    pg_server_url: str, tmp_path: Path
) -> None:
    """Migration 10 adds the index of answers by retention and disables each cron schedule
    that could never fire (written before upsert_cron_schedule refused them: a next fire at
    -infinity, every 1e13 seconds); every other row stays as it was, the schema is a fresh
    install's, and the good schedule fires."""
    root = sql_tree_up_to(tmp_path, 9)
    tables = ("runs", "answers", "entries", "audit")
    with temporary_database(pg_server_url) as url, temporary_database(pg_server_url) as fresh:
        assert install_migrations(url, root) == 9
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "insert into ticketiq.cron_schedules (name, every_seconds, next_fire_at, owner,"
                " run_as, channel) values ('minus_infinity', 60, '-infinity', 'o', 'r', 'c'),"
                " ('huge', 1e13, now() - interval '1 hour', 'o', 'r', 'c'),"
                " ('good', 3600, now() - interval '1 minute', 'o', 'r', 'c')")
            (run, epoch) = conn.execute(
                "select run_id, epoch from ticketiq.start_run('p1', 'o', 'r', 'c', 'e', false,"
                " 600, '{}')").fetchone()
            conn.execute("select ticketiq.seal_answer(%s, %s, 1, '{}', 'a', 'k', 60)", (run, epoch))
            snapshot = [conn.execute(f"select to_jsonb(t) from ticketiq.{table} as t order by 1")
                        .fetchall() for table in tables]
        assert install_fresh(url) == NEWEST
        install_fresh(fresh)
        assert dump_schema(url) == dump_schema(fresh)
        with psycopg.connect(url, autocommit=True) as conn:
            assert [conn.execute(f"select to_jsonb(t) from ticketiq.{table} as t order by 1")
                    .fetchall() for table in tables] == snapshot
            assert conn.execute(
                "select name, enabled from ticketiq.cron_schedules order by name").fetchall() == [
                ("good", True), ("huge", False), ("minus_infinity", False)]
            fired = conn.execute("select name from ticketiq.fire_due_crons()").fetchall()
            assert fired == [("good",)]


def test_a_database_at_version_10_upgrades_to_11_carrying_its_entries_over(
    pg_server_url: str, tmp_path: Path
) -> None:
    """Migration 11 drops the fixed list of entry kinds and gives every entry the id its run
    has (a running entry: its run's id) or will have (a pending one: a fresh id, which the
    claim then starts the run under); the schema is a fresh install's."""
    root = sql_tree_up_to(tmp_path, 10)
    with temporary_database(pg_server_url) as url, temporary_database(pg_server_url) as fresh:
        assert install_migrations(url, root) == 10
        with psycopg.connect(url, autocommit=True) as conn:
            # Rows as version 10 wrote them (today's functions need version 11).
            (running,) = conn.execute(
                "select run_id from ticketiq.start_run('p1', 'o', 'r', 'c', 'webhook', false,"
                " 600, '{}')").fetchone()
            conn.execute(
                "insert into ticketiq.entries (kind, sender_id, payload, owner, run_as, channel,"
                " may_wait, durable, received_at, state, run_id, started_at) values"
                " ('webhook', 'd-1', '{}', 'o', 'r', 'c', false, true, now(), 'running', %s,"
                " now()),"
                " ('webhook', 'd-2', '{}', 'o', 'r', 'c', false, true, now(), 'pending', null,"
                " null)", (running,))
        assert install_fresh(url) == NEWEST
        install_fresh(fresh)
        assert dump_schema(url) == dump_schema(fresh)
        with psycopg.connect(url, autocommit=True) as conn:
            rows = dict(conn.execute(
                "select sender_id, planned_run_id from ticketiq.entries").fetchall())
            assert rows["d-1"] == running and rows["d-2"] not in (None, running)
            (claimed,) = conn.execute(
                "select run_id from ticketiq.claim_entries('p1', 600, 1)").fetchone()
            assert claimed == rows["d-2"]
            created = conn.execute("select created from ticketiq.accept_entry("
                                   "'billing.refund', 'r-1', '{}', 'o', 'r', 'c')").fetchone()
            assert created == (True,)


def test_a_database_at_version_16_upgrades_to_17_keeping_its_leases_in_flight(
    pg_server_url: str, tmp_path: Path
) -> None:
    """Migration 17 puts runs and jobs on one lease machine (one fence, one renewal, one
    claim): a database at version 16 holding a running run and a running job upgrades with
    both leases as they were (holder, epoch, expiry), ends with the schema of a fresh
    install, and both are still fenced (a stale epoch is refused, the holder's write goes
    through) and renewable through the one renewal."""
    root = sql_tree_up_to(tmp_path, 16)
    body = Jsonb({"conversation": [], "calls": [], "counters": {}, "history": [],
                  "delegation_keys": {}, "outcomes": {}})
    leases = ("select to_jsonb(r) from (select run_id as id, epoch::bigint, lease_holder,"
              " lease_expires_at from ticketiq.runs union all select job_id, epoch, holder,"
              " lease_expires_at from ticketiq.jobs order by 1) as r")
    with temporary_database(pg_server_url) as url, temporary_database(pg_server_url) as fresh:
        assert install_migrations(url, root) == 16
        with psycopg.connect(url, autocommit=True) as conn:
            (run_id, run_epoch) = conn.execute(
                "select run_id, epoch from ticketiq.start_run('p1', 'o', 'r', 'c', 'e', false,"
                " 600, '{}')").fetchone()
            conn.execute("select ticketiq.write_checkpoint(%s, %s, 1, %s, 's', 'k')",
                         (run_id, run_epoch, body))
            conn.execute("select ticketiq.enqueue_job('source_sync', '{}', true, 'j1')")
            (job_id, job_epoch) = conn.execute(
                "select job_id, epoch from ticketiq.claim_job('p1', 600)").fetchone()
            before = conn.execute(leases).fetchall()
        assert install_fresh(url) == NEWEST
        install_fresh(fresh)
        assert dump_schema(url) == dump_schema(fresh)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute(leases).fetchall() == before
            for kind, lease, epoch in (("run", run_id, run_epoch), ("job", job_id, job_epoch)):
                with pytest.raises(psycopg.DatabaseError) as stale:
                    conn.execute("select ticketiq._fence(%s, %s, %s, now())",
                                 (kind, lease, epoch + 1))
                assert stale.value.sqlstate == "TQ002"
                assert conn.execute(
                    "select lease_id, held from ticketiq.renew_leases('p1', array[%s]::uuid[],"
                    " array[%s]::bigint[], 60, %s)", (lease, epoch, kind),
                ).fetchall() == [(lease, True)]
            assert conn.execute(
                "select step, replayed from ticketiq.write_checkpoint(%s, %s, 2, %s, 's', 'k')",
                (run_id, run_epoch, body),
            ).fetchone() == (2, False)
            assert conn.execute(
                "select epoch from ticketiq.checkpoint_job(%s, %s, '{\"pages\": 1}')",
                (job_id, job_epoch),
            ).fetchone() == (job_epoch,)


def test_a_database_at_version_17_upgrades_to_18_keying_trace_contexts_by_owner(
    pg_server_url: str, tmp_path: Path
) -> None:
    """Migration 18 keys trace contexts by owner (issue 46, finding 1): a context recorded
    at version 17 is carried to the owner of the first entry of its (kind, sender id), one
    with no entry is dropped; afterwards another owner's entry of the same id records and
    reads a context of its own, and the schema is a fresh install's."""
    root = sql_tree_up_to(tmp_path, 17)
    first = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    other = "00-" + "c" * 32 + "-" + "d" * 16 + "-01"
    with temporary_database(pg_server_url) as url, temporary_database(pg_server_url) as fresh:
        assert install_migrations(url, root) == 17
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("select ticketiq.record_trace_context('a2a', 't-1', %s)", (first,))
            conn.execute("select ticketiq.record_trace_context('a2a', 'orphan', %s)", (first,))
            conn.execute("select ticketiq.accept_entry('a2a', 't-1', '{}', 'alice', 'r', 'c')")
            # bob's entry of the same id, later: at version 17 it shared alice's context
            conn.execute("select ticketiq.accept_entry('a2a', 't-1', '{}', 'bob', 'r', 'c')")
        assert install_fresh(url) == NEWEST
        install_fresh(fresh)
        assert dump_schema(url) == dump_schema(fresh)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute(
                "select kind, owner, sender_id, traceparent from ticketiq.trace_contexts"
            ).fetchall() == [("a2a", "alice", "t-1", first)]
            assert conn.execute("select ticketiq.record_trace_context('a2a', 't-1', 'bob', %s)",
                                (other,)).fetchone() == (True,)
            read = dict(conn.execute(
                "select owner, ticketiq.run_trace_context(planned_run_id) from ticketiq.entries"
            ).fetchall())
            assert read == {"alice": first, "bob": other}
