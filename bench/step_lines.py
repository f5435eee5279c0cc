"""Where a step's client work differs between an older engine and this one: Python calls
and library lines a step, by function.

``python -m bench.step_lines --old REV`` (under ``scripts/with_test_server.py``) checks REV
out beside this tree and, in each tree, runs runs of 20 steps at one at once through the
``Runner`` (one read a step, no model wait: bench section 13's step, as
``bench.step_instructions``), twice: under cProfile (Python calls a step, by function)
and under ``sys.settrace`` (lines of ``ticketiq_pg`` executed a step, by function).
Each figure is the difference between a short and a long count of runs, after three to
warm up, over the steps between them, so start-up drops out.  Neither count is a time:
a busy machine barely moves them (the calls by the event loop's polls, under 1 %).
``bench.step_instructions`` says how much more work a step is; this says where it is.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import ROOT, open_server, revision_tree, run_in_tree

STEPS = 20

#: In the arm's tree: per step, {"calls": {function: n}, "lines": {function: n}}.
COUNT = r"""
import asyncio, cProfile, collections, json, pstats, sys
from bench.common import BenchDB
from bench.throughput import ticketiq_round
from bench.workload import SEALER, TOOLS, BenchModel
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner

STEPS, SHORT, LONG = 20, int(sys.argv[2]), int(sys.argv[3])
lines = collections.Counter()

def tracer(frame, event, arg):
    name = frame.f_code.co_filename
    if "ticketiq_pg" not in name:
        return None
    key = name.split("ticketiq_pg/")[-1] + ":" + frame.f_code.co_name
    def local(frame, event, arg):
        if event == "line":
            lines[key] += 1
        return local
    return local

async def main(url):
    db = await TicketIQ.connect(url, min_size=1, max_size=2)
    model = BenchModel()
    leases = LeaseKeeper(db, "lines", ttl=600, renew_interval=60, margin=5)
    runner = Runner(db, leases, SEALER, model, TOOLS)
    runner.leases.start()
    seed = 1000
    async def runs(n):
        nonlocal seed
        for _ in range(n):
            seed += 1
            await ticketiq_round(runner, model, 1, STEPS, seed)
    await runs(3)
    calls = {}
    for n in (SHORT, LONG):
        prof = cProfile.Profile()
        prof.enable()
        await runs(n)
        prof.disable()
        calls[n] = collections.Counter()
        for (path, _, fn), row in pstats.Stats(prof).stats.items():
            calls[n][path.split("/")[-1] + ":" + fn] += row[1]
    counted = {}
    for n in (SHORT, LONG):
        lines.clear()
        sys.settrace(tracer)
        await runs(n)
        sys.settrace(None)
        counted[n] = dict(lines)
    await runner.leases.stop()
    await db.close()
    per = (LONG - SHORT) * STEPS
    def diff(a, b):
        return {k: (b.get(k, 0) - a.get(k, 0)) / per for k in set(a) | set(b)}
    return {"calls": diff(calls[SHORT], calls[LONG]),
            "lines": diff(counted[SHORT], counted[LONG])}

bdb = BenchDB.create(sys.argv[1])
try:
    out = asyncio.run(main(bdb.url))
finally:
    bdb.drop()
print(json.dumps(out))
"""


def counts(tree: Path, admin_url: str, short: int, long: int) -> dict[str, Any]:
    return run_in_tree(tree, COUNT, [admin_url, str(short), str(long)])


def _by_function(old: dict[str, float], new: dict[str, float], least: float) -> list[str]:
    keys = sorted(set(old) | set(new), key=lambda k: -(old.get(k, 0) + new.get(k, 0)))
    return [f"  {old.get(k, 0):8.1f} {new.get(k, 0):8.1f}  {k}" for k in keys
            if old.get(k, 0) >= least or new.get(k, 0) >= least]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_lines", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the older engine's git revision")
    parser.add_argument("--short", type=int, default=2, help="runs of the short count (2)")
    parser.add_argument("--long", type=int, default=7, help="runs of the long count (7)")
    parser.add_argument("--least", type=float, default=2.0,
                        help="list functions with at least this many lines a step (2)")
    parser.add_argument("--json", help="write the figures there")
    args = parser.parse_args(argv)
    server = open_server()
    try:
        with revision_tree(args.old) as old:
            got = {"old": counts(old, server.admin_url, args.short, args.long),
                   "new": counts(ROOT, server.admin_url, args.short, args.long)}
    finally:
        server.stop()
    for kind in ("calls", "lines"):
        o, n = got["old"][kind], got["new"][kind]
        print(f"{kind} a step: old ({args.old}) {sum(o.values()):.1f}, new "
              f"{sum(n.values()):.1f}")
    print("library lines a step by function (old, new):")
    print("\n".join(_by_function(got["old"]["lines"], got["new"]["lines"], args.least)))
    if args.json:
        Path(args.json).write_text(json.dumps({"old": args.old, **got}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
