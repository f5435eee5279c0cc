"""Child app processes for tests: real processes, real signals, judged from outside.

A :class:`Stack` is one test's world: its own database (with the schema), its
own vendor service process (which records every request it receives), a
seal key, a model log and a gates file.  ``spawn``/``run`` start
``python -m harness.scripted`` worker processes against it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from harness import landed
from harness.scripted import read_model_log
from harness.vendor_sim.process import VendorService

SEAL_KEYS = "k1:" + base64.b64encode(b"ticketiq-test-seal-key-0123456789").decode()


@dataclass
class Proc:
    popen: subprocess.Popen[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def read_event(self, kind: str, timeout: float = 20.0) -> dict[str, Any]:
        """Block until the child prints the event ``kind`` (a JSON line on stdout)."""
        assert self.popen.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.popen.stdout.readline()
            if not line:
                if self.popen.poll() is not None:
                    break
                continue
            event = json.loads(line)
            self.events.append(event)
            if event.get("event") == kind:
                return event
        raise AssertionError(f"no {kind!r} event from pid {self.pid}; events: {self.events}")

    def wait(self, timeout: float = 60.0) -> int:
        out, err = self.popen.communicate(timeout=timeout)
        self.stderr = err
        for line in out.splitlines():
            if line.strip():
                self.events.append(json.loads(line))
        return self.popen.returncode

    def outcomes(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "outcome"]

    def signal(self, signum: int) -> None:
        os.kill(self.popen.pid, signum)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)


@dataclass
class Stack:
    db_url: str
    workdir: Path
    vendor: VendorService
    settings: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)

    @property
    def model_log(self) -> Path:
        return self.workdir / "model.log"

    @property
    def gates_file(self) -> Path:
        return self.workdir / "gates.json"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            TICKETIQ_DATABASE_URL=self.db_url,
            TICKETIQ_VENDOR_URL=self.vendor.base_url,
            TICKETIQ_SEAL_KEYS=SEAL_KEYS,
            TICKETIQ_MODEL_LOG=str(self.model_log),
            TICKETIQ_GATES_FILE=str(self.gates_file),
        )
        env.pop("TICKETIQ_FAULTS", None)
        env.update(self.settings)
        env.update(extra)
        if env.get("TICKETIQ_FAULTS"):
            # A fault point names a moment of a call by its position in its step
            # (after_call@2.3: once the third call returned); with the step's calls one
            # after another, each position is one moment.  The tests of calls made at
            # once (test_calls_at_once.py) set TICKETIQ_CALLS_AT_ONCE themselves.
            env.setdefault("TICKETIQ_CALLS_AT_ONCE", "1")
        return env

    def spawn(self, *args: str, faults: str | None = None, **extra: str) -> Proc:
        if faults:
            extra["TICKETIQ_FAULTS"] = faults
        popen = subprocess.Popen(
            [sys.executable, "-m", "harness.scripted", *args],
            env=self.env(**extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc = Proc(popen)
        self.procs.append(proc)
        return proc

    def run(self, *args: str, timeout: float = 60.0, faults: str | None = None,
            **extra: str) -> Proc:
        proc = self.spawn(*args, faults=faults, **extra)
        proc.wait(timeout)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()
        self.vendor.stop()

    # -- judging from the database and the vendor's own record ------------

    #: The ``application_name`` of the test's own sessions, so a count of the processes'
    #: sessions in ``pg_stat_activity`` can leave them out.
    JUDGE = "ticketiq-tests"

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.db_url, autocommit=True, application_name=self.JUDGE) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []

    def sweep_as_if_later(self, seconds: float = 3600.0) -> list[tuple[Any, ...]]:
        """Sweep with the database clock moved ``seconds`` ahead (no sleeping)."""
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            conn.execute("update ticketiq.config set fake_clock_allowed = true")
            conn.execute(
                "select set_config('ticketiq.fake_now', (clock_timestamp() + make_interval("
                "secs => %s))::text, false)",
                [seconds],
            )
            return conn.execute(
                "select run_id, epoch, loss_count, status from ticketiq.sweep_lapsed('test')"
            ).fetchall()

    def model_asks(self, run_id: uuid.UUID | str) -> Counter[int]:
        return Counter(
            entry["step"] for entry in read_model_log(self.model_log)
            if entry["run_id"] == str(run_id)
        )

    def created_per_key(self) -> Counter[tuple[str, str]]:
        """How many objects each keyed vendor write created, by (vendor, key): the old
        count, blind to a resend under a new key (kept to show what it misses)."""
        return Counter(
            (r["vendor"], r["key"]) for r in self.vendor.requests()
            if r["effect"] == "created" and r["key"]
        )

    def writes(self) -> list[dict[str, Any]]:
        """Every write the vendor recorded, with the run, call and key it came from."""
        return landed.writes(self.vendor.requests())

    def created_per_call(self) -> Counter[str]:
        """How many writes the vendor applied per run and tool call, read from the content
        that landed (:mod:`harness.landed`), whatever key they carried."""
        return landed.applied_per_call(self.writes())

    def duplicates(self) -> dict[str, int]:
        """Run and calls written more than once where they landed (not per key)."""
        return {k: n for k, n in self.created_per_call().items() if n > 1}


def start_stack(db_url: str, workdir: Path) -> Stack:
    workdir.mkdir(parents=True, exist_ok=True)
    vendor = VendorService.start(workdir / "vendor")
    return Stack(db_url=db_url, workdir=workdir, vendor=vendor)


KILLED = -signal.SIGKILL


# -- long-lived workers, read while they run (tests/test_workers.py) ---------------


@dataclass
class LiveProc:
    """A child worker read while it runs.

    A thread collects its stdout events (JSON lines) as they come, so a test
    can wait for one with a deadline; stderr goes to a file (a chatty child
    never blocks on a full pipe); commands go to its stdin (``--commands``).
    """

    popen: subprocess.Popen[str]
    name: str
    stderr_path: Path
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name=f"stdout:{self.name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "text", "text": line.rstrip("\n")}
            event.setdefault("seen_at", time.time())
            with self._changed:
                self.events.append(event)
                self._changed.notify_all()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def find(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        with self._changed:
            return [e for e in self.events if e.get("event") == kind
                    and all(e.get(k) == v for k, v in fields.items())]

    def wait_event(self, kind: str, timeout: float = 20.0, **fields: Any) -> dict[str, Any]:
        """The first event ``kind`` with these fields; waits for it up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [e for e in self.events if e.get("event") == kind
                         and all(e.get(k) == v for k, v in fields.items())]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or (self.popen.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(
                        f"no {kind!r} event {fields} from {self.name} (pid {self.pid}, "
                        f"exit {self.popen.poll()}); events: {self.events}\n"
                        f"--- stderr ---\n{self.stderr_text()[-4000:]}"
                    )
                self._changed.wait(min(left, 0.1))

    def outcomes(self) -> list[dict[str, Any]]:
        return self.find("outcome")

    def send(self, **command: Any) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps(command) + "\n")
        self.popen.stdin.flush()

    def signal(self, signum: int) -> None:
        os.kill(self.popen.pid, signum)

    def wait(self, timeout: float = 60.0) -> int:
        code = self.popen.wait(timeout)
        self._reader.join(5)
        return code

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM (a graceful stop) and wait for the exit status."""
        if self.popen.poll() is None:
            self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()  # works on a SIGSTOPped process too
            self.popen.wait(10)
        if self.popen.stdin is not None and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()
            except OSError:
                pass

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""


def vendor_user(url: str, name: str) -> str:
    """``url`` with ``name`` as its user: every request then carries Basic auth naming it."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{name}@{rest}"


def requester(request: dict[str, Any]) -> str | None:
    """Who sent a vendor request (the user of :func:`vendor_user`), if anybody said."""
    auth = next((v for k, v in request["headers"].items() if k.lower() == "authorization"), "")
    if not auth.startswith("Basic "):
        return None
    return base64.b64decode(auth[6:]).decode().partition(":")[0]


def _spawn_live(stack: Stack, name: str, argv: list[str], env: dict[str, str]) -> LiveProc:
    stderr_path = stack.workdir / f"{name}.stderr.log"
    with open(stderr_path, "ab") as err:
        popen = subprocess.Popen(
            [sys.executable, *argv],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    proc = LiveProc(popen, name, stderr_path)
    stack.procs.append(proc)  # type: ignore[arg-type]  # Stack.close kills it
    return proc


def spawn_worker(stack: Stack, name: str, *args: str, faults: str | None = None,
                 **extra: str) -> LiveProc:
    """``python -m harness.scripted --commands --process-id NAME ...``, read live.

    Its vendor requests carry ``name`` (see :func:`requester`).
    """
    if faults:
        extra["TICKETIQ_FAULTS"] = faults
    extra.setdefault("TICKETIQ_VENDOR_URL", vendor_user(stack.vendor.base_url, name))
    argv = ["-m", "harness.scripted", "--commands", "--process-id", name, *args]
    return _spawn_live(stack, name, argv, stack.env(**extra))


SCRIPTED_APP = "harness.scripted:app"


def spawn_cli_worker(stack: Stack, name: str, *args: str,
                     app: str | None = SCRIPTED_APP, **extra: str) -> LiveProc:
    """``ticketiq-pg worker --app APP --process-id NAME ...``, read live.

    ``app=None`` leaves ``--app`` out (the worker then reads ``TICKETIQ_APP``).
    """
    extra.setdefault("TICKETIQ_VENDOR_URL", vendor_user(stack.vendor.base_url, name))
    argv = ["-m", "ticketiq_pg.ops.cli", "worker", "--process-id", name, *args]
    if app is not None:
        argv += ["--app", app]
    return _spawn_live(stack, name, argv, stack.env(**extra))
