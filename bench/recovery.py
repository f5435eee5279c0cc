"""7. Recovery time: the distribution from the kill trials' report.

The kill trials write a JSON report (``LIYAGENT_KILL_REPORT`` format:
``{"recovery_seconds": [...]}``, seconds from each kill to that trial's end
for every trial caught in flight).  Name it in ``TICKETIQ_BENCH_KILL_REPORT``
and the bench reports p50, p95 and max against the 15 s target; without it
the figure is "pending: kill trials".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .common import summary

ENV_REPORT = "TICKETIQ_BENCH_KILL_REPORT"
TARGET_SECONDS = 15.0


def run(log: Any) -> dict[str, Any]:
    name = os.environ.get(ENV_REPORT)
    if not name:
        log("  recovery: pending: kill trials")
        return {"pending": "pending: kill trials", "target_s": TARGET_SECONDS}
    path = Path(name)
    data = json.loads(path.read_text())
    seconds = [float(x) for x in data.get("recovery_seconds", [])]
    if not seconds:
        raise ValueError(f"{path}: no recovery_seconds")
    stats = summary(seconds)
    log(f"  recovery: p50 {stats['p50']:.2f} s, p95 {stats['p95']:.2f} s, "
        f"max {stats['max']:.2f} s over {stats['n']} trials")
    return {"report": str(path), "recovery_s": stats, "samples_s": seconds,
            "target_s": TARGET_SECONDS}
