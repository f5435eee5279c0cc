"""Start, stop and drive the local vendor service (:mod:`harness.vendor_sim.server`).

::

    with VendorService.start(tmp_path) as vendors:
        ...  # point the clients at vendors.base_url
        assert vendors.effects()["counts"]["jira"] == 1

``start`` runs ``sys.executable -m harness.vendor_sim.server`` with the SQLite file
``<workdir>/vendors.sqlite3`` (kept across restarts on the same workdir), waits for its
ready file and raises :class:`VendorServiceError` with the server's stderr if it does not
come up.  :meth:`VendorService.attach` drives a service started elsewhere (no process).

The control helpers are synchronous (httpx.Client): they talk to another process, so they
are safe to call from tests, including async ones.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

import ticketiq_pg

__all__ = ["VendorService", "VendorServiceError"]

DB_NAME = "vendors.sqlite3"
READY_NAME = "vendors.ready"
STDERR_NAME = "vendors.stderr.log"


class VendorServiceError(RuntimeError):
    """The vendor service did not start, or a control call failed."""


class VendorService:
    """A running (or attached) local vendor service."""

    def __init__(
        self,
        base_url: str,
        *,
        process: subprocess.Popen[bytes] | None = None,
        workdir: Path | None = None,
        db_path: Path | None = None,
        control_timeout: float = 10.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.process = process
        self.workdir = workdir
        self.db_path = db_path
        self._http = httpx.Client(base_url=self.base_url, timeout=control_timeout)

    # -- lifecycle ------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        workdir: Path,
        *,
        db_path: Path | None = None,
        port: int = 0,
        discord_window: float | None = None,
        sqs_window: float | None = None,
        sns_window: float | None = None,
        timeout: float = 10.0,
        verbose: bool = False,
        exit_with_parent: bool = True,
    ) -> VendorService:
        """Launch the server process on 127.0.0.1 and wait until it listens.

        ``db_path`` defaults to ``workdir/vendors.sqlite3``; starting again on the same
        file sees every earlier record.  The server's stderr goes to
        ``workdir/vendors.stderr.log`` (appended).  With ``exit_with_parent`` the server
        exits by itself when this process dies.
        """
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        db_path = Path(db_path) if db_path is not None else workdir / DB_NAME
        ready = workdir / READY_NAME
        stderr_path = workdir / STDERR_NAME
        with contextlib.suppress(FileNotFoundError):
            ready.unlink()
        cmd = [
            sys.executable,
            "-m",
            "harness.vendor_sim.server",
            "--db",
            str(db_path),
            "--port",
            str(port),
            "--ready-file",
            str(ready),
        ]
        if discord_window is not None:
            cmd += ["--discord-window", repr(float(discord_window))]
        if sqs_window is not None:
            cmd += ["--sqs-window", repr(float(sqs_window))]
        if sns_window is not None:
            cmd += ["--sns-window", repr(float(sns_window))]
        if exit_with_parent:
            cmd += ["--parent-pid", str(os.getpid())]
        if verbose:
            cmd.append("--verbose")
        env = dict(os.environ)
        # Importable even when the package is not installed (a plain checkout).
        src_root = str(Path(ticketiq_pg.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH", "")) if p)
        start_offset = stderr_path.stat().st_size if stderr_path.exists() else 0
        with open(stderr_path, "ab") as err:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env
            )

        def stderr_text() -> str:
            try:
                with open(stderr_path, "rb") as fh:
                    fh.seek(start_offset)
                    return fh.read().decode("utf-8", errors="replace").strip()
            except OSError:
                return ""

        deadline = time.monotonic() + timeout
        port_text = ""
        while True:
            if ready.exists():
                port_text = ready.read_text(encoding="utf-8").strip()
                if port_text.isdigit():
                    break
            code = proc.poll()
            if code is not None:
                raise VendorServiceError(
                    f"the vendor service exited with status {code} before it was ready "
                    f"(cmd: {' '.join(cmd)})\n--- its stderr ---\n{stderr_text()}"
                )
            if time.monotonic() >= deadline:
                _terminate(proc, 2.0)
                raise VendorServiceError(
                    f"the vendor service was not ready within {timeout:g} s "
                    f"(no port in {ready}; cmd: {' '.join(cmd)})\n--- its stderr ---\n"
                    f"{stderr_text()}"
                )
            time.sleep(0.02)
        return cls(
            f"http://127.0.0.1:{int(port_text)}", process=proc, workdir=workdir, db_path=db_path
        )

    @classmethod
    def attach(cls, base_url: str) -> VendorService:
        """Drive a vendor service started elsewhere (``stop``/``kill`` do nothing to it)."""
        service = cls(base_url)
        try:
            service.health()
        except BaseException:
            service.stop()
            raise
        return service

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL.  Returns the exit status."""
        self._http.close()
        if self.process is None:
            return None
        return _terminate(self.process, timeout)

    def kill(self) -> int | None:
        """SIGKILL the server at once (a crash), and reap it."""
        self._http.close()
        if self.process is None:
            return None
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        return self.process.wait()

    def __enter__(self) -> VendorService:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- control --------------------------------------------------------------------

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        if self._http.is_closed:
            raise VendorServiceError("this VendorService was stopped")
        try:
            resp = self._http.request(method, f"/_control/{path}", **kwargs)
        except httpx.HTTPError as exc:
            raise VendorServiceError(f"control call {method} {path} failed: {exc!r}") from exc
        if resp.status_code >= 400:
            raise VendorServiceError(
                f"control call {method} {path} answered {resp.status_code}: {resp.text}"
            )
        return resp.json()

    def health(self) -> dict[str, Any]:
        return self._call("GET", "health")

    def requests(
        self,
        vendor: str | None = None,
        *,
        path_prefix: str | None = None,
        effect: str | None = None,
        after_id: int | None = None,
    ) -> list[dict[str, Any]]:
        """Every recorded vendor request, oldest first (control calls are never recorded)."""
        params = {
            k: v
            for k, v in (
                ("vendor", vendor),
                ("path_prefix", path_prefix),
                ("effect", effect),
                ("after_id", after_id),
            )
            if v is not None
        }
        return self._call("GET", "requests", params=params)["requests"]

    def effects(self) -> dict[str, Any]:
        """{"counts": {vendor: n}, "by_kind": {kind: n}, "objects": {kind: [objects]}}."""
        return self._call("GET", "effects")

    def fault(
        self,
        vendor: str,
        action: str,
        *,
        path_regex: str | None = None,
        method: str | None = None,
        seconds: float | None = None,
        count: int = 1,
        probability: float = 1.0,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """Inject a fault for the next ``count`` matching requests (``vendor="*"``: any).

        With ``probability`` below 1 each matching request is hit with that chance (the
        draws seeded by ``seed``); ``count`` then caps the hits, and ``count - remaining``
        in :meth:`faults` is how many requests it hit.  ``throttle`` answers 429 with
        ``Retry-After: seconds`` (default 1).
        """
        body: dict[str, Any] = {"vendor": vendor, "action": action, "count": count}
        if probability != 1.0:
            body["probability"] = probability
        if seed is not None:
            body["seed"] = seed
        if path_regex is not None:
            body["path_regex"] = path_regex
        if method is not None:
            body["method"] = method
        if seconds is not None:
            body["seconds"] = seconds
        return self._call("POST", "faults", json=body)["fault"]

    def rate_limit(self, vendor: str, per_second: float | None) -> None:
        """Answer 429 past ``per_second`` requests of ``vendor`` in the last second."""
        self._call("POST", "rate_limits", json={"vendor": vendor, "per_second": per_second})

    def faults(self) -> list[dict[str, Any]]:
        return self._call("GET", "faults")["faults"]

    def clear_faults(self) -> None:
        self._call("DELETE", "faults")

    def reset(self) -> None:
        """Forget every request, object, dedupe key and fault; the clock goes back to real."""
        self._call("POST", "reset")

    def advance_clock(self, seconds: float) -> float:
        """Move the server clock (used by the Discord/SQS windows) forward; returns it."""
        return float(self._call("POST", "clock", json={"advance_seconds": seconds})["clock"])


def _terminate(proc: subprocess.Popen[bytes], timeout: float) -> int:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
    return proc.wait()
