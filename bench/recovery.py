"""7. Recovery time: the distribution from the kill trials' report.

The kill trials write a JSON report (``LIYAGENT_KILL_REPORT`` format:
``{"recovery_seconds": [...]}``, seconds from each kill to that trial's end
for every trial caught in flight).  Name it in ``TICKETIQ_BENCH_KILL_REPORT``
and the bench reports p50, p95 and max against the 15 s target; without it
the figure is "pending: kill trials".

Reports that carry per-trial ``detection`` and ``resume_seconds`` (kill
trials since liveness tokens, issue 8) also give the resume time — from the
kill to the taken-over run's next step written — for each detection side
by side: ``session`` (the victim held a liveness token) against its target
(p50 <= 1 s, p99 <= 2 s) and ``lease`` (lease expiry alone, the rounds of
``LIYAGENT_KILL_LEASE_ONLY``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .common import percentile, summary

ENV_REPORT = "TICKETIQ_BENCH_KILL_REPORT"
TARGET_SECONDS = 15.0
#: Issue 8: a killed process's runs resume within about a second.
RESUME_TARGET_P50 = 1.0
RESUME_TARGET_P99 = 2.0


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
    result: dict[str, Any] = {"report": str(path), "recovery_s": stats, "samples_s": seconds,
                              "target_s": TARGET_SECONDS}
    resume: dict[str, Any] = {}
    for trial in data.get("trials", []):
        if trial.get("resume_seconds") is not None:
            resume.setdefault(trial.get("detection", "lease"), []).append(
                float(trial["resume_seconds"]))
    if resume:
        result["resume_samples_s"] = resume
        result["resume_s"] = {}
        for detection, values in sorted(resume.items()):
            figures = summary(values)
            figures["p99"] = percentile(values, 99)
            result["resume_s"][detection] = figures
            log(f"  resume ({detection}): p50 {figures['p50']:.2f} s, p99 {figures['p99']:.2f} s,"
                f" max {figures['max']:.2f} s over {figures['n']} runs taken over")
        result["resume_target_s"] = {"p50": RESUME_TARGET_P50, "p99": RESUME_TARGET_P99}
    return result
