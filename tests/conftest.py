"""Shared fixtures: one PostgreSQL server per session, a fresh database per test.

* ``pg_server_url`` (session): TICKETIQ_TEST_DATABASE_URL, or a private cluster started
  for the session (ticketiq_pg.testing.postgres.test_server_url).
* ``empty_db_url``: a fresh, empty database, dropped after the test.
* ``db_url``: a fresh database with the schema installed (migrate.install_sync).
* ``aconn``: an autocommit psycopg AsyncConnection to ``db_url``.

Tests only ever touch databases they created.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest

from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import temporary_database, test_server_url


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    url, handle = test_server_url()
    try:
        yield url
    finally:
        if handle is not None:
            handle.stop()


@pytest.fixture
def empty_db_url(pg_server_url: str) -> Iterator[str]:
    with temporary_database(pg_server_url) as url:
        yield url


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    with psycopg.connect(empty_db_url, autocommit=True) as conn:
        install_sync(conn)
    return empty_db_url


@pytest.fixture
async def aconn(db_url: str) -> AsyncIterator[psycopg.AsyncConnection]:
    conn = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
def stack(db_url: str, tmp_path):  # type: ignore[no-untyped-def]
    """A database, a vendor service process and the files child workers share."""
    from procs import start_stack

    world = start_stack(db_url, tmp_path / "stack")
    try:
        yield world
    finally:
        world.close()
