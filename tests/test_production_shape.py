"""The production shape's parts on their own: the configurations docs/operations.md gives
are the ones the harness starts, a draining process leaves a real HAProxy before it
closes, and behind a transaction-mode PgBouncer prepared statements break unless
``TICKETIQ_PREPARED_STATEMENTS=false``.  (The kill trials run them together:
``make kill-trials-shape-smoke``.)"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from harness.edge import Edge, haproxy_config
from harness.patroni import dcs_yaml, etcd_argv, node_config, to_yaml
from harness.pooler import PgBouncer, pgbouncer_config
from harness.trial_proc import Proc
from harness.trials import SEAL_KEYS
from ticketiq_pg.db.driver import TicketIQ

DOCS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


def test_the_docs_give_the_configurations_the_trials_start() -> None:
    text = DOCS.read_text()
    # The same functions write the trials' haproxy.cfg, pgbouncer.ini and Patroni DCS.
    assert haproxy_config(":8080", ["10.0.0.11:8080", "10.0.0.12:8080"],
                          "/run/haproxy/admin.sock") in text
    assert pgbouncer_config(6432, "10.0.0.5", 5432, "transaction", Path("/etc/pgbouncer"),
                            auth_type="scram-sha-256") in text
    assert dcs_yaml() in text
    assert to_yaml(node_config("ticketiq", "pg1", "10.0.0.21", 5432, 8008,
                               ["10.0.0.21:2379", "10.0.0.22:2379", "10.0.0.23:2379"],
                               "/var/lib/patroni/pg1", "/usr/lib/postgresql/15/bin",
                               network="10.0.0.0/24", auth="scram-sha-256")) in text
    assert " ".join(etcd_argv("etcd1", "/var/lib/etcd", "10.0.0.21", 2379, 2380)) in text
    assert "TICKETIQ_HTTP_DRAIN_GRACE=2" in text


@pytest.mark.skipif(not Edge.available(), reason="needs Debian's haproxy: "
                    "apt-get install -y haproxy")
def test_a_draining_process_leaves_the_edge_before_it_closes(db_url: str,
                                                              tmp_path: Path) -> None:
    with Edge(1) as edge:
        port = edge.slots[0]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
        env.update(TICKETIQ_DATABASE_URL=db_url, TICKETIQ_SEAL_KEYS=SEAL_KEYS,
                   TICKETIQ_HTTP_DRAIN_GRACE="2", TICKETIQ_VENDOR_URL="http://127.0.0.1:9",
                   TICKETIQ_MODEL_LOG=str(tmp_path / "model.log"))
        proc = Proc("drainer", [sys.executable, "-m", "ticketiq_pg.ops.cli", "worker",
                                "--app", "harness.scripted:app", "--process-id",
                                "drainer", "--http-port", str(port)],
                    env, tmp_path / "drainer.log")
        try:
            proc.wait_event("http")
            edge.wait_status(port, "UP")
            assert httpx.get(edge.url + "/healthz").json() == {"status": "ok"}
            proc.signal(signal.SIGTERM)
            began = time.monotonic()
            seen: list[int] = []
            while time.monotonic() - began < 1.5:
                seen.append(httpx.get(f"http://127.0.0.1:{port}/healthz").status_code)
                time.sleep(0.05)
            # Unready at once, and out of the edge while the process still answers.
            assert set(seen) == {503}
            edge.wait_status(port, "DOWN", timeout=1.5)
            assert proc.popen.poll() is None
            assert proc.popen.wait(30) == 0
        finally:
            proc.stop()


@pytest.mark.skipif(not PgBouncer.available(), reason="needs Debian's pgbouncer: "
                    "apt-get install -y pgbouncer")
@pytest.mark.parametrize("prepared", [True, False])
async def test_behind_a_transaction_pooler_prepared_statements_break(
        db_url: str, prepared: bool) -> None:
    # One server session for two clients: what a busy transaction-mode pool does.
    with PgBouncer(db_url, "transaction", pool_size=1) as pooler:
        url = pooler.url(db_url.rsplit("/", 1)[1])
        clients = [await TicketIQ.connect(url, min_size=1, max_size=1, prepared=prepared)
                   for _ in range(2)]
        try:
            async def ask(db: TicketIQ) -> None:
                for _ in range(8):
                    await db.schema_version()

            if prepared:
                with pytest.raises(psycopg.Error, match="prepared statement"):
                    for db in clients:
                        await ask(db)
            else:
                await asyncio.gather(*(ask(db) for db in clients))
        finally:
            for db in clients:
                await db.close()


class _Server:
    """A tiny HTTP server on a fixed port: /healthz 200; a POST answered 202 or, as a
    process dying mid-request leaves it, with the connection closed and no answer."""

    def __init__(self, port: int, *, drop_posts: bool) -> None:
        import http.server
        import threading

        drop = drop_posts
        self.posts = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts += 1
                if drop:
                    self.close_connection = True
                    self.connection.shutdown(2)  # SHUT_RDWR: an empty response
                    return
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.skipif(not Edge.available(), reason="needs Debian's haproxy: "
                    "apt-get install -y haproxy")
def test_the_edge_retries_on_the_other_process_only_what_the_inbox_recognises() -> None:
    with Edge(2) as edge:
        dying = _Server(edge.slots[0], drop_posts=True)
        healthy = _Server(edge.slots[1], drop_posts=False)
        try:
            for port in edge.slots:
                edge.wait_status(port, "UP")
            keyed = [httpx.post(edge.url + "/runs", json={}, timeout=10,
                                headers={"Idempotency-Key": f"k{i}"}).status_code
                     for i in range(4)]
            delivery = [httpx.post(edge.url + "/webhooks/x", json={}, timeout=10,
                                   headers={"X-Delivery-Id": f"d{i}"}).status_code
                        for i in range(4)]
            unkeyed = [httpx.post(edge.url + "/runs", json={}, timeout=10).status_code
                       for _ in range(4)]
        finally:
            dying.close()
            healthy.close()
        # Round robin sends every other request to the dying process.
        assert keyed == [202] * 4 and delivery == [202] * 4
        assert 502 in unkeyed and set(unkeyed) <= {202, 502}
        counters = edge.counters()
        assert counters["retries"] + counters["redispatches"] >= 4
        assert counters["hrsp_5xx"] == unkeyed.count(502)
