"""A kill trial's app process (:mod:`~harness.trials`): a ``ticketiq-pg
worker`` whose stdout JSON events are read on a thread, signalled from outside."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


class Proc:
    """A worker process whose stdout JSON events are read on a thread."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        with open(log, "ab") as err:
            self.popen = subprocess.Popen(
                argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True
            )
        self.events: list[dict[str, Any]] = []
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._seen:
                self.events.append(event)
                self._seen.notify_all()

    def wait_event(self, kind: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for event in self.events:
                    if event.get("event") == kind:
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or self.popen.poll() is not None:
                    raise RuntimeError(f"{self.name}: no {kind!r} event (exit {self.popen.poll()})")
                self._seen.wait(min(left, 0.1))

    def signal(self, signum: int) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signum)

    def stop(self, timeout: float = 20.0) -> None:
        if self.popen.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
