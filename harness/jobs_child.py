"""A job worker as a process of its own: the child process of the job tests.

    TICKETIQ_DATABASE_URL=... TICKETIQ_VENDOR_URL=... \\
        python -m harness.jobs_child --kinds source_sync,fine_tune --process-id p1

It runs the scripted handlers of :mod:`harness.scripted_jobs` until
SIGTERM and prints one JSON line per event on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys
from typing import Any

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.jobs import JOB_CHANNEL
from ticketiq_pg.db.listener import Wakeup
from ticketiq_pg.runtime.jobs import JobWorker

log = logging.getLogger(__name__)


def _print_event(event: str, fields: dict[str, Any]) -> None:
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


async def _main(args: argparse.Namespace) -> int:
    from harness.scripted_jobs import scripted_handlers
    from ticketiq_pg.config import Settings
    from ticketiq_pg.db.listener import Listener
    from ticketiq_pg.vendors.clients import VendorClients

    settings = Settings.from_env()
    if not settings.database_url:
        print("TICKETIQ_DATABASE_URL is not set", file=sys.stderr)
        return 2
    process_id = args.process_id or f"{socket.gethostname()}:{os.getpid()}:jobs"
    vendor_url = os.environ.get("TICKETIQ_VENDOR_URL")
    vendors = VendorClients.local(vendor_url) if vendor_url else None
    handlers = scripted_handlers(vendors)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else handlers
    unknown = sorted(set(kinds) - set(handlers))
    if unknown:
        print(f"no handler for kinds {unknown}", file=sys.stderr)
        return 2

    db = await TicketIQ.connect(settings.database_url, min_size=1, max_size=args.max_jobs + 3)
    wakeup = Wakeup([JOB_CHANNEL])
    listener = Listener(settings.database_url, wakeup, application_name=f"jobs:{process_id}")
    worker = JobWorker(
        db,
        process_id,
        {kind: handlers[kind] for kind in kinds},
        ttl=settings.lease_ttl,
        renew_interval=settings.renew_interval,
        margin=settings.self_fence_margin,
        poll_interval=settings.poll_interval,
        max_jobs=args.max_jobs,
        wakeup=wakeup,
        on_event=_print_event,
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    listener.start()
    await worker.start()
    _print_event("ready", {"process_id": process_id, "pid": os.getpid(), "kinds": sorted(kinds)})
    try:
        while not stop.is_set():
            if args.sweep_interval > 0:
                try:
                    await worker.sweep_once()
                except Exception:  # noqa: BLE001 - the next tick tries again
                    log.exception("job sweep failed")
            try:
                await asyncio.wait_for(stop.wait(), args.sweep_interval or 3600.0)
            except TimeoutError:
                pass
    finally:
        await worker.stop(drain_timeout=args.drain_timeout)
        await listener.stop()
        await db.close()
        if vendors is not None:
            await vendors.aclose()
    _print_event("stopped", {"completed": worker.completed})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.jobs_child")
    parser.add_argument("--kinds", default="", help="comma-separated job kinds (default: all)")
    parser.add_argument("--process-id", default=None)
    parser.add_argument("--max-jobs", type=int, default=4)
    parser.add_argument(
        "--sweep-interval", type=float, default=0.0,
        help="also sweep lapsed jobs every so many seconds, as a leader would (0: never)",
    )
    parser.add_argument("--drain-timeout", type=float, default=0.0,
                        help="seconds SIGTERM waits for running jobs before abandoning them")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("TICKETIQ_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
