"""Testing an app the way the library is tested: a fresh database, real worker processes,
a real SIGKILL, and the verdict read from the database (docs/guide.md, *Testing your app*).

``examples/triage/test_triage.py`` uses every name here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from ticketiq_pg.db import inspect, inspect_run
from ticketiq_pg.db.keys import create_api_key_sync
from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import temporary_database, test_server_url

T = TypeVar("T")

#: The statuses a run ends in (it has a ``finished_at``).
ENDED = ("completed", "failed", "stopped")

#: Rows a query returns at most (the operator's queries are paged).
MAX_ROWS = 100_000


@contextlib.contextmanager
def fresh_database(server_url: str | None = None) -> Iterator[str]:
    """A new database with the schema installed; its URL.  Dropped on exit.

    Made on ``server_url`` (a role that may create databases), else on
    ``$TICKETIQ_TEST_DATABASE_URL``, else on a private cluster started for it (the
    server binaries of ``pg_ctl``; stopped on exit).  No other database is touched.
    """
    handle = None
    if server_url is None:
        server_url, handle = test_server_url(fast=True)
    try:
        with temporary_database(server_url, "tiq_app") as url:
            with psycopg.connect(url, autocommit=True) as conn:
                install_sync(conn)
            yield url
    finally:
        if handle is not None:
            handle.stop()


def make_api_key(database_url: str, identity: str, run_as: Sequence[str] = (),
                 scopes: Sequence[str] = ()) -> str:
    """A front API key for ``identity`` (as ``ticketiq-pg api-key create`` makes one;
    ``scopes=["admin"]`` for the console)."""
    return create_api_key_sync(database_url, identity, run_as, scopes)


def wait_for(what: str, check: Callable[[], T], timeout: float = 30.0,
             interval: float = 0.05) -> T:
    """Poll ``check`` until it returns something true; that.  ``TimeoutError`` names ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def runs(database_url: str, *, statuses: Sequence[str] | None = None,
         holder: str | None = None) -> list[dict[str, Any]]:
    """The runs, newest first, as ``ticketiq-pg runs --json`` shows them (``run_id``,
    ``status``, ``loss_count``, ``lease_holder``, ``failure_reason``, ...)."""
    with inspect.snapshot(database_url) as conn:
        return inspect.runs(conn, statuses=statuses, holder=holder, limit=MAX_ROWS)["runs"]


def crash_resumes(database_url: str, run_id: Any = None) -> list[dict[str, Any]]:
    """The ``agent.run.crash_resumed`` audit rows, oldest first: one per resume, its
    ``detail`` giving the step, the loss count and how each call left in doubt settled."""
    with inspect.snapshot(database_url) as conn:
        rows = inspect.audit(conn, events=["agent.run.crash_resumed"], run_id=run_id,
                             limit=MAX_ROWS)["audit"]
    return rows[::-1]


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """One written step of a run: a step that is never asked of the model again."""

    step: int
    epoch: int  #: the lease epoch that wrote it (a resume raises the epoch)
    written_at: datetime
    calls: int  #: how many tool calls the step asked for
    model_text: str | None  #: the model's text of the step
    seal_key_id: str | None


@dataclasses.dataclass(frozen=True)
class Call:
    """One tool call a run's step asked for, and what became of it.

    A read has no row (``recorded`` False, ``state`` None): it is never marked, and is made
    again on resume.  A changing call's row says whether it was marked in doubt before it
    was sent (``marked_at``), how it ended (``state`` ``done`` or ``settled``) and, when a
    resume settled it, how (``settlement``: ``made``, ``resent_same_key``, ``read_back``,
    ``unknown``, ...; docs/guide.md, *What a resume does with a call in doubt*).
    """

    step: int
    ordinal: int
    call_id: str
    tool: str
    classification: str  #: as the step asked for it
    step_key: str | None  #: the idempotency key it was sent with, if it had one
    arguments: Any
    recorded: bool
    state: str | None = None  #: pending, in_doubt, done or settled
    marked_classification: str | None = None
    marked_at: datetime | None = None
    marked_epoch: int | None = None
    settlement: str | None = None
    outcome: Any = None
    finished_epoch: int | None = None
    approval_id: uuid.UUID | None = None

    @property
    def settled_by_resume(self) -> bool:
        """Whether a resume settled it (it was in doubt when its process died)."""
        return self.state == "settled"


def _run_id(run_id: Any) -> uuid.UUID:
    return run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))


def _fields(cls: type, row: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in row.items() if k in names}


def checkpoints(database_url: str, run_id: Any) -> list[Checkpoint]:
    """A run's checkpoints in step order, as ``ticketiq-pg show RUN --json`` lists them.
    ``UnknownRun`` when there is no such run."""
    with inspect.snapshot(database_url) as conn:
        rows = inspect_run.show(conn, _run_id(run_id))["checkpoints"]
    return [Checkpoint(**_fields(Checkpoint, r)) for r in rows]


def calls(database_url: str, run_id: Any) -> list[Call]:
    """Every call a run's steps asked for, in step and call order, with its row (if a
    changing call's) as ``ticketiq-pg show RUN --json`` lists them."""
    with inspect.snapshot(database_url) as conn:
        rows = inspect_run.show(conn, _run_id(run_id))["calls"]
    return [Call(**_fields(Call, r)) for r in rows]


def wait_for_runs(database_url: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Wait until ``count`` runs exist and every one has ended; the runs."""
    def ended() -> list[dict[str, Any]]:
        found = runs(database_url)
        done = len(found) >= count and all(r["status"] in ENDED for r in found)
        return found if done else []

    try:
        return wait_for(f"{count} runs to end", ended, timeout, interval=0.1)
    except TimeoutError as exc:
        open_runs = [(str(r["run_id"]), r["status"]) for r in runs(database_url)
                     if r["status"] not in ENDED]
        raise TimeoutError(f"{exc}; not ended: {open_runs}") from None


def _front_url(stdout: str) -> str | None:
    """The front's URL, from the ``{"event": "http", ...}`` line a worker prints."""
    for line in stdout.splitlines(keepends=True):
        if not (line.startswith("{") and line.endswith("\n")):
            continue  # not an event, or one not yet written whole
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "http":
            host = str(event["host"])
            host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
            return f"http://{f'[{host}]' if ':' in host else host}:{event['port']}"
    return None


class WorkerProcess:
    """``ticketiq-pg worker --app APP`` in a child process of its own, to stop or kill.

    ``app`` is the ``module:attribute`` of the app, found in ``app_dir`` (also the
    process's working directory).  Every worker of one database needs the same
    ``seal_keys``.  With ``http=True`` it serves the front on a free port (``url``).
    Its output goes to ``log_dir`` (a temporary folder unless given): :meth:`log`.
    """

    def __init__(self, app: str, database_url: str, *, seal_keys: str, name: str = "worker",
                 app_dir: str | os.PathLike[str] | None = None, http: bool = False,
                 max_runs: int | None = None, env: Mapping[str, str] | None = None,
                 log_dir: str | os.PathLike[str] | None = None) -> None:
        self.app, self.database_url, self.name = app, database_url, name
        self.app_dir = Path(app_dir) if app_dir is not None else None
        self.http, self.max_runs = http, max_runs
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
        self.env.update(TICKETIQ_DATABASE_URL=database_url, TICKETIQ_SEAL_KEYS=seal_keys)
        self.env.update(env or {})
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix=f"ticketiq-{name}-"))
        self.url: str | None = None
        self.popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.popen is not None, "the worker was not started"
        return self.popen.pid

    def start(self, timeout: float = 30.0) -> WorkerProcess:
        """Start it; return once it serves (its front answers, if it has one)."""
        argv = [sys.executable, "-m", "ticketiq_pg.ops.cli", "worker", "--app", self.app,
                "--process-id", self.name]
        if self.app_dir is not None:
            argv += ["--app-dir", str(self.app_dir)]
        if self.http:
            argv += ["--http-port", "0"]
        if self.max_runs is not None:
            argv += ["--max-runs", str(self.max_runs)]
        out, err = self.log_dir / f"{self.name}.out", self.log_dir / f"{self.name}.log"
        self.url = None
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            self.popen = subprocess.Popen(argv, cwd=self.app_dir, env=self.env,
                                          stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)

        def serving() -> bool:
            if self.popen is not None and self.popen.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited {self.popen.returncode}:\n"
                                   + self.log()[-4000:])
            if self.http:
                self.url = _front_url(out.read_text())
                return self.url is not None
            return f"worker {self.name} serving" in self.log()

        try:
            wait_for(f"worker {self.name} to serve", serving, timeout)
        except TimeoutError as exc:
            self.kill()
            raise TimeoutError(f"{exc}; its log:\n{self.log()[-4000:]}") from None
        except BaseException:
            self.kill()
            raise
        return self

    def held_runs(self) -> list[dict[str, Any]]:
        """The runs this process runs now (it holds their leases)."""
        return runs(self.database_url, statuses=["running"], holder=self.name)

    def kill(self, signum: int = signal.SIGKILL, timeout: float = 10.0) -> int:
        """Send ``signum`` (a crash, by default) and wait for the exit; its code."""
        assert self.popen is not None, "the worker was not started"
        if self.popen.poll() is None:
            self.popen.send_signal(signum)
        return self.popen.wait(timeout)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM: a graceful stop, every run released at its next step boundary."""
        return self.kill(signal.SIGTERM, timeout)

    def log(self) -> str:
        """What it wrote to stderr so far (its log)."""
        path = self.log_dir / f"{self.name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.kill()
