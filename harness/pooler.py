"""A real PgBouncer in front of a PostgreSQL server, in session or transaction mode.

:class:`PgBouncer` writes :func:`pgbouncer_config` into a private folder and runs
Debian's ``pgbouncer`` in the foreground on a free port; every database name is passed
through to the server (``* = host=... port=...``), every user is let in (``auth_type =
trust``, the users in a private ``userlist.txt``) and logs in to the server as itself.
Under euid 0 it runs as the ``postgres`` system user (PgBouncer refuses root).
:meth:`PgBouncer.errors` returns the log lines that name a prepared statement or a
session state gone wrong: a trial behind a transaction-mode pooler must leave none.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Self
from urllib.parse import quote, urlsplit

from harness.daemons import Daemon
from ticketiq_pg.testing.postgres import PG_SYSTEM_USER, free_port

__all__ = ["PgBouncer", "PoolerError", "pgbouncer_config", "INSTALL", "MODES"]

INSTALL = "apt-get install -y pgbouncer"
MODES = ("session", "transaction")
#: What a trial behind a pooler must never log (the pooler's log or an app process's).
BROKEN = re.compile(r"prepared statement|DISCARD ALL|advisory lock|session state|"
                    r"unsupported startup parameter", re.IGNORECASE)


class PoolerError(RuntimeError):
    pass


def pgbouncer_config(port: int, server_host: str, server_port: int, mode: str,
                     folder: Path, *, pool_size: int = 40, auth_type: str = "trust") -> str:
    """The configuration docs/operations.md recommends (``mode``: session|transaction).

    The trials use ``auth_type = trust`` (their server trusts 127.0.0.1); the docs show
    ``scram-sha-256`` with the same ``auth_file``."""
    return f"""\
[databases]
* = host={server_host} port={server_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = {auth_type}
auth_file = {folder}/userlist.txt
pool_mode = {mode}
default_pool_size = {pool_size}
max_client_conn = 1000
; a server session is dropped at once when its server goes away (a restart, a failover)
server_check_delay = 0
server_login_retry = 1
; psycopg sends these at connect: let them through rather than refuse the client
ignore_startup_parameters = extra_float_digits,options
"""


class PgBouncer(Daemon):
    """PgBouncer on a free port in front of the server of ``server_url``."""

    PROGRAM = "pgbouncer"
    PREFIX = "tiq-pgbouncer-"
    LOG = "pgbouncer.log"  # its stderr: it logs there in the foreground
    ERROR = PoolerError
    INSTALL = INSTALL

    def __init__(self, server_url: str, mode: str = "session", *,
                 users: tuple[str, ...] = ("postgres",), base_dir: Path | None = None,
                 pool_size: int = 40) -> None:
        super().__init__(base_dir)
        self.pool_size = pool_size
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        parts = urlsplit(server_url)
        self.server_host = parts.hostname or "127.0.0.1"
        self.server_port = parts.port or 5432
        self.mode = mode
        self.users = users

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{quote(user)}@127.0.0.1:{self.port}/{quote(dbname)}"

    def start(self) -> Self:
        binary = self._binary()
        folder = self._make_dir()
        self.port = free_port()
        (folder / "userlist.txt").write_text("".join(f'"{u}" ""\n' for u in self.users))
        config = folder / "pgbouncer.ini"
        config.write_text(pgbouncer_config(self.port, self.server_host, self.server_port,
                                           self.mode, folder, pool_size=self.pool_size))
        argv = [binary, str(config)]
        if os.geteuid() == 0:
            shutil.chown(folder, PG_SYSTEM_USER)
            for path in folder.iterdir():
                shutil.chown(path, PG_SYSTEM_USER)
            argv = ["runuser", "-u", PG_SYSTEM_USER, "--", *argv]
        with open(folder / self.LOG, "ab") as log:
            self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        self._wait_listening()
        return self

    def errors(self) -> list[str]:
        """Log lines naming a prepared statement or session state gone wrong."""
        return [line for line in self.log().splitlines()
                if BROKEN.search(line) and ("ERROR" in line or "WARNING" in line)]
