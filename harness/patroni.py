"""PostgreSQL under Patroni: one etcd member and three Patroni nodes, private and throwaway.

:class:`PatroniCluster` runs Debian's ``etcd`` (one member, free ports) and three
``patroni`` agents, each with its own PostgreSQL (free ports, a private folder that is
removed after), configured as docs/operations.md recommends (:func:`dcs_settings`):
``synchronous_mode: true``, ``synchronous_mode_strict: true``, one synchronous standby,
``primary_start_timeout: 0`` (a crashed primary is failed over, not restarted in place),
``use_pg_rewind`` so an old primary rejoins as a standby.  Under euid 0 the agents (and
so PostgreSQL) run as the ``postgres`` system user.

* :meth:`~PatroniCluster.url` is the multi-host URL the app processes use
  (``target_session_attrs=read-write`` over the three nodes);
* :meth:`~PatroniCluster.kill_primary` SIGKILLs the primary's postmaster and every
  PostgreSQL process of it (and with ``agent_too`` its Patroni agent first): Patroni,
  not this code, promotes the synchronous standby; :meth:`~PatroniCluster.wait_promoted`
  measures until another node takes writes;
* :meth:`~PatroniCluster.switchover` is a planned ``patronictl switchover``;
* :meth:`~PatroniCluster.settle` restarts a killed agent and waits until the old
  primary streams again as a standby and a synchronous standby is named.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote

from harness.daemons import Managed, alive, children, sigkill_all, wait_until
from ticketiq_pg.testing.postgres import PG_SYSTEM_USER, ClusterError, find_bindir, free_port

__all__ = ["PatroniCluster", "dcs_settings", "dcs_yaml", "etcd_argv", "node_config", "to_yaml",
           "INSTALL"]

INSTALL = "apt-get install -y patroni etcd-server"


def dcs_settings() -> dict[str, Any]:
    """Patroni's cluster-wide settings (``bootstrap.dcs``) as docs/operations.md gives them."""
    return {
        # The leader key lasts 8 s (Patroni wants loop_wait + 2 x retry_timeout <= ttl);
        # each agent looks every second.  A lost host (agent and PostgreSQL) is replaced
        # once its key lapses, a crashed PostgreSQL at once (primary_start_timeout 0).
        "ttl": 8, "loop_wait": 1, "retry_timeout": 3,
        "primary_start_timeout": 0,
        "maximum_lag_on_failover": 0,
        "synchronous_mode": True,
        "synchronous_mode_strict": True,
        "synchronous_node_count": 1,
        "postgresql": {
            "use_pg_rewind": True,
            "use_slots": True,
            "parameters": {
                "synchronous_commit": "on",
                "wal_log_hints": "on",
                "max_wal_senders": 10,
                "max_replication_slots": 10,
                "wal_keep_size": "256MB",
                "hot_standby": "on",
                # A standby that lost its primary retries the stream every 100 ms.
                "wal_retrieve_retry_interval": "100ms",
            },
        },
    }


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else f'"{value}"'


def to_yaml(value: dict[str, Any], indent: int = 0) -> str:
    """Patroni's settings as YAML (dicts, lists, strings, numbers, booleans)."""
    pad, lines = "  " * indent, []
    for key, item in value.items():
        if isinstance(item, dict):
            lines.append(f"{pad}{key}:\n{to_yaml(item, indent + 1)}")
        elif isinstance(item, list):
            lines.append(f"{pad}{key}:")
            for entry in item:
                if isinstance(entry, dict):
                    body = to_yaml(entry, indent + 2).lstrip()
                    lines.append(f"{pad}  - {body}")
                else:
                    lines.append(f"{pad}  - {_scalar(entry)}")
        else:
            lines.append(f"{pad}{key}: {_scalar(item)}")
    return "\n".join(lines)


def dcs_yaml() -> str:
    """:func:`dcs_settings` as the YAML docs/operations.md shows."""
    return to_yaml(dcs_settings())


def etcd_argv(name: str, data_dir: str, host: str, client_port: int, peer_port: int
              ) -> list[str]:
    """One etcd member, as the trials run it (production: three, ``--initial-cluster``
    naming all)."""
    client, peer = f"http://{host}:{client_port}", f"http://{host}:{peer_port}"
    return ["etcd", "--name", name, "--data-dir", data_dir,
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"{name}={peer}", "--initial-cluster-state", "new"]


def node_config(scope: str, name: str, host: str, pg_port: int, api_port: int,
                etcd_hosts: list[str], home: str, bin_dir: str, *,
                network: str = "127.0.0.1/32", auth: str = "trust") -> dict[str, Any]:
    """One node's Patroni file (the trials: ``trust`` on 127.0.0.1; docs/operations.md:
    ``scram-sha-256`` on the nodes' network)."""
    hba = [f"local all all {auth}", f"host all all {network} {auth}",
           f"host replication all {network} {auth}"]
    return {
        "scope": scope, "namespace": "/ticketiq/", "name": name,
        "log": {"level": "INFO", "dir": home},
        "restapi": {"listen": f"{host}:{api_port}", "connect_address": f"{host}:{api_port}"},
        "etcd3": {"hosts": etcd_hosts},
        "bootstrap": {"dcs": dcs_settings(), "initdb": [{"encoding": "UTF8"}],
                      "pg_hba": hba},
        "postgresql": {
            "listen": f"{host}:{pg_port}", "connect_address": f"{host}:{pg_port}",
            "data_dir": f"{home}/data", "bin_dir": bin_dir, "pgpass": f"{home}/pgpass",
            "authentication": {"superuser": {"username": "postgres"},
                               "replication": {"username": "postgres"},
                               "rewind": {"username": "postgres"}},
            "pg_hba": hba,
            "parameters": {"unix_socket_directories": home},
        },
    }


class PatroniCluster(Managed):
    """etcd and three Patroni nodes on free ports in a private folder."""

    NODES = 3

    def __init__(self, *, base_dir: Path | None = None, scope: str | None = None) -> None:
        self._base_dir = base_dir
        self.scope = scope or f"tiq-{os.urandom(3).hex()}"
        self.dir: Path | None = None
        self.names = [f"pg{i + 1}" for i in range(self.NODES)]
        self.pg_ports: dict[str, int] = {}
        self.api_ports: dict[str, int] = {}
        self.etcd_port = 0
        self._etcd: subprocess.Popen[bytes] | None = None
        self._agents: dict[str, subprocess.Popen[bytes]] = {}
        #: One entry per failover or switchover: the old and new primary, whether the
        #: agent was killed too, seconds from the fault until another node took writes
        #: (``writable``) and by when the old primary streamed again (``rejoined_by``).
        self.events: list[dict[str, Any]] = []

    @staticmethod
    def missing() -> list[str]:
        return [b for b in ("patroni", "patronictl", "etcd") if shutil.which(b) is None]

    # -- life cycle -------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> Self:
        if self.missing():
            raise ClusterError(f"{', '.join(self.missing())} missing: {INSTALL}")
        self.dir = Path(tempfile.mkdtemp(prefix="tiq-patroni-", dir=self._base_dir))
        if os.geteuid() == 0:
            shutil.chown(self.dir, PG_SYSTEM_USER)
        self._start_etcd()
        for name in self.names:
            self.pg_ports[name], self.api_ports[name] = free_port(), free_port()
        for name in self.names:
            self._write_config(name)
        self._start_agent(self.names[0])
        wait_until(lambda: self.primary() == self.names[0], timeout, "the first primary", 0.1)
        for name in self.names[1:]:
            self._start_agent(name)
        wait_until(self._healthy, timeout, "two standbys streaming, one synchronous", 0.1)
        return self

    def stop(self) -> None:
        for proc in self._agents.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
        for proc in self._agents.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self._agents.clear()
        for name in self.names:  # a postmaster whose agent died with it
            with contextlib.suppress(ClusterError):
                self._kill_postgres(name)
        if self._etcd is not None and self._etcd.poll() is None:
            self._etcd.terminate()
            self._etcd.wait(10)
        self._etcd = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _start_etcd(self) -> None:
        assert self.dir is not None
        self.etcd_port, peer = free_port(), free_port()
        argv = [*etcd_argv("tiq", str(self.dir / "etcd"), "127.0.0.1", self.etcd_port, peer),
                "--log-level", "warn"]
        with open(self.dir / "etcd.log", "ab") as log:
            self._etcd = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        wait_until(lambda: self._http(f"http://127.0.0.1:{self.etcd_port}/health")[0] == 200,
                   30, "etcd", 0.1)

    def config_path(self, name: str) -> Path:
        assert self.dir is not None
        return self.dir / f"{name}.yml"

    def _write_config(self, name: str) -> None:
        assert self.dir is not None
        home = self.dir / name
        home.mkdir()
        config = node_config(self.scope, name, "127.0.0.1", self.pg_ports[name],
                             self.api_ports[name], [f"127.0.0.1:{self.etcd_port}"],
                             str(home), str(find_bindir()))
        self.config_path(name).write_text(to_yaml(config) + "\n")
        if os.geteuid() == 0:
            for path in (home, self.config_path(name)):
                shutil.chown(path, PG_SYSTEM_USER)

    def _start_agent(self, name: str) -> None:
        assert self.dir is not None
        user = {"user": PG_SYSTEM_USER, "group": PG_SYSTEM_USER, "extra_groups": []} \
            if os.geteuid() == 0 else {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "TICKETIQ_"))}
        with open(self.dir / f"{name}.out", "ab") as log:
            self._agents[name] = subprocess.Popen(
                ["patroni", str(self.config_path(name))], stdout=log, stderr=log,
                start_new_session=True, cwd=self.dir, env=env, **user)  # type: ignore[call-overload]

    # -- state ------------------------------------------------------------------------

    @staticmethod
    def _http(url: str, timeout: float = 2.0) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            with contextlib.suppress(ValueError):
                return exc.code, json.loads(exc.read() or b"null")
            return exc.code, None
        except (OSError, ValueError):
            return 0, None

    def api(self, name: str, path: str) -> tuple[int, Any]:
        return self._http(f"http://127.0.0.1:{self.api_ports[name]}{path}")

    def primary(self) -> str | None:
        """The node whose REST API answers ``/primary`` 200 (a running leader)."""
        for name in self.names:
            if self.api(name, "/primary")[0] == 200:
                return name
        return None

    def members(self) -> list[dict[str, Any]]:
        for name in self.names:
            status, body = self.api(name, "/cluster")
            if status == 200 and body:
                return list(body.get("members", []))
        return []

    def _healthy(self) -> bool:
        members = self.members()
        roles = sorted(m.get("role", "") for m in members
                       if m.get("state") in ("running", "streaming"))
        if roles != ["leader", "replica", "sync_standby"]:
            return False
        primary = self.primary()
        if primary is None:
            return False
        import psycopg

        try:
            with psycopg.connect(self.node_url(primary), autocommit=True,
                                 connect_timeout=2) as conn:
                row = conn.execute("select count(*) filter (where state = 'streaming'),"
                                   " count(*) filter (where sync_state = 'sync')"
                                   " from pg_stat_replication").fetchone()
        except psycopg.OperationalError:
            return False
        return row == (2, 1)

    def node_url(self, name: str, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.pg_ports[name]}/{quote(dbname)}"

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        """The URL docs/operations.md gives the app: every node, the one taking writes."""
        hosts = ",".join(f"127.0.0.1:{self.pg_ports[n]}" for n in self.names)
        return (f"postgresql://{quote(user)}@{hosts}/{quote(dbname)}"
                "?target_session_attrs=read-write&connect_timeout=2&keepalives_idle=5"
                "&keepalives_interval=2&keepalives_count=3&tcp_user_timeout=5000")

    @property
    def admin_url(self) -> str:
        return self.url()

    # -- faults -----------------------------------------------------------------------

    def _postmaster(self, name: str) -> int | None:
        assert self.dir is not None
        try:
            first = (self.dir / name / "data" / "postmaster.pid").read_text().split("\n")[0]
        except OSError:
            return None
        return int(first) if first.strip().isdigit() else None

    def _kill_postgres(self, name: str, timeout: float = 30.0) -> None:
        pid = self._postmaster(name)
        if pid is None or not alive(pid):
            raise ClusterError(f"no postmaster on {name}")
        sigkill_all([pid, *children(pid)], timeout, f"postgres of {name}")

    def kill_primary(self, *, agent_too: bool = False) -> dict[str, Any]:
        """SIGKILL the primary's PostgreSQL (its agent first with ``agent_too``); Patroni
        promotes the synchronous standby.  Returns once another node takes writes."""
        old = self.primary()
        if old is None:
            raise ClusterError("no primary to kill")
        began = time.monotonic()
        if agent_too:
            agent = self._agents[old]
            agent.send_signal(signal.SIGKILL)
            agent.wait(10)
        self._kill_postgres(old)
        return self._promoted("kill", old, began, agent_killed=agent_too)

    def wait_promoted(self, old: str, timeout: float = 60.0) -> str:
        """Wait until a node other than ``old`` is the primary and takes writes."""
        import psycopg

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = self.primary()
            if new is not None and new != old:
                with contextlib.suppress(psycopg.OperationalError), psycopg.connect(
                        self.node_url(new), autocommit=True, connect_timeout=2) as conn:
                    row = conn.execute("select pg_is_in_recovery()").fetchone()
                    if row is not None and not row[0]:
                        return new
            time.sleep(0.05)
        raise ClusterError(f"no node took over from {old} in {timeout:g}s")

    def switchover(self) -> dict[str, Any]:
        """A planned ``patronictl switchover`` to the synchronous standby."""
        old = self.primary()
        candidate = next((m["name"] for m in self.members()
                          if m.get("role") == "sync_standby"), None)
        if old is None or candidate is None:
            raise ClusterError("no primary or no synchronous standby to switch over to")
        began = time.monotonic()
        done = subprocess.run(
            ["patronictl", "-c", str(self.config_path(old)), "switchover", self.scope,
             "--leader", old, "--candidate", candidate, "--force"],
            capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise ClusterError(f"patronictl switchover failed: {done.stdout}{done.stderr}")
        return self._promoted("switchover", old, began)

    def _promoted(self, kind: str, old: str, began: float, *,
                  agent_killed: bool = False) -> dict[str, Any]:
        """The fault's event, once another node than ``old`` takes writes."""
        event: dict[str, Any] = {"kind": kind, "old": old, "agent_killed": agent_killed,
                                 "began": began}
        self.events.append(event)
        event["new"] = self.wait_promoted(old)
        event["writable"] = time.monotonic() - began
        return event

    def settle(self, timeout: float = 120.0) -> None:
        """Restart a killed agent; wait until the old primary streams again as a standby
        and one standby is synchronous (the next fault finds the cluster whole)."""
        for name, proc in list(self._agents.items()):
            if proc.poll() is not None:
                self._start_agent(name)
        wait_until(self._healthy, timeout, "the old primary to stream again", 0.1)
        if self.events and "rejoined_by" not in self.events[-1]:
            # An upper bound: looked at once the round's trials ended.
            event = self.events[-1]
            event["rejoined_by"] = time.monotonic() - event.pop("began")

    def log(self) -> str:
        if self.dir is None:
            return ""
        return "".join(p.read_text(errors="replace") for p in sorted(self.dir.glob("*.out")))
