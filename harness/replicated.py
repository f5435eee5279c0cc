"""A private primary and a synchronous streaming standby that fail over, again and again.

:class:`ReplicatedCluster` is two :class:`ReplicaNode` slots (each a
:class:`~ticketiq_pg.testing.postgres.PrivateCluster` that can be made a standby with
``pg_basebackup -R``, SIGKILLed with every process of its group, and promoted) behind one
multi-host URL; :meth:`~ReplicatedCluster.failover` SIGKILLs the primary and promotes the
standby, :meth:`~ReplicatedCluster.rebuild_standby` copies a new standby from the new
primary for the next round.  The processes are found in /proc (Linux,
:mod:`~harness.daemons`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Self
from urllib.parse import quote

from harness.daemons import (
    Managed,
    alive,
    children,
    group_members,
    proc_stat,
    sigkill_all,
    wait_for_gone,
    wait_until,
)
from ticketiq_pg.testing.postgres import ClusterError, PrivateCluster, free_port

__all__ = ["ReplicatedCluster", "ReplicaNode"]


class ReplicaNode(PrivateCluster):
    """One slot of a :class:`ReplicatedCluster`: a private cluster that can also be a
    streaming standby, be killed as a lost host is, and be promoted."""

    def init_standby(self, primary: PrivateCluster, application_name: str) -> None:
        """Make this uninitialised cluster a streaming standby of ``primary``.

        ``pg_basebackup -R -X stream`` copies the primary (``standby.signal`` and
        ``primary_conninfo`` written); its ``application_name`` is what the primary's
        ``synchronous_standby_names`` names.  The copy gets its own socket folder and
        ``synchronous_standby_names = ''``, so once promoted, with no standby of its
        own yet, it never waits for one, and ``wal_retrieve_retry_interval = 100ms``, so
        a promotion is never held up 5 s waiting to retry the lost stream.  Start it with
        :meth:`start_server`.
        """
        if self.root is not None:
            raise ClusterError("this cluster is initialised already")
        root = self._make_root()
        source = (f"host={primary.host} port={primary.port} user=postgres "
                  f"application_name={application_name}")
        self._run(str(self.bindir / "pg_basebackup"), "-D", str(self.data_dir), "-d", source,
                  "-R", "-X", "stream", "-c", "fast", "--no-sync")
        settings = {
            "unix_socket_directories": f"'{root}'",
            "primary_conninfo": f"'{source}'",
            "synchronous_standby_names": "''",
            # A promote request that lands as the primary's stream breaks can wait a
            # whole retry interval (default 5 s) before the standby ends recovery.
            "wal_retrieve_retry_interval": "'100ms'",
        }
        # postgresql.auto.conf is read last and its last line for a name wins.
        with (self.data_dir / "postgresql.auto.conf").open("a") as f:
            f.write("# harness.replicated: standby\n")
            f.write("".join(f"{k} = {v}\n" for k, v in settings.items()))

    def postmaster_pid(self) -> int | None:
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except (OSError, ClusterError):
            return None
        return int(lines[0]) if lines and lines[0].strip().isdigit() else None

    def kill(self, timeout: float = 30.0) -> None:
        """SIGKILL the postmaster and every process of its group at once.

        What a lost host leaves: no shutdown checkpoint, every session cut, a commit
        waiting for its synchronous standby never acknowledged.  The data stays (start
        it again and crash recovery runs); its shared memory segment is removed.
        """
        pid = self.postmaster_pid()
        if pid is None or not alive(pid):
            raise ClusterError(f"no postmaster to kill in {self.root}")
        shmid = self._shared_memory_id()
        stat = proc_stat(pid)
        what = f"postmaster {pid} or its children"
        if stat is not None and stat[2] == pid:
            # pg_ctl starts the postmaster in a session of its own: one signal for all
            members = group_members(pid)
            os.killpg(pid, signal.SIGKILL)
            wait_for_gone(members, timeout, what)
        else:
            sigkill_all([pid, *children(pid)], timeout, what)
        self._running = False
        if shmid is not None and shutil.which("ipcrm"):
            subprocess.run(["ipcrm", "-m", str(shmid)], capture_output=True, check=False)

    def _shared_memory_id(self) -> int | None:
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
            return int(lines[6].split()[1])
        except (OSError, IndexError, ValueError, ClusterError):
            return None

    def promote(self, timeout: float = 60.0) -> None:
        """``pg_ctl promote`` this standby and wait until it accepts writes."""
        import psycopg

        self._pg_ctl("-w", "-t", str(int(timeout)), "promote", timeout=timeout + 10)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=2) as conn:
                    row = conn.execute("select pg_is_in_recovery()").fetchone()
                    if row is not None and not row[0]:
                        return
            except psycopg.OperationalError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"the standby on port {self.port} did not leave recovery")
            time.sleep(0.02)


class ReplicatedCluster(Managed):
    """A private primary and a synchronous streaming standby that can fail over, again and again.

    Two slots with fixed ports; :meth:`url` names both hosts with
    ``target_session_attrs=read-write``, so a client reaches whichever is the primary
    now.  The standby is a ``pg_basebackup -R`` copy of the primary, which names it in
    ``synchronous_standby_names`` (``FIRST 1 (tiq_standby)``, ``synchronous_commit``
    on): a commit is acknowledged only once it is on both.

    * :meth:`failover`: SIGKILL the primary's postmaster and its processes
      (:meth:`ReplicaNode.kill`), ``pg_ctl promote`` the standby and wait until it
      accepts writes; the new primary's ``synchronous_standby_names`` is cleared
      (``ALTER SYSTEM`` + ``pg_reload_conf()``), so with no standby it does not block
      commits.
    * :meth:`rebuild_standby`: a new standby in the dead slot (same port), copied from
      the new primary; once it streams, the primary names it synchronous again.  Every
      round can then fail over again, the roles alternating between the slots.
    """

    STANDBY_NAME = "tiq_standby"

    def __init__(
        self,
        *,
        settings: dict[str, str] | None = None,
        bindir: Path | None = None,
        base_dir: Path | None = None,
        synchronous_standby_names: str | None = None,
    ) -> None:
        self.settings = dict(settings or {})
        self._bindir = bindir
        self._base_dir = base_dir
        self.sync_names = synchronous_standby_names or f"FIRST 1 ({self.STANDBY_NAME})"
        self.nodes: list[ReplicaNode | None] = [None, None]
        self.ports = [0, 0]
        self.primary_index = 0
        #: One entry per failover: seconds from the kill's start to the kill done and to
        #: the standby accepting writes; and per rebuild, the seconds it took.
        self.failovers: list[dict[str, float]] = []
        self.rebuilds: list[float] = []

    # -- nodes and urls ---------------------------------------------------------------

    def _node(self, index: int) -> ReplicaNode:
        node = self.nodes[index]
        if node is None:
            raise ClusterError("replicated cluster not started")
        return node

    @property
    def primary(self) -> ReplicaNode:
        return self._node(self.primary_index)

    @property
    def standby(self) -> ReplicaNode | None:
        node = self.nodes[1 - self.primary_index]
        return node if node is not None and node.is_running() else None

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        return (f"postgresql://{quote(user)}@{hosts}/{quote(dbname)}"
                "?target_session_attrs=read-write&connect_timeout=2")

    @property
    def admin_url(self) -> str:
        return self.url()

    # -- life cycle -------------------------------------------------------------------

    def start(self) -> Self:
        if self.nodes[0] is not None:
            return self
        primary = ReplicaNode(settings=self.settings, bindir=self._bindir,
                              base_dir=self._base_dir)
        self.nodes[0] = primary
        primary.start()
        self.ports = [primary.port, free_port()]
        self._attach_standby(1)
        return self

    def stop(self) -> None:
        for node in self.nodes:
            if node is not None:
                with contextlib.suppress(Exception):
                    node.stop()
        self.nodes = [None, None]

    # -- failing over -----------------------------------------------------------------

    def kill_primary(self) -> None:
        self.primary.kill()

    def promote_standby(self, timeout: float = 60.0) -> None:
        standby = self.standby
        if standby is None:
            raise ClusterError("no standby to promote: rebuild_standby() first")
        standby.promote(timeout)
        self.primary_index = 1 - self.primary_index
        self._set_sync_names("")

    def failover(self) -> dict[str, float]:
        """Kill the primary, promote the standby; returns the timings (seconds)."""
        began = time.monotonic()
        self.kill_primary()
        killed = time.monotonic()
        self.promote_standby()
        timing = {"killed": killed - began, "writable": time.monotonic() - began}
        self.failovers.append(timing)
        return timing

    def rebuild_standby(self) -> float:
        """A new synchronous standby in the other slot, from the current primary."""
        began = time.monotonic()
        index = 1 - self.primary_index
        old = self.nodes[index]
        if old is not None:
            old.stop()
            self.nodes[index] = None
        self._attach_standby(index)
        took = time.monotonic() - began
        self.rebuilds.append(took)
        return took

    def replication(self) -> list[tuple[str, str, str]]:
        """(application_name, state, sync_state) of each standby the primary serves."""
        import psycopg

        with psycopg.connect(self.primary.admin_url, autocommit=True) as conn:
            return [tuple(row) for row in conn.execute(  # type: ignore[misc]
                "select application_name, state, sync_state from pg_stat_replication "
                "order by 1").fetchall()]

    def _attach_standby(self, index: int, timeout: float = 60.0) -> None:
        node = ReplicaNode(port=self.ports[index], bindir=self._bindir,
                           base_dir=self._base_dir)
        self.nodes[index] = node
        node.init_standby(self.primary, self.STANDBY_NAME)
        node.start_server()
        wait_until(lambda: (self.STANDBY_NAME, "streaming") in
                       [(name, state) for name, state, _ in self.replication()],
                       timeout, "the standby to stream")
        self._set_sync_names(self.sync_names)
        wait_until(lambda: (self.STANDBY_NAME, "streaming", "sync") in self.replication(),
                       timeout, "the standby to be synchronous")

    def _set_sync_names(self, value: str, timeout: float = 30.0) -> None:
        import psycopg
        from psycopg import sql

        url = self.primary.admin_url
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("alter system set synchronous_standby_names = {}").format(
                sql.Literal(value)))
            conn.execute("select pg_reload_conf()")

        def applied() -> bool:
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute("show synchronous_standby_names").fetchone()
                return row is not None and row[0] == value

        wait_until(applied, timeout, f"synchronous_standby_names = {value!r}")

    def __repr__(self) -> str:
        return (f"<ReplicatedCluster ports={self.ports} primary={self.ports[self.primary_index]}"
                f" failovers={len(self.failovers)}>")


