"""Throwaway PostgreSQL servers and databases: :func:`~ticketiq_pg.testing.fresh_database`'s,
when no server is named (the repository's tests, scripts and benchmark use them too).

* :class:`PrivateCluster` runs ``initdb`` into a fresh temp folder and starts a postmaster
  on a free 127.0.0.1 port (unix socket in the same folder).  PostgreSQL refuses to run
  as root, so under euid 0 ``initdb``/``pg_ctl`` run as the ``postgres`` system user
  (``runuser``, else ``setpriv``) and the folder is chowned to it.
* :func:`test_server_url` gives the server tests use: ``TICKETIQ_TEST_DATABASE_URL`` if
  set, a Docker container if ``TICKETIQ_TEST_DOCKER=1`` and Docker answers, else a
  PrivateCluster.
* :func:`create_database` / :func:`drop_database` / :func:`temporary_database`: tests only
  ever work in databases they created themselves.

Only the standard library is needed to start/stop a cluster; psycopg is imported lazily.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlsplit, urlunsplit

__all__ = [
    "ClusterError",
    "PrivateCluster",
    "ServerHandle",
    "find_bindir",
    "test_server_url",
    "create_database",
    "drop_database",
    "temporary_database",
    "database_url",
]

ENV_URL = "TICKETIQ_TEST_DATABASE_URL"
ENV_DOCKER = "TICKETIQ_TEST_DOCKER"
PG_SYSTEM_USER = "postgres"


class ClusterError(RuntimeError):
    pass


class ServerHandle(Protocol):
    @property
    def admin_url(self) -> str: ...

    def stop(self) -> None: ...


def _version_key(path: str) -> tuple[int, ...]:
    m = re.search(r"/postgresql/(\d+(?:\.\d+)*)/bin", path)
    return tuple(int(x) for x in m.group(1).split(".")) if m else (0,)


def find_bindir() -> Path:
    """Directory with initdb/pg_ctl/postgres.

    Order: ``TICKETIQ_PG_BINDIR``; ``pg_config --bindir`` if it holds initdb (Debian's
    /usr/bin/pg_config points at client binaries only); the highest
    /usr/lib/postgresql/*/bin; ``initdb`` on PATH.
    """
    env = os.environ.get("TICKETIQ_PG_BINDIR")
    if env:
        return Path(env)
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
            if out and (Path(out) / "initdb").is_file():
                return Path(out)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if candidates:
        return Path(candidates[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise ClusterError(
        "no PostgreSQL server binaries (initdb) found; run `make deps` or set TICKETIQ_PG_BINDIR"
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _pkglibdir(bindir: Path) -> Path:
    pg_config = bindir / "pg_config"
    if pg_config.is_file():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [str(pg_config), "--pkglibdir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            if out:
                return Path(out)
    return bindir.parent / "lib"


class PrivateCluster:
    """A PostgreSQL cluster of our own in a temp folder; see the module docstring.

    ``fast=True`` turns off fsync/synchronous_commit/full_page_writes: never the default,
    since durability cost is measured on these clusters.
    """

    def __init__(
        self,
        *,
        fast: bool = False,
        port: int | None = None,
        settings: dict[str, str] | None = None,
        bindir: Path | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self.fast = fast
        self.port = port or 0
        self.extra_settings = dict(settings or {})
        self._bindir = bindir
        self._base_dir = base_dir
        self.root: Path | None = None
        self._running = False
        self._as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        self._atexit_registered = False

    # -- paths and urls ---------------------------------------------------------------

    @property
    def bindir(self) -> Path:
        if self._bindir is None:
            self._bindir = find_bindir()
        return self._bindir

    def _need_root(self) -> Path:
        if self.root is None:
            raise ClusterError("cluster not started")
        return self.root

    @property
    def data_dir(self) -> Path:
        return self._need_root() / "data"

    @property
    def socket_dir(self) -> Path:
        return self._need_root()

    @property
    def log_path(self) -> Path:
        return self._need_root() / "postgres.log"

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{quote(user)}@{self.host}:{self.port}/{quote(dbname)}"

    @property
    def admin_url(self) -> str:
        return self.url()

    def is_running(self) -> bool:
        return self._running

    # -- process helpers --------------------------------------------------------------

    def _cmd(self, *args: str) -> list[str]:
        if not self._as_root:
            return list(args)
        if shutil.which("runuser"):
            return ["runuser", "-u", PG_SYSTEM_USER, "--", *args]
        if shutil.which("setpriv"):
            return [
                "setpriv",
                f"--reuid={PG_SYSTEM_USER}",
                f"--regid={PG_SYSTEM_USER}",
                "--init-groups",
                "--",
                *args,
            ]
        raise ClusterError("running as root needs runuser or setpriv to drop to 'postgres'")

    def _run(self, *args: str, timeout: float = 120, check: bool = True) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8" if Path("/usr/lib/locale/C.utf8").exists() else "C"
        # Output to a file, not a pipe: a postmaster forked by pg_ctl must not hold our pipe.
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.run(
                self._cmd(*args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd="/",
                timeout=timeout,
                check=False,
            )
            out.seek(0)
            text = out.read()
        if check and proc.returncode != 0:
            raise ClusterError(
                f"{' '.join(args)} exited {proc.returncode}:\n{text}{self._log_tail()}"
            )
        return text

    def _pg_ctl(self, *args: str, timeout: float = 120, check: bool = True) -> str:
        return self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), *args,
                         timeout=timeout, check=check)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except (OSError, ClusterError):
            return ""
        return "\n--- postgres.log (tail) ---\n" + "\n".join(tail)

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> PrivateCluster:
        """initdb (first time only) and start the server. Returns self."""
        if self._running:
            return self
        if self.root is None:
            self._init()
        self.start_server()
        return self

    def _make_root(self) -> Path:
        """The cluster's own temp folder (owned by ``postgres`` when run as root)."""
        if self._as_root:
            import pwd

            try:
                pw = pwd.getpwnam(PG_SYSTEM_USER)
            except KeyError as exc:
                raise ClusterError(
                    f"running as root but there is no '{PG_SYSTEM_USER}' system user to run "
                    "PostgreSQL as (it comes with Debian's postgresql packages: `make deps`)"
                ) from exc
        base = self._base_dir or Path(os.environ.get("TICKETIQ_PG_TMPDIR") or "/tmp")
        root = Path(tempfile.mkdtemp(prefix="tiq-pg-", dir=base))
        self.root = root
        if not self._atexit_registered:
            atexit.register(self._atexit)
            self._atexit_registered = True
        if self._as_root:
            os.chown(root, pw.pw_uid, pw.pw_gid)
        root.chmod(0o700)
        return root

    def _init(self) -> None:
        root = self._make_root()
        self._run(str(self.bindir / "initdb"), "-D", str(self.data_dir), "-U", "postgres",
                  "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
                  "--no-instructions")
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{root}'",
            "max_connections": "300",
            "logging_collector": "off",
            "log_min_messages": "warning",
            "log_line_prefix": "'%m [%p] %q%u@%d '",
        }
        if (_pkglibdir(self.bindir) / "pg_stat_statements.so").is_file():
            settings["shared_preload_libraries"] = "'pg_stat_statements'"
        if self.fast:
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        settings |= self.extra_settings
        conf = "\n# ticketiq_pg.testing.postgres\n" + "".join(
            f"{k} = {v}\n" for k, v in settings.items()
        )
        # written as the file's owner (root can write it; keep ownership with postgres)
        with (self.data_dir / "postgresql.conf").open("a") as f:
            f.write(conf)

    def start_server(self, attempts: int = 5) -> None:
        """Start the postmaster of an initialised cluster (port kept across restarts)."""
        self._need_root()
        last = ""
        for _ in range(attempts):
            fixed_port = self.port != 0
            if not fixed_port:
                self.port = free_port()
            try:
                self._pg_ctl("-l", str(self.log_path), "-o", f"-p {self.port}", "-w", "-t",
                             "120", "start")
                self._running = True
                return
            except ClusterError as exc:
                last = str(exc)
                log = self._log_tail()
                if fixed_port or "could not bind" not in log and "in use" not in log:
                    raise
                self.port = 0  # lost the race for the port: pick another
        raise ClusterError(f"could not start PostgreSQL after {attempts} attempts:\n{last}")

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the postmaster, keeping the data (``mode``: smart, fast or immediate)."""
        if not self._running or self.root is None:
            return
        try:
            self._pg_ctl("-m", mode, "-w", "-t", "60", "stop")
        except (ClusterError, subprocess.TimeoutExpired):
            if mode == "immediate":
                raise
            self._pg_ctl("-m", "immediate", "-w", "stop", check=False)
        self._running = False

    def restart(self, mode: str = "fast") -> None:
        """Stop (``mode="immediate"`` simulates a crash: recovery runs on start) and start
        again on the same port."""
        self.stop_server(mode)
        self.start_server()

    def stop(self) -> None:
        """Stop the server and remove the folder. Idempotent."""
        if self.root is None:
            return
        try:
            self.stop_server("fast")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
            self._running = False

    def _atexit(self) -> None:
        if self.root is None:
            return
        with contextlib.suppress(Exception):
            self.stop_server("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> PrivateCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return f"<PrivateCluster {state} port={self.port} root={self.root}>"


class DockerServer:
    """A ``postgres:15`` container from testcontainers (TICKETIQ_TEST_DOCKER=1)."""

    def __init__(self, image: str = "postgres:15") -> None:
        try:
            from testcontainers.community.postgres import PostgresContainer
        except ImportError:  # testcontainers < 4.14
            from testcontainers.postgres import PostgresContainer

        self._container = PostgresContainer(
            image, username="postgres", password="postgres", dbname="postgres", driver=None
        )
        self._container.start()
        self._url = self._container.get_connection_url()

    @property
    def admin_url(self) -> str:
        return self._url

    def stop(self) -> None:
        self._container.stop()


def _docker_answers() -> bool:
    try:
        import docker  # comes with testcontainers

        client = docker.from_env(timeout=5)
        return bool(client.ping())
    except Exception:
        return False


def test_server_url(*, fast: bool = False) -> tuple[str, ServerHandle | None]:
    """(admin URL, handle to stop or None).  TICKETIQ_TEST_DATABASE_URL wins; then Docker if
    TICKETIQ_TEST_DOCKER=1 and an engine answers (else a note and a PrivateCluster)."""
    url = os.environ.get(ENV_URL)
    if url:
        return url, None
    if os.environ.get(ENV_DOCKER) == "1":
        if _docker_answers():
            server = DockerServer()
            return server.admin_url, server
        print(
            f"{ENV_DOCKER}=1 but no Docker engine answers: using a private cluster", file=sys.stderr
        )
    cluster = PrivateCluster(fast=fast).start()
    return cluster.admin_url, cluster


test_server_url.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


# -- databases --------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


def database_url(server_url: str, dbname: str) -> str:
    """``server_url`` with its database replaced (URL or key=value conninfo)."""
    if re.match(r"^postgres(ql)?://", server_url):
        parts = urlsplit(server_url)
        return urlunsplit(parts._replace(path="/" + quote(dbname)))
    from psycopg.conninfo import make_conninfo

    return make_conninfo(server_url, dbname=dbname)


def create_database(
    admin_url: str, prefix: str = "tiq_test", *, template: str = "template0"
) -> str:
    """Create a uniquely named database (``prefix_<hex>``); return its URL."""
    import psycopg
    from psycopg import sql

    if not _NAME_RE.match(prefix) or len(prefix) > 40:
        raise ValueError(f"bad database prefix {prefix!r}")
    name = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return database_url(admin_url, name)


def drop_database(admin_url: str, name: str) -> None:
    """``DROP DATABASE IF EXISTS name WITH (FORCE)``; ``name`` may also be a URL from
    :func:`create_database`."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict

    if "://" in name or "=" in name:
        name = str(conninfo_to_dict(name)["dbname"])
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


@contextlib.contextmanager
def temporary_database(
    admin_url: str, prefix: str = "tiq_test", *, template: str = "template0"
) -> Iterator[str]:
    """Context manager: a fresh database's URL, dropped on exit."""
    url = create_database(admin_url, prefix, template=template)
    try:
        yield url
    finally:
        drop_database(admin_url, url)

