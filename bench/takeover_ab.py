"""The takeover of an older build and of this one, side by side: bench section 8, alternating.

``python -m bench.takeover_ab --old REV`` checks REV out beside this tree (a detached git
worktree, removed at the end) and runs section 8's takeover (:func:`bench.takeover.takeover`:
a survivor, a victim holding ``--runs`` runs SIGKILLed once each has written its first
step) in each arm in turn, ``--rounds`` times, on one server (as the bench reads it; under
``scripts/with_test_server.py`` a private cluster).  The arms: ``old`` (REV's tree),
``new`` (this tree as shipped) and each ``--env NAME=K=V`` (this tree with that setting,
e.g. ``--env order-on=TICKETIQ_RESUMES_FIRST_WAIT=5``).  Each arm runs in a process of
its own with its tree first on ``sys.path`` (its survivor and victim too), so each
measures its own ``ticketiq_pg`` and SQL.  It prints, per arm and round, the next step's
p50, p99 and max from the kill, the last adoption, the survivor's and the server's CPU,
the calls the survivor held for a liveness confirmation and the load average; then the
medians, and writes everything to ``--json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import ROOT, alternate, revision_tree, run_in_tree

#: Run in each arm's tree: section 8's takeover of N runs, its figures as JSON on stdout.
CHILD = r"""
import json, sys
from bench.common import BenchDB, open_server
from bench.takeover import takeover
server = open_server()
bdb = BenchDB.create(server.admin_url)
try:
    out = takeover(bdb, int(sys.argv[1]), lambda *a: print(*a, file=sys.stderr))
finally:
    bdb.drop()
print(json.dumps(out, default=str))
"""


def figures(section: dict[str, Any]) -> dict[str, float]:
    w, a = section["next_step_written_s"], section["adopted_s"]
    cpu = section["cpu_s"]
    stmts = section.get("statements", {})
    return {
        "next_p50_s": w["p50"], "next_p99_s": w["p99"], "next_max_s": w["max"],
        "adopted_max_s": a["max"], "all_ended_s": section["all_ended_s"],
        "survivor_cpu_s": cpu["survivor"], "server_cpu_s": cpu["server"] or 0.0,
        "calls_held": section.get("survivor_gc", {}).get("liveness_calls_held", -1),
        "lost": section["lost"], "duplicates": section["duplicates"],
        # the database's side (pg_stat_statements): a resume's audit (lone, and grouped
        # where the build groups them: then the lone ones are mostly those that waited
        # for a row), adoption in all
        "record_resume_mean_ms": stmts.get("record_resume", {}).get("mean_ms", -1.0),
        "record_resume_calls": stmts.get("record_resume", {}).get("calls", 0),
        "record_resumes_calls": stmts.get("record_resumes", {}).get("calls", 0),
        "record_resumes_mean_ms": stmts.get("record_resumes", {}).get("mean_ms", 0.0),
        "adopt_runs_s": stmts.get("adopt_runs", {}).get("ms", -1000.0) / 1000,
    }


def run_arm(tree: Path, runs: int, env: dict[str, str]) -> dict[str, float]:
    return figures(run_in_tree(tree, CHILD, [str(runs)], env))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.takeover_ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the older build's git revision")
    parser.add_argument("--runs", type=int, default=10_000, help="runs taken over (10,000)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--env", action="append", default=[], metavar="ARM=NAME=VALUE",
                        help="one more arm: this tree with the setting NAME=VALUE")
    parser.add_argument("--json", help="write every figure there")
    args = parser.parse_args(argv)
    extra: dict[str, dict[str, str]] = {}
    for spec in args.env:
        arm, _, setting = spec.partition("=")
        name, _, value = setting.partition("=")
        if not arm or not name:
            parser.error(f"--env wants ARM=NAME=VALUE, not {spec!r}")
        extra.setdefault(arm, {})[name] = value
    with revision_tree(args.old) as old:
        arms: dict[str, tuple[Path, dict[str, str]]] = {"old": (old, {}), "new": (ROOT, {})}
        arms.update({arm: (ROOT, env) for arm, env in extra.items()})
        rows, medians = alternate(
            {arm: (lambda t=tree, e=env: run_arm(t, args.runs, e))
             for arm, (tree, env) in arms.items()}, args.rounds, digits=2)
    print(f"\nmedians of {args.rounds} alternating rounds, {args.runs} runs (old = {args.old}):")
    keys = list(medians["new"])
    print("  " + " ".join(f"{k:>14}" for k in ["arm", *keys]))
    for arm, m in medians.items():
        print("  " + " ".join([f"{arm:>14}", *(f"{m[k]:14.2f}" for k in keys)]))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"old": args.old, "runs": args.runs, "arms": {a: e for a, (_, e) in arms.items()},
             "rounds": rows, "medians": medians}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
