"""``python -m bench [--smoke]``: measure, print the table, write JSON and plots if asked.

Environment:

* ``TICKETIQ_BENCH_JSON``: write every figure there as JSON (or ``--json``);
* ``TICKETIQ_BENCH_PLOTS``: draw the PNG plots into that folder (or ``--plots``);
* ``TICKETIQ_BENCH_MARKDOWN``: write the table as Markdown there (or ``--markdown``);
* ``TICKETIQ_BENCH_DATABASE_URL`` / ``TICKETIQ_TEST_DATABASE_URL``: a superuser URL
  of a server to measure on (each section creates its own database there and
  drops it); unset: a private durable cluster (``PrivateCluster(fast=False)``);
* ``TICKETIQ_BENCH_KILL_REPORT``: the kill trials' JSON report (section 7);
* ``TICKETIQ_BENCH_LONG=1``: the takeover section kills a process holding 10,000 runs;
* ``TICKETIQ_BENCH_CAPACITY_GC=off``: the capacity section's workers collect no garbage
  in the measured window (a diagnosis).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import (
    calls_at_once,
    capacity,
    concurrency,
    history,
    lease_scale,
    long_runs,
    peer,
    plots,
    recovery,
    report,
    resume_lookup,
    roundtrips,
    step_cost,
    step_split,
    stream,
    takeover,
    throughput,
    vendor_tokens,
    wakeup,
    workflow_steps,
)
from .common import FULL, SMOKE, BenchDB, as_dict, machine, open_server

SECTIONS = ("throughput", "concurrency", "roundtrips", "peer", "lease_scale", "history", "wakeup",
            "takeover", "recovery", "long_runs", "workflow_steps", "step_cost", "capacity",
            "resume_lookup", "calls_at_once", "vendor_tokens", "stream", "step_split")
ASYNC_SECTIONS = {
    "throughput": throughput.run,
    "concurrency": concurrency.run,
    "roundtrips": roundtrips.run,
    "peer": peer.run,
    "lease_scale": lease_scale.run,
    "history": history.run,
    "wakeup": wakeup.run,
    "takeover": takeover.run,
    "long_runs": long_runs.run,
    "workflow_steps": workflow_steps.run,
    "step_cost": step_cost.run,
    "capacity": capacity.run,
    "resume_lookup": resume_lookup.run,
    "calls_at_once": calls_at_once.run,
    "vendor_tokens": vendor_tokens.run,
    "stream": stream.run,
    "step_split": step_split.run,
}
report.BUILDERS["long_runs"] = long_runs.rows
report.BUILDERS["workflow_steps"] = workflow_steps.rows
report.BUILDERS["step_cost"] = step_cost.rows
report.BUILDERS["capacity"] = capacity.rows
report.BUILDERS["resume_lookup"] = resume_lookup.rows
report.BUILDERS["calls_at_once"] = calls_at_once.rows
report.BUILDERS["vendor_tokens"] = vendor_tokens.rows
report.BUILDERS["stream"] = stream.rows
report.BUILDERS["step_split"] = step_split.rows


def log(message: str) -> None:
    print(message, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, same code (CI)")
    parser.add_argument("--json", default=os.environ.get("TICKETIQ_BENCH_JSON"))
    parser.add_argument("--plots", default=os.environ.get("TICKETIQ_BENCH_PLOTS"))
    parser.add_argument("--markdown", default=os.environ.get("TICKETIQ_BENCH_MARKDOWN"))
    parser.add_argument("--only", default="", help=f"comma-separated subset of {SECTIONS}")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else FULL
    chosen = [s for s in SECTIONS if not args.only or s in args.only.split(",")]

    started = time.perf_counter()
    log(f"ticketiq-pg bench ({sizes.name}): sections {', '.join(chosen)}")
    server = open_server()
    results: dict[str, Any] = {
        "command": " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
        "env": {k: v for k, v in os.environ.items()
                if k.startswith("TICKETIQ_BENCH_") and "URL" not in k},
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "sizes": as_dict(sizes),
        "server": server.source,
        "sections": {},
        "section_seconds": {},
    }
    failed = False
    try:
        results["machine"] = machine(server.admin_url)
        m = results["machine"]
        log(f"machine: {m.get('nproc')} cpus, {m.get('memory_gib')} GiB, PostgreSQL "
            f"{m.get('postgres')} ({server.source}); load average {m['loadavg_at_start']}")
        for name in chosen:
            log(f"[{name}]")
            t0 = time.perf_counter()
            try:
                if name == "recovery":
                    results["sections"][name] = recovery.run(log)
                else:
                    bdb = BenchDB.create(server.admin_url)
                    try:
                        results["sections"][name] = asyncio.run(
                            ASYNC_SECTIONS[name](bdb, sizes, log))
                        results["sections"][name]["statement_source"] = bdb.pgss_note
                    finally:
                        bdb.drop()
            except Exception as exc:  # noqa: BLE001 - report every section, then fail
                failed = True
                traceback.print_exc()
                results["sections"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            results["section_seconds"][name] = round(time.perf_counter() - t0, 1)
            log(f"  ({results['section_seconds'][name]} s)")
    finally:
        server.stop()
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    results["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    rows = report.build_rows(results["sections"])
    results["table"] = rows
    log("")
    log(report.format_table(rows))
    log(f"\ntotal {results['total_seconds']} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
        log(f"figures written to {args.json}")
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(report.format_markdown(rows) + "\n")
        log(f"table written to {args.markdown}")
    if args.plots:
        if plots.available():
            for path in plots.draw(results, Path(args.plots)):
                log(f"plot written to {path}")
        else:
            log("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
