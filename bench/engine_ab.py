"""An older engine and this one, side by side: bench section 13's step cost, alternating.

``python -m bench.engine_ab --old REV`` checks REV out beside this tree (a detached git
worktree, removed at the end), then runs section 13 (:mod:`bench.step_cost`) at 1 and 8
runs at once in each tree in turn, ``--rounds`` times, the order swapped every round, on
one server (``TICKETIQ_BENCH_DATABASE_URL`` / ``TICKETIQ_TEST_DATABASE_URL``, as the bench
reads it; under ``scripts/with_test_server.py`` a private cluster).  Each arm runs in a
process of its own with its tree first on ``sys.path``, so each measures its own
``ticketiq_pg`` and SQL.  It prints, per arm, the medians of the client CPU a step, the
server CPU a step and the wall a step (1 at once) and the client CPU and steps/s at 8 at
once, with the load average beside each round, and writes them all to ``--json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import ROOT, alternate, revision_tree, run_in_tree

#: Run in each arm's tree: section 13 with levels 1 and 8, its figures as JSON on stdout.
CHILD = r"""
import asyncio, dataclasses, json, os, sys
from bench.common import FULL, BenchDB, open_server
from bench import step_cost
sizes = dataclasses.replace(FULL, cost_levels=(1, 8), cost_rounds=int(sys.argv[1]),
                            cost_level_rounds=int(sys.argv[1]))
server = open_server()
bdb = BenchDB.create(server.admin_url)
try:
    out = asyncio.run(step_cost.run(bdb, sizes, lambda *a: print(*a, file=sys.stderr)))
finally:
    bdb.drop()
print(json.dumps(out, default=str))
"""


def figures(section: dict[str, Any]) -> dict[str, float]:
    one = section["one_at_once"]["ours"]
    eight = section["by_concurrency"]["8"] if "8" in section["by_concurrency"] \
        else section["by_concurrency"][8]
    return {
        "client_cpu_us_1": one["client_cpu_us"],
        "server_cpu_us_1": one["server_cpu_us"],
        "wall_us_1": one["wall_us"],
        "client_cpu_us_8": eight["ours"]["client_cpu_us"],
        # whole runs: a tree before the step window's meter has only that
        "server_cpu_us_8": eight["ours"].get("server_cpu_run_us", eight["ours"]["server_cpu_us"]),
        "steps_per_s_8": eight["ours"]["steps_per_s"],
    }


def run_arm(tree: Path, rounds: int) -> dict[str, float]:
    return figures(run_in_tree(tree, CHILD, [str(rounds)]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine_ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the older engine's git revision")
    parser.add_argument("--rounds", type=int, default=5, help="alternations (default 5)")
    parser.add_argument("--arm-rounds", type=int, default=4,
                        help="section 13's rounds inside each arm (default 4)")
    parser.add_argument("--json", help="write every figure there")
    args = parser.parse_args(argv)
    with revision_tree(args.old) as old:
        rows, medians = alternate({"old": lambda: run_arm(old, args.arm_rounds),
                                   "new": lambda: run_arm(ROOT, args.arm_rounds)},
                                  args.rounds)
    print(f"\nmedians of {args.rounds} alternating rounds (old = {args.old}):")
    for key in medians["new"]:
        o, n = medians["old"][key], medians["new"][key]
        print(f"  {key:18} old {o:10.1f}   new {n:10.1f}   new/old {n / o:5.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"old": args.old, "rounds": rows, "medians": medians}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
