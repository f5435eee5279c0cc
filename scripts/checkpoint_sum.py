#!/usr/bin/env python3
"""The sum in docs/performance.md section 1, *The bound*: what each way of writing allows.

    scripts/checkpoint_sum.py FLOOR_OUTPUT BENCH_JSON [BENCH_JSON ...]

FLOOR_OUTPUT is what ``scripts/checkpoint_floor.py`` printed (its "1 client,
durable commits" block is read); each BENCH_JSON is a ``python -m bench``
report with the throughput section.  For one run at once, a step at least
costs the raw UPDATE (B) less its ``json.dumps`` (a step sends the seal's
text, so it does not encode its body twice), plus the loop (arm N), the
seal, and what its way of writing adds to the UPDATE: the difference of
1 / rate between that arm and the raw UPDATE at the database, and for the
rows "through the driver" also the client CPU arm C spends beyond arm B.
Each row prints B / that step: the most A / B could reach.  This adds
measured times; it measures nothing itself.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

SETTING = "1 client, durable commits"
ARMS = {"raw": "raw UPDATE", "insert_only": "INSERT, run row locked",
        "two_row": "UPDATE run + INSERT", "function": "write_checkpoint"}


def floor_rounds(text: str) -> dict[str, list[float]]:
    """Per-round transactions per second of each arm in the 1-client durable block."""
    rounds: dict[str, list[float]] = {}
    block = False
    for line in text.splitlines():
        if not line.startswith(" "):
            block = line.startswith(SETTING)
            continue
        if not block:
            continue
        for key, arm in ARMS.items():
            found = re.match(rf"\s+{re.escape(arm)}\s+[\d,]+/s\s+[\d.]+\s+\(([\d, ]+)\)\s*$",
                             line)
            if found:
                rounds[key] = [float(x.replace(",", "")) for x in found.group(1).split(", ")]
    missing = set(ARMS) - set(rounds)
    if missing:
        raise SystemExit(f"checkpoint_sum: no {SETTING!r} figures for {sorted(missing)}")
    return rounds


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def extras(rounds: dict[str, list[float]]) -> dict[str, float]:
    """ms each way of writing adds to the raw UPDATE at the database (medians' 1 / rate)."""
    ms = {key: 1000.0 / _median(r) for key, r in rounds.items()}
    return {
        "insert_only": ms["insert_only"] - ms["raw"],
        "two_row": ms["two_row"] - ms["raw"],
        "function": ms["function"] - ms["raw"],
        # what the function adds around the two-row statement
        "function_around": ms["function"] - ms["two_row"],
    }


def rows(extra: dict[str, float], report: dict[str, Any]) -> dict[str, float]:
    """The most A / B could reach, per way of writing, for one bench run (1 run at once)."""
    section = report["sections"]["throughput"]
    fig = section["by_concurrency"]["1"]
    cpu = fig["client_cpu_us_per_step"]
    b_ms = fig["raw_update_ms"]
    driver = (cpu["write_checkpoint_alone"] - cpu["raw_update"]) / 1000.0
    base = (b_ms - section["client_breakdown_us"]["json_dumps_us"] / 1000.0
            + fig["loop_alone_ms"] + section["client_breakdown_us"]["seal_us"] / 1000.0)
    adds = {
        "free": 0.0,
        "insert_only": extra["insert_only"],
        "two_row": extra["two_row"],
        "function": extra["function"],
        "function_driver": extra["function"] + driver,
        "insert_only_function_driver": extra["insert_only"] + extra["function_around"] + driver,
        "insert_only_driver": extra["insert_only"] + driver,
    }
    out = {key: b_ms / (base + add) for key, add in adds.items()}
    out["room_ms"] = b_ms / 0.8 - base  # what 0.8 leaves the write over the raw UPDATE
    out["driver_ms"] = driver
    return out


LABELS = {
    "free": "free: exactly one raw UPDATE",
    "insert_only": "the insert-only statement, no function, no driver cost",
    "two_row": "the fenced two-row statement, no function",
    "function": "write_checkpoint as it is",
    "function_driver": "write_checkpoint as it is, through the driver",
    "insert_only_function_driver": "insert-only inside a function like today's, through the driver",
    "insert_only_driver": "insert-only, no function cost, through the driver",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("floor", type=Path)
    parser.add_argument("reports", type=Path, nargs="+")
    args = parser.parse_args()
    rounds = floor_rounds(args.floor.read_text())
    extra = extras(rounds)
    per_round = [1000.0 / i - 1000.0 / r for i, r in zip(rounds["insert_only"], rounds["raw"],
                                                          strict=True)]
    print(f"adds to the raw UPDATE at the database (ms): insert-only {extra['insert_only']:.3f},"
          f" two-row {extra['two_row']:.3f}, write_checkpoint {extra['function']:.3f},"
          f" the function around the two-row statement {extra['function_around']:.3f}")
    print(f"insert-only, per round: {min(per_round):.3f} to {max(per_round):.3f} ms")
    found = [rows(extra, json.loads(path.read_text())) for path in args.reports]
    print("A / B at most, 1 run at once (" + " / ".join(p.name for p in args.reports) + "):")
    for key, label in LABELS.items():
        print(f"    {label:64s} " + " / ".join(f"{r[key]:.2f}" for r in found))
    print("    room 0.8 leaves the write over the raw UPDATE (ms): "
          + " / ".join(f"{r['room_ms']:.3f}" for r in found))
    print("    the driver's cost of the function call, client CPU (ms): "
          + " / ".join(f"{r['driver_ms']:.3f}" for r in found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
