"""The client's instructions a step, an older engine and this one: callgrind counts.

``python -m bench.step_instructions --old REV`` (under ``scripts/with_test_server.py``,
valgrind installed) checks REV out beside this tree and, in each tree, runs runs of 20
steps at one at once through the ``Runner`` (one read a step, no model wait, as bench
section 13; ``--at-once 8``: rounds of 8 runs at once) under ``valgrind
--tool=callgrind``, twice: ``--small`` runs (rounds) and ``--large`` after two to warm
up.  The client's instructions a step are the difference of the two totals over the
steps between them, so the start-up, imports and warm-up drop out.
A CPU-time figure on a machine shared with anything moves by 5 to 10 % from run to run
(bench.engine_ab); an instruction count moves by well under 1 %, so a difference of a
few per cent between two engines shows.  Each arm's database is made, with its own
tree's schema, before valgrind starts; the server is not counted (it is not the client).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import ROOT, open_server, revision_tree

#: A run of the bench at most this long under valgrind (a hang is a failure, not a wait).
VALGRIND_TIMEOUT = 900

STEPS = 20

#: In the arm's tree: a database of its own with its schema; prints its URL.
SETUP = r"""
import sys
from bench.common import BenchDB
print(BenchDB.create(sys.argv[1]).url)
"""

#: Under callgrind: RUNS runs of STEPS steps, one at once, after two to warm up.
RUNS = r"""
import asyncio, sys
from bench.throughput import ticketiq_round
from bench.workload import SEALER, TOOLS, BenchModel
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner

async def main(url, runs, steps, at_once):
    db = await TicketIQ.connect(url, min_size=1, max_size=2)
    model = BenchModel()
    # A long lease: under valgrind a step is some fifty times slower, and a renewal
    # late past the bench's 8 s lease would end the run as lost.
    leases = LeaseKeeper(db, "instructions", ttl=600, renew_interval=60, margin=5)
    runner = Runner(db, leases, SEALER, model, TOOLS)
    runner.leases.start()
    for i in range(2 + runs):
        await ticketiq_round(runner, model, at_once, steps, 1000 + i)
    await runner.leases.stop()
    await db.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
"""


def instructions(tree: Path, admin_url: str, runs: int, at_once: int = 1) -> int:
    """The client's instructions (callgrind's total) for ``runs`` runs in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    url = subprocess.run([sys.executable, "-c", SETUP, admin_url], cwd=tree, env=env,
                         capture_output=True, text=True, check=True).stdout.split()[-1]
    with tempfile.TemporaryDirectory(prefix="callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             "-c", RUNS, url, str(runs), str(STEPS), str(at_once)],
            cwd=tree, env=env, capture_output=True, text=True, check=False,
            timeout=VALGRIND_TIMEOUT)
        if done.returncode != 0:
            raise RuntimeError(f"callgrind in {tree} failed:\n{done.stderr[-3000:]}")
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("callgrind wrote no total")


def per_step(tree: Path, admin_url: str, small: int, large: int, at_once: int = 1) -> float:
    return (instructions(tree, admin_url, large, at_once)
            - instructions(tree, admin_url, small, at_once)) / ((large - small) * STEPS * at_once)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_instructions",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the older engine's git revision")
    parser.add_argument("--small", type=int, default=5, help="runs of the short count (5)")
    parser.add_argument("--large", type=int, default=45, help="runs of the long count (45)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--at-once", type=int, default=1,
                        help="runs at once in a round (1); the runs counted are rounds")
    parser.add_argument("--json", help="write the figures there")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian's valgrind)")
    server = open_server()
    rows: dict[str, list[float]] = {"old": [], "new": []}
    with revision_tree(args.old) as old:
        trees = {"old": old, "new": ROOT}
        for r in range(args.rounds):
            for arm in ("old", "new") if r % 2 == 0 else ("new", "old"):
                got = per_step(trees[arm], server.admin_url, args.small, args.large,
                               args.at_once)
                rows[arm].append(got)
                print(f"round {r + 1} {arm}: {got:,.0f} instructions a step", flush=True)
    medians = {arm: statistics.median(v) for arm, v in rows.items()}
    print(f"\nclient instructions a step at {args.at_once} at once, medians of "
          f"{args.rounds}: old ({args.old}) "
          f"{medians['old']:,.0f}, new {medians['new']:,.0f}, new/old "
          f"{medians['new'] / medians['old']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"old": args.old, "steps_per_run": STEPS, "at_once": args.at_once,
             "small": args.small,
             "large": args.large, "rounds": rows, "medians": medians}, indent=1))
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
