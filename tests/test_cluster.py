"""The test infrastructure itself: private clusters and throwaway databases."""

from __future__ import annotations

import socket

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from ticketiq_pg.testing.postgres import (
    PrivateCluster,
    create_database,
    drop_database,
    temporary_database,
)


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_private_cluster_starts_restarts_and_stops() -> None:
    cluster = PrivateCluster()
    with cluster:
        root = cluster.root
        assert root is not None and root.is_dir()
        assert cluster.admin_url == f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres"
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            assert conn.info.server_version >= 150000
            assert conn.execute("show max_connections").fetchone() == ("300",)
            assert conn.execute("show listen_addresses").fetchone() == ("127.0.0.1",)
            assert conn.execute("show fsync").fetchone() == ("on",)  # durability is the default
            assert conn.execute("select current_user").fetchone() == ("postgres",)
            conn.execute("create table kept (x int)")
            conn.execute("insert into kept values (42)")

        # an immediate stop is a crash: what was committed survives recovery
        cluster.restart("immediate")
        with psycopg.connect(cluster.admin_url) as conn:
            assert conn.execute("select x from kept").fetchall() == [(42,)]
        port = cluster.port

    assert not _accepts(port)
    assert not root.exists()
    assert cluster.root is None
    cluster.stop()  # idempotent


def test_create_database_is_isolated(pg_server_url: str) -> None:
    a = create_database(pg_server_url, prefix="tiq_iso")
    try:
        with temporary_database(pg_server_url, prefix="tiq_iso") as b:
            name_a = conninfo_to_dict(a)["dbname"]
            name_b = conninfo_to_dict(b)["dbname"]
            assert name_a != name_b
            assert str(name_a).startswith("tiq_iso_")
            with psycopg.connect(a, autocommit=True) as conn:
                assert conn.execute("select current_database()").fetchone() == (name_a,)
                conn.execute("create table only_in_a (x int)")
            with psycopg.connect(b, autocommit=True) as conn:
                assert conn.execute("select current_database()").fetchone() == (name_b,)
                assert conn.execute("select to_regclass('only_in_a')").fetchone() == (None,)
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            assert conn.execute(
                "select count(*) from pg_database where datname = %s", (name_b,)
            ).fetchone() == (0,)
    finally:
        # dropping works while a session is still connected (WITH (FORCE))
        held = psycopg.connect(a)
        try:
            drop_database(pg_server_url, a)
        finally:
            held.close()
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        assert conn.execute(
            "select count(*) from pg_database where datname = %s", (name_a,)
        ).fetchone() == (0,)
