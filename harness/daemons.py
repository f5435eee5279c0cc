"""What the harness's helper servers share (Linux).

* :class:`Managed`: ``with server:`` is :meth:`~Managed.start` and, on the way out,
  :meth:`~Managed.stop` (the edge, the poolers, the replicated pair, Patroni);
* :class:`Daemon`: a Debian program (HAProxy, PgBouncer) run in the foreground from a
  private folder on a free port, its log in that folder; :meth:`~Daemon.stop` ends it
  (SIGTERM, SIGKILL after 10 s) and removes the folder;
* :func:`sigkill_all` and the /proc look-ups under it: how a lost host's PostgreSQL is
  killed (:mod:`~harness.replicated`, :mod:`~harness.patroni`);
  :func:`wait_until` polls a condition with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Self

from ticketiq_pg.testing.postgres import ClusterError


class Managed(ABC):
    """``start()`` on entering a ``with`` block, ``stop()`` on leaving it."""

    @abstractmethod
    def start(self) -> Self: ...

    @abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Daemon(Managed):
    """A program in the foreground, from a private folder, listening on ``self.port``.

    A subclass names its ``PROGRAM`` (looked for on PATH, then in /usr/sbin, where Debian
    installs these and which is not on every user's PATH), its folder's ``PREFIX``, the
    ``LOG`` its output goes to and the ``ERROR`` it raises; its ``start`` calls
    :meth:`_binary`, :meth:`_make_dir` and, once the process runs, :meth:`_wait_listening`.
    """

    PROGRAM = ""
    PREFIX = "tiq-"
    LOG = "out.log"
    ERROR: type[RuntimeError] = RuntimeError
    INSTALL = ""

    def __init__(self, base_dir: Path | None = None) -> None:
        self.port = 0
        self.dir: Path | None = None
        self._base_dir = base_dir
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def binary(cls) -> str | None:
        return shutil.which(cls.PROGRAM) or shutil.which(cls.PROGRAM, path="/usr/sbin:/sbin")

    @classmethod
    def available(cls) -> bool:
        return cls.binary() is not None

    def _binary(self) -> str:
        found = self.binary()
        if found is None:
            raise self.ERROR(f"{self.PROGRAM} is not installed: {self.INSTALL}")
        return found

    def _make_dir(self) -> Path:
        self.dir = Path(tempfile.mkdtemp(prefix=self.PREFIX, dir=self._base_dir))
        return self.dir

    def _wait_listening(self, timeout: float = 10.0) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                return
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise self.ERROR(f"{self.PROGRAM} did not listen: {self.log()}")
            time.sleep(0.05)

    def log(self) -> str:
        if self.dir is None:
            return ""
        path = self.dir / self.LOG
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        self._proc = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def wait_until(check: Callable[[], bool], timeout: float, what: str,
               interval: float = 0.05) -> None:
    """Poll ``check`` until true; :class:`ClusterError` naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out waiting for {what}")
        time.sleep(interval)


# -- processes, from /proc ------------------------------------------------------------


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of a process, from /proc; None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2])


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def group_members(pgid: int) -> list[int]:
    return [pid for pid in _all_pids() if (proc_stat(pid) or ("", 0, 0))[2] == pgid]


def children(parent: int) -> list[int]:
    return [pid for pid in _all_pids() if (proc_stat(pid) or ("", 0, 0))[1] == parent]


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as gone)."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def sigkill_all(members: Iterable[int], timeout: float, what: str) -> None:
    """SIGKILL every one of ``members`` at once and wait until none is left."""
    members = list(members)
    for member in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)
    wait_for_gone(members, timeout, what)


def wait_for_gone(members: list[int], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(member) for member in members):
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} outlived SIGKILL")
        time.sleep(0.01)
