"""``ticketiq-pg worker``: find the app's module, then serve its worker until SIGTERM.

:func:`load_app` imports ``module:function`` from the ``--app-dir`` folders, the current
directory (a console script does not search it by itself, unlike ``python -m``) or the
installed packages; :func:`serve` runs the :class:`~ticketiq_pg.runtime.worker.Worker`
and, on SIGTERM or SIGINT, hands its runs over at their next step boundary.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ticketiq_pg.config import Settings

# The worker command's log lines keep the name they had when this lived in ops/cli.py.
log = logging.getLogger("ticketiq_pg.ops.cli")


def app_path(app_dirs: Sequence[str | Path] = ()) -> list[str]:
    """Put the ``app_dirs`` and then the current directory first on ``sys.path``.

    A console script's ``sys.path`` starts with its own ``bin`` directory, not the
    current one, so the app's own folder is added as ``python -m`` and uvicorn do.
    Returns the directories, as absolute paths, in the order they are searched.
    """
    dirs = list(dict.fromkeys(str(Path(d).resolve()) for d in [*app_dirs, os.getcwd()]))
    for directory in reversed(dirs):
        if directory in sys.path:
            sys.path.remove(directory)
        sys.path.insert(0, directory)
    importlib.invalidate_caches()  # a module written since the last import is found too
    return dirs


def load_app(ref: str, app_dirs: Sequence[str | Path] = ()) -> Any:
    """Import ``module:attribute`` and return the App it names (calling it if callable).

    The module is looked for in the ``app_dirs``, then the current directory, then the
    rest of ``sys.path``.
    """
    from ticketiq_pg.runtime.app import App

    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"ticketiq-pg worker: --app must be module:function, got {ref!r}")
    searched = app_path(app_dirs)
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            # The app's module was found; something it imports is missing.
            raise SystemExit(
                f"ticketiq-pg worker: cannot import {module_name!r}: {exc}") from exc
        raise SystemExit(
            f"ticketiq-pg worker: no module named {exc.name!r} (for --app {ref}) in "
            f"{', '.join(searched)} or the rest of sys.path; run from the app's folder "
            "or pass --app-dir DIR"
        ) from exc
    except ImportError as exc:
        raise SystemExit(f"ticketiq-pg worker: cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise SystemExit(f"ticketiq-pg worker: {module_name!r} has no {attr!r}") from exc
    app = target
    if callable(target) and not isinstance(target, (App, type)):
        app = target()
    if not isinstance(app, App):
        raise SystemExit(
            f"ticketiq-pg worker: {ref} gave {type(app).__name__}, not a ticketiq_pg.App"
        )
    return app


async def serve(settings: Settings, app: Any, *, process_id: str | None = None,
                max_runs: int | None = None, http_port: int | None = None,
                drain_timeout: float = 30.0, http_host: str | None = None,
                metrics_port: int | None = None, metrics_host: str | None = None) -> int:
    """Run ``app``'s worker until SIGTERM or SIGINT, then shut it down gracefully."""
    from ticketiq_pg.runtime.worker import Worker

    front = None
    if http_port is not None:
        from ticketiq_pg.front.server import FrontServer
        from ticketiq_pg.front.settings import FrontSettings

        front = FrontServer(settings=FrontSettings.from_env(port=http_port, host=http_host))
    services: list[Any] = [front] if front is not None else []
    metrics = None
    if metrics_port is not None:
        from ticketiq_pg.observe.metrics import MetricsServer

        metrics = MetricsServer(metrics_port, metrics_host or "127.0.0.1")
        services.append(metrics)
    worker = Worker(settings, app, process_id=process_id, max_runs=max_runs,
                    services=services)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            log.warning("%s again: already shutting down", signal.Signals(signum).name)
            return
        log.info("%s: shutting down gracefully", signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    await worker.start()
    if front is not None:
        # One line on stdout a parent (a test, the demo, the trials) can read.
        print(json.dumps({"event": "http", "port": front.port, "host": front.host,
                          "process_id": worker.process_id}), flush=True)
    if metrics is not None:
        print(json.dumps({"event": "metrics", "port": metrics.port, "host": metrics.host,
                          "process_id": worker.process_id}), flush=True)
    log.info(
        "worker %s serving (lease %gs, renew %gs, sweep %gs, poll %gs)",
        worker.process_id, settings.lease_ttl, settings.renew_interval,
        settings.sweep_interval, settings.poll_interval,
    )
    try:
        await stop.wait()
    finally:
        await worker.shutdown(drain_timeout=drain_timeout)
    log.info("worker %s exited: %d runs ended here, %d released", worker.process_id,
             worker.ended.total(), worker.ended["released"])
    return 0
