"""ticketiq_pg.db.migrate on small SQL trees built per test, plus the real tree's install."""

from __future__ import annotations

import secrets
import textwrap
from pathlib import Path

import psycopg
import pytest

from ticketiq_pg.db import migrate, sqlfiles
from ticketiq_pg.db.migrate import InstallError

SCHEMA_MIGRATIONS = """
create table ticketiq.schema_migrations (
    version integer primary key,
    name text not null,
    applied_at timestamptz not null default clock_timestamp()
);
"""

ITEMS_V1 = """
create table ticketiq.items (
    item_id bigint generated always as identity primary key,
    label text not null
);
"""

ADD_ITEM = """
-- ticketiq.add_item(label)
create or replace function ticketiq.add_item(p_label text)
returns bigint
language plpgsql
as $$
declare
    v_id bigint;
begin
    insert into ticketiq.items (label) values (p_label) returning item_id into v_id;
    return v_id;
end;
$$;

comment on function ticketiq.add_item(text) is 'Insert an item.';
"""


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def tree_v1(root: Path) -> Path:
    write(
        root, "migrations/0001_core.sql", "create schema ticketiq;\n" + SCHEMA_MIGRATIONS + ITEMS_V1
    )
    write(root, "functions/add_item.sql", ADD_ITEM)
    write(root, "grants.sql", "comment on schema ticketiq is 'grants ran';\n")
    return root


def add_v2(root: Path) -> Path:
    write(
        root, "migrations/0002_add_notes.sql", "alter table ticketiq.items add column notes text;\n"
    )
    return root


def columns(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "select table_name, column_name, data_type, is_nullable, column_default"
        " from information_schema.columns where table_schema = 'ticketiq'"
        " order by table_name, ordinal_position"
    ).fetchall()


def functions(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "select p.oid::regprocedure::text from pg_proc as p"
        " where p.pronamespace = 'ticketiq'::regnamespace order by 1"
    ).fetchall()
    return [r[0] for r in rows]


def versions(conn: psycopg.Connection) -> list[tuple[int, str]]:
    return conn.execute(
        "select version, name from ticketiq.schema_migrations order by version"
    ).fetchall()


def test_fresh_install_then_upgrade(empty_db_url: str, tmp_path: Path) -> None:
    root = tree_v1(tmp_path)
    with psycopg.connect(empty_db_url) as conn:
        assert migrate.install_sync(conn, root) == 1
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert versions(conn) == [(1, "core")]
        assert functions(conn) == ["ticketiq.add_item(text)"]
        assert conn.execute("select obj_description('ticketiq'::regnamespace)").fetchone() == (
            "grants ran",
        )
        assert conn.execute("select ticketiq.add_item('a')").fetchone() == (1,)
        conn.commit()

        add_v2(root)
        assert migrate.install_sync(conn, root) == 2
        assert versions(conn) == [(1, "core"), (2, "add_notes")]
        assert ("items", "notes", "text", "YES", None) in columns(conn)
        # idempotent
        assert migrate.install_sync(conn, root) == 2
        assert conn.execute("select count(*) from ticketiq.items").fetchone() == (1,)


def test_migrations_only_is_the_same_install(pg_server_url: str, tmp_path: Path) -> None:
    from ticketiq_pg.testing.postgres import temporary_database

    root = add_v2(tree_v1(tmp_path))
    with temporary_database(pg_server_url) as a, temporary_database(pg_server_url) as b:
        with psycopg.connect(a) as ca, psycopg.connect(b) as cb:
            assert migrate.install_sync(ca, root) == 2
            assert migrate.install_from_migrations_only_sync(cb, root) == 2
            assert columns(ca) == columns(cb)
            assert functions(ca) == functions(cb)
            assert versions(ca) == versions(cb)


async def test_async_install(empty_db_url: str, tmp_path: Path) -> None:
    root = add_v2(tree_v1(tmp_path))
    async with await psycopg.AsyncConnection.connect(empty_db_url, autocommit=True) as conn:
        assert await migrate.install(conn, root) == 2
        assert await migrate.install(conn, root) == 2
    async with await psycopg.AsyncConnection.connect(empty_db_url) as conn:
        assert await migrate.install_from_migrations_only(conn, root) == 2


def test_a_fresh_install_runs_the_migrations_then_the_comments(
    empty_db_url: str, tmp_path: Path
) -> None:
    """The tables are written once, in the migrations: a fresh install runs them from 0001
    (a schema.sql beside them is not run), then comments.sql, which an upgrade runs again
    for the tables of the newest migration."""
    root = tree_v1(tmp_path)
    write(root, "schema.sql", "select 1 / 0;\n")
    write(root, "comments.sql", "comment on table ticketiq.items is 'Items.';\n")
    with psycopg.connect(empty_db_url) as conn:
        assert migrate.install_sync(conn, root) == 1
        conn.commit()
        add_v2(root)
        write(root, "comments.sql", "comment on table ticketiq.items is 'Items.';\n"
              "comment on column ticketiq.items.notes is 'Notes.';\n")
        assert migrate.install_sync(conn, root) == 2
        assert versions(conn) == [(1, "core"), (2, "add_notes")]
        assert conn.execute(
            "select obj_description('ticketiq.items'::regclass, 'pg_class'),"
            " col_description('ticketiq.items'::regclass, 2)"
        ).fetchone() == ("Items.", None)
        assert conn.execute(
            "select col_description('ticketiq.items'::regclass, 3)").fetchone() == ("Notes.",)


def test_a_tree_without_a_first_migration_is_refused(empty_db_url: str, tmp_path: Path) -> None:
    root = tree_v1(tmp_path)
    (root / "migrations/0001_core.sql").unlink()
    add_v2(root)
    with psycopg.connect(empty_db_url) as conn:
        with pytest.raises(InstallError, match="no 0001_"):
            migrate.install_sync(conn, root)


def test_stale_functions_are_dropped(empty_db_url: str, tmp_path: Path) -> None:
    root = tree_v1(tmp_path)
    write(
        root,
        "functions/gone.sql",
        "create or replace function ticketiq.gone(p int) returns int"
        " language sql as $$ select p $$;\n",
    )
    with psycopg.connect(empty_db_url) as conn:
        migrate.install_sync(conn, root)
        assert functions(conn) == ["ticketiq.add_item(text)", "ticketiq.gone(integer)"]
        conn.commit()
        (root / "functions/gone.sql").unlink()
        migrate.install_sync(conn, root)
        assert functions(conn) == ["ticketiq.add_item(text)"]


def test_failing_file_rolls_everything_back(empty_db_url: str, tmp_path: Path) -> None:
    root = tree_v1(tmp_path)
    write(root, "functions/zz_bad.sql", "create or replace function ticketiq.bad(\n  oops;\n")
    with psycopg.connect(empty_db_url) as conn:
        with pytest.raises(InstallError, match=r"(?s)zz_bad\.sql: .*syntax error.*line 2"):
            migrate.install_sync(conn, root)
        assert conn.execute("select to_regnamespace('ticketiq')").fetchone() == (None,)


def test_transaction_control_in_a_file_is_refused(empty_db_url: str, tmp_path: Path) -> None:
    root = tree_v1(tmp_path)
    write(root, "grants.sql", "commit;\n")
    with psycopg.connect(empty_db_url) as conn:
        with pytest.raises(InstallError, match="ended the install transaction"):
            migrate.install_sync(conn, root)


def test_database_newer_than_code_is_refused(empty_db_url: str, tmp_path: Path) -> None:
    root = add_v2(tree_v1(tmp_path))
    with psycopg.connect(empty_db_url) as conn:
        migrate.install_sync(conn, root)
        conn.commit()
        (root / "migrations/0002_add_notes.sql").unlink()
        with pytest.raises(InstallError, match="newer than the newest migration"):
            migrate.install_sync(conn, root)


def test_malformed_trees_are_refused(tmp_path: Path) -> None:
    root = tree_v1(tmp_path)
    write(root, "migrations/2_oops.sql", "select 1;\n")
    with pytest.raises(InstallError, match="NNNN_name.sql"):
        migrate.load_tree(root)
    (root / "migrations/2_oops.sql").unlink()
    write(root, "migrations/0001_again.sql", "select 1;\n")
    with pytest.raises(InstallError, match="version 1 also used"):
        migrate.load_tree(root)
    (root / "migrations/0001_again.sql").unlink()
    write(root, "functions/nothing.sql", "select 1;\n")
    with pytest.raises(InstallError, match="no 'create or replace function"):
        migrate.load_tree(root)


def test_sql_dir_finds_the_checkout_and_honours_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(sqlfiles.ENV_VAR, raising=False)
    found = sqlfiles.sql_dir()
    assert (found / "grants.sql").is_file() and (found / "migrations").is_dir()
    assert found.name == "sql"
    monkeypatch.setenv(sqlfiles.ENV_VAR, str(tmp_path))
    assert sqlfiles.sql_dir() == tmp_path.resolve()


def test_the_project_tree_installs_twice(db_url: str) -> None:
    tree = migrate.load_tree()
    with psycopg.connect(db_url) as conn:
        first = migrate.schema_version_sync(conn)
        assert first is not None and first >= max(tree.latest_migration, 1)
        assert migrate.install_sync(conn) == first
        names = {f.split("(")[0].removeprefix("ticketiq.") for f in functions(conn)}
        assert names == set(tree.function_names)


def test_migrate_creates_the_database_it_names_once(pg_server_url: str) -> None:
    """``ticketiq-pg migrate --create-database``: the quickstart's missing ``createdb``."""
    from ticketiq_pg.ops.cli import main
    from ticketiq_pg.testing.postgres import database_url, drop_database

    name = f"tiq_test_created_{secrets.token_hex(4)}"
    url = database_url(pg_server_url, name)
    try:
        assert main(["migrate", "--database-url", url]) == 1  # not there, not created
        assert main(["migrate", "--create-database", "--database-url", url]) == 0
        with psycopg.connect(url) as conn:
            assert migrate.schema_version_sync(conn) == migrate.load_tree().latest_migration
        assert migrate.create_database_sync(url) is False  # there now: left as it is
        assert main(["migrate", "--create-database", "--database-url", url]) == 0
    finally:
        drop_database(pg_server_url, name)
