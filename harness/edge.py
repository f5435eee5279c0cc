"""A real HAProxy in front of app processes' HTTP fronts, as docs/operations.md recommends.

:class:`Edge` writes :func:`haproxy_config` into a private folder and runs Debian's
``haproxy`` in the foreground on a free port, with a fixed number of server *slots*
(each a fixed free port an app process is started on: ``--http-port``).  A slot with no
process is simply down.  What the configuration does, and why:

* ``option httpchk GET /healthz`` every 500 ms, 2 failures take a server out, 2
  successes put it back: a dead process is out within about a second, a draining one
  (``/healthz`` 503 for ``TICKETIQ_HTTP_DRAIN_GRACE`` seconds) before its listener closes;
* ``retry-on conn-failure empty-response response-timeout`` with ``option redispatch 1``:
  a request cut off by a dying process is sent again, to another server;
* ``http-request disable-l7-retry`` for every ``POST`` without an ``Idempotency-Key`` or
  ``X-Delivery-Id`` header and not to ``/teams/messages`` (whose activity id is in the
  body): only requests the durable inbox recognises a second time are retried;
* ``option http-buffer-request``: a request's body is buffered before a server is picked,
  so a retry can send it again;
* ``timeout client``/``timeout server`` 65 s: they bound the silence on a connection, and
  an event stream (``GET /runs/{id}/events``, Server-Sent Events) is never silent that
  long: its front sends a ``: keepalive`` comment after 15 s without an event
  (:data:`SSE_KEEPALIVE`); ``timeout tunnel`` is for upgraded connections only, which an
  event stream is not;
* ``X-Served-By`` on every answer: the server (``app1``...) that answered it.

:meth:`Edge.stats` reads HAProxy's own counters over its admin socket (``show stat``):
the frontend's ``hrsp_5xx`` is every 5xx the edge answered.  :meth:`Edge.stop` stops
HAProxy and removes the folder.
"""

from __future__ import annotations

import csv
import io
import socket
import subprocess
import time
from pathlib import Path
from typing import Self

from harness.daemons import Daemon
from ticketiq_pg.testing.postgres import free_port

__all__ = ["Edge", "EdgeError", "haproxy_config", "INSTALL"]

INSTALL = "apt-get install -y haproxy"
#: The longest silence of an event stream: its front's keepalive (runs_api's default).
SSE_KEEPALIVE = 15.0


class EdgeError(RuntimeError):
    pass


def haproxy_config(bind: str, servers: list[str], socket_path: str) -> str:
    """The configuration docs/operations.md recommends: the edge on ``bind``
    (``host:port``) before the app processes' fronts at ``servers`` (``host:port``)."""
    lines = "\n".join(f"    server app{i + 1} {s} check" for i, s in enumerate(servers))
    return f"""\
global
    maxconn 4096
    stats socket {socket_path} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 65s
    timeout server 65s
    timeout queue 5s
    timeout http-request 10s
    option http-buffer-request
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
    option http-ignore-probes

frontend ticketiq
    bind {bind}
    default_backend app

backend app
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    default-server inter 500ms fastinter 250ms downinter 500ms rise 2 fall 2
    # Only what the durable inbox recognises a second time is sent again.
    acl keyed req.hdr(idempotency-key) -m found
    acl keyed req.hdr(x-delivery-id) -m found
    acl keyed path /teams/messages
    http-request disable-l7-retry if METH_POST !keyed
    # Which process answered (a watch trial's clients note where the edge sent them).
    http-response set-header X-Served-By %s
{lines}
"""


class Edge(Daemon):
    """HAProxy on a free port with ``slots`` server slots on fixed free ports."""

    PROGRAM = "haproxy"
    PREFIX = "tiq-edge-"
    LOG = "haproxy.log"
    ERROR = EdgeError
    INSTALL = INSTALL

    def __init__(self, slots: int = 3, *, base_dir: Path | None = None) -> None:
        super().__init__(base_dir)
        self.slots = [free_port() for _ in range(slots)]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def socket_path(self) -> str:
        assert self.dir is not None
        return str(self.dir / "admin.sock")

    def start(self) -> Self:
        binary = self._binary()
        folder = self._make_dir()
        self.port = free_port()
        config = folder / "haproxy.cfg"
        config.write_text(haproxy_config(f"127.0.0.1:{self.port}",
                                         [f"127.0.0.1:{p}" for p in self.slots],
                                         self.socket_path))
        check = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True,
                               text=True, check=False)
        if check.returncode != 0:
            raise EdgeError(f"haproxy -c refused the configuration: {check.stderr}")
        with open(folder / self.LOG, "ab") as log:
            self._proc = subprocess.Popen([binary, "-db", "-f", str(config)],
                                          stdout=log, stderr=log)
        self._wait_listening()
        return self

    def command(self, line: str) -> str:
        """One command on HAProxy's admin socket; its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(self.socket_path)
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stats(self) -> list[dict[str, str]]:
        """``show stat`` as rows (pxname, svname, status, hrsp_5xx, retries, redispatches ...)."""
        text = self.command("show stat").lstrip("# ")
        return list(csv.DictReader(io.StringIO(text)))

    def status(self, slot_port: int) -> str:
        """UP, DOWN, ... of the server on ``slot_port``."""
        name = f"app{self.slots.index(slot_port) + 1}"
        for row in self.stats():
            if row["pxname"] == "app" and row["svname"] == name:
                return row["status"].split()[0]
        raise EdgeError(f"no server {name}")

    def wait_status(self, slot_port: int, wanted: str, timeout: float = 20.0) -> float:
        """Wait until the edge sees the server on ``slot_port`` as ``wanted``; seconds taken."""
        began = time.monotonic()
        while self.status(slot_port) != wanted:
            if time.monotonic() - began > timeout:
                raise EdgeError(f"server on {slot_port} not {wanted} in {timeout:g}s")
            time.sleep(0.05)
        return time.monotonic() - began

    def counters(self) -> dict[str, int]:
        """The edge's own tallies: responses by class, retries and redispatches."""
        out = {"hrsp_2xx": 0, "hrsp_4xx": 0, "hrsp_5xx": 0, "retries": 0, "redispatches": 0}
        for row in self.stats():
            if row["pxname"] == "ticketiq" and row["svname"] == "FRONTEND":
                for key in ("hrsp_2xx", "hrsp_4xx", "hrsp_5xx"):
                    out[key] = int(row[key] or 0)
            if row["pxname"] == "app" and row["svname"] == "BACKEND":
                out["retries"] = int(row["wretr"] or 0)
                out["redispatches"] = int(row["wredis"] or 0)
        return out
