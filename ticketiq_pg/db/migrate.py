"""Install or upgrade the ``ticketiq`` schema from the SQL tree.

One transaction, serialised by ``pg_advisory_xact_lock(hashtext('ticketiq.install'))``:

1. run every ``migrations/NNNN_name.sql`` whose NNNN is above ``max(version)`` of
   ``ticketiq.schema_migrations`` (all of them, from ``0001``, on a database without that
   table: a fresh install and an upgrade run the same files), in order, recording
   ``(NNNN, name)`` after each one (``ON CONFLICT DO NOTHING``, so a migration may insert
   its own row, as most do).  Each table is written once, by the migrations;
   ``docs/schema.sql`` is a snapshot of what they build, generated for reading
   (``scripts/schema_snapshot.py``) and never run;
2. run ``comments.sql``: the comments on tables, columns and indexes, for the schema the
   newest migration leaves (on every install, so an upgraded database has them too);
3. drop every function/procedure of schema ``ticketiq`` whose name no file in
   ``functions/`` defines (``create or replace function ticketiq.<name>``);
4. run every ``functions/*.sql`` in sorted filename order;
5. run ``grants.sql``;
6. return ``max(version)``.

Each file is sent whole as one simple-protocol query (psycopg allows several statements
when there are no parameters), so files must not contain psql backslash commands or
transaction control (BEGIN/COMMIT/ROLLBACK): the installer checks the transaction is
still open after every file.

The steps are written once as a generator of queries (``_Query``) and driven by a
sync or an async psycopg connection.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import pq

from ticketiq_pg.db.sqlfiles import sql_dir

__all__ = [
    "InstallError",
    "SqlTree",
    "Migration",
    "load_tree",
    "install",
    "install_sync",
    "install_from_migrations_only",
    "install_from_migrations_only_sync",
    "schema_version_sync",
    "create_database_sync",
]

LOCK_SQL = "select pg_advisory_xact_lock(hashtext('ticketiq.install'))"

MIGRATION_FILE_RE = re.compile(r"^(\d{4})_(\w+)\.sql$")
FUNCTION_NAME_RE = re.compile(
    r"create\s+or\s+replace\s+(?:function|procedure)\s+ticketiq\.(\w+)\s*\(", re.IGNORECASE
)


class InstallError(RuntimeError):
    """The SQL tree is malformed, or applying one of its files failed."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path


@dataclass(frozen=True)
class SqlTree:
    root: Path
    migrations: tuple[Migration, ...]
    function_files: tuple[Path, ...]
    grants_file: Path | None
    comments_file: Path | None = None
    function_names: frozenset[str] = field(default_factory=frozenset)

    @property
    def latest_migration(self) -> int:
        return self.migrations[-1].version if self.migrations else 0


def load_tree(sql_root: Path | None = None) -> SqlTree:
    """Read the layout of the SQL tree (default: :func:`ticketiq_pg.db.sqlfiles.sql_dir`)."""
    root = Path(sql_root) if sql_root is not None else sql_dir()
    if not root.is_dir():
        raise InstallError(f"SQL directory {root} does not exist")

    migrations: list[Migration] = []
    mig_dir = root / "migrations"
    if mig_dir.is_dir():
        seen: dict[int, Path] = {}
        for path in sorted(mig_dir.glob("*.sql")):
            m = MIGRATION_FILE_RE.match(path.name)
            if not m:
                raise InstallError(f"{path}: migration files must be named NNNN_name.sql")
            version = int(m.group(1))
            if version in seen:
                raise InstallError(f"{path}: version {version} also used by {seen[version].name}")
            seen[version] = path
            migrations.append(Migration(version, m.group(2), path))
        migrations.sort(key=lambda mig: mig.version)

    fn_dir = root / "functions"
    function_files = tuple(sorted(fn_dir.glob("*.sql"))) if fn_dir.is_dir() else ()
    names: set[str] = set()
    for path in function_files:
        found = FUNCTION_NAME_RE.findall(path.read_text(encoding="utf-8"))
        if not found:
            raise InstallError(
                f"{path}: no 'create or replace function ticketiq.<name>(' in a functions/ file"
            )
        names.update(name.lower() for name in found)

    grants = root / "grants.sql"
    comments = root / "comments.sql"
    return SqlTree(
        root=root,
        migrations=tuple(migrations),
        function_files=function_files,
        grants_file=grants if grants.is_file() else None,
        comments_file=comments if comments.is_file() else None,
        function_names=frozenset(names),
    )


# --- the steps, independent of sync/async ------------------------------------------------


@dataclass(frozen=True)
class _Query:
    sql: str
    params: tuple[Any, ...] | None = None
    source: Path | None = None  # a whole file: checked to leave the transaction open


_Steps = Generator[_Query, "list[tuple[Any, ...]] | None", int]


def _run_file(path: Path) -> _Steps:
    yield _Query(path.read_text(encoding="utf-8"), source=path)
    return 0


def _apply_migrations(tree: SqlTree, above: int) -> _Steps:
    for mig in tree.migrations:
        if mig.version <= above:
            continue
        yield from _run_file(mig.path)
        yield _Query(
            "insert into ticketiq.schema_migrations (version, name, applied_at)"
            " values (%s, %s, clock_timestamp()) on conflict (version) do nothing",
            (mig.version, mig.name),
        )
    return 0


def _current_version() -> _Steps:
    rows = yield _Query("select coalesce(max(version), 0) from ticketiq.schema_migrations")
    assert rows is not None
    return int(rows[0][0])


def _table_exists() -> _Steps:
    rows = yield _Query("select to_regclass('ticketiq.schema_migrations') is not null")
    assert rows is not None
    return bool(rows[0][0])


def _install_steps(tree: SqlTree) -> _Steps:
    yield _Query(LOCK_SQL)
    if (yield from _table_exists()):
        version = yield from _current_version()
        if tree.migrations and version > tree.latest_migration:
            raise InstallError(
                f"database schema is at version {version}, newer than the newest migration "
                f"in {tree.root / 'migrations'} ({tree.latest_migration}); refusing to downgrade"
            )
    else:
        if not tree.migrations or tree.migrations[0].version != 1:
            raise InstallError(f"{tree.root / 'migrations'}: no 0001_*.sql to start from")
        version = 0
    yield from _apply_migrations(tree, above=version)
    if tree.comments_file is not None:
        yield from _run_file(tree.comments_file)

    yield from _drop_stale_functions(tree.function_names)
    for path in tree.function_files:
        yield from _run_file(path)
    if tree.grants_file is not None:
        yield from _run_file(tree.grants_file)
    return (yield from _current_version())


def _drop_stale_functions(keep: Iterable[str]) -> _Steps:
    rows = yield _Query(
        """
        select p.oid::regprocedure::text, p.prokind
        from pg_catalog.pg_proc as p
        where p.pronamespace = 'ticketiq'::regnamespace
          and p.prokind in ('f', 'p')
          and p.proname::text <> all(%s::text[])
          and not exists (
              select from pg_catalog.pg_depend as d
              where d.classid = 'pg_catalog.pg_proc'::regclass
                and d.objid = p.oid
                and d.deptype = 'e'
          )
        order by 1
        """,
        (sorted(keep),),
    )
    for signature, kind in rows or ():
        what = "procedure" if kind == "p" else "function"
        # signature is regprocedure text: already quoted and schema-qualified
        yield _Query(f"drop {what} {signature}")
    return 0


# --- drivers -------------------------------------------------------------------------------


def _file_error(query: _Query, exc: Exception) -> InstallError:
    where = str(query.source) if query.source else "installer query"
    detail = ""
    diag = getattr(exc, "diag", None)
    if diag is not None:
        parts = []
        if diag.sqlstate:
            parts.append(f"SQLSTATE {diag.sqlstate}")
        if diag.statement_position and query.source is not None:
            line = query.sql.count("\n", 0, int(diag.statement_position)) + 1
            parts.append(f"line {line}")
        if diag.context:
            parts.append(f"context: {diag.context.strip()}")
        if parts:
            detail = " (" + "; ".join(parts) + ")"
    return InstallError(f"{where}: {str(exc).strip()}{detail}")


def _check_open(query: _Query, status: pq.TransactionStatus) -> None:
    if query.source is not None and status != pq.TransactionStatus.INTRANS:
        raise InstallError(
            f"{query.source}: the file ended the install transaction "
            "(no BEGIN/COMMIT/ROLLBACK in SQL files)"
        )


def _drive_sync(conn: psycopg.Connection[Any], steps: _Steps) -> int:
    with conn.transaction():
        result: list[tuple[Any, ...]] | None = None
        try:
            while True:
                query = steps.send(result)
                try:
                    cur = conn.execute(query.sql, query.params, prepare=False)  # type: ignore[arg-type]
                    result = cur.fetchall() if cur.description is not None else None
                except psycopg.Error as exc:
                    raise _file_error(query, exc) from exc
                _check_open(query, conn.info.transaction_status)
        except StopIteration as stop:
            return int(stop.value)


async def _drive_async(conn: psycopg.AsyncConnection[Any], steps: _Steps) -> int:
    async with conn.transaction():
        result: list[tuple[Any, ...]] | None = None
        try:
            while True:
                query = steps.send(result)
                try:
                    cur = await conn.execute(query.sql, query.params, prepare=False)  # type: ignore[arg-type]
                    result = await cur.fetchall() if cur.description is not None else None
                except psycopg.Error as exc:
                    raise _file_error(query, exc) from exc
                _check_open(query, conn.info.transaction_status)
        except StopIteration as stop:
            return int(stop.value)


async def install(conn: psycopg.AsyncConnection[Any], sql_root: Path | None = None) -> int:
    """Install or upgrade the schema, functions and grants; return the schema version."""
    return await _drive_async(conn, _install_steps(load_tree(sql_root)))


def install_sync(conn: psycopg.Connection[Any], sql_root: Path | None = None) -> int:
    """Synchronous :func:`install`."""
    return _drive_sync(conn, _install_steps(load_tree(sql_root)))


async def install_from_migrations_only(
    conn: psycopg.AsyncConnection[Any], sql_root: Path | None = None
) -> int:
    """:func:`install`, named for what it does on an empty database: build it from
    migrations 0001..N (every install does, since the tables are written only there)."""
    return await _drive_async(conn, _install_steps(load_tree(sql_root)))


def install_from_migrations_only_sync(
    conn: psycopg.Connection[Any], sql_root: Path | None = None
) -> int:
    """Synchronous :func:`install_from_migrations_only`."""
    return _drive_sync(conn, _install_steps(load_tree(sql_root)))


def schema_version_sync(conn: psycopg.Connection[Any]) -> int | None:
    """``max(version)`` of ``ticketiq.schema_migrations``, or None if not installed."""
    row = conn.execute(
        "select to_regclass('ticketiq.schema_migrations') is not null", prepare=False
    ).fetchone()
    if row is None or not row[0]:
        return None
    row = conn.execute(
        "select max(version) from ticketiq.schema_migrations", prepare=False
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def create_database_sync(url: str, maintenance_db: str = "postgres") -> bool:
    """Create the database ``url`` names unless it exists; True when it was created.

    Connects to ``maintenance_db`` on the same server as the same role (which needs
    CREATEDB).  Two callers racing create it once; the loser answers False.
    """
    from psycopg import errors, sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = conninfo_to_dict(url).get("dbname")
    if not name:
        raise InstallError(f"the URL names no database to create: {url!r}")
    with psycopg.connect(make_conninfo(url, dbname=maintenance_db), autocommit=True) as conn:
        found = conn.execute("select 1 from pg_catalog.pg_database where datname = %s",
                             (name,)).fetchone()
        if found is not None:
            return False
        try:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(str(name))))
        except errors.DuplicateDatabase:
            return False
    return True
