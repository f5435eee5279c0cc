"""14. Capacity with a model that takes its time (issue 35, item 4).

One worker process (``bench.capacity_child``: a real Worker, the settings an app
author gets by default: ``TICKETIQ_POOL_SIZE`` 16, group commit of 16, 8 s leases
renewed every 2 s on their own session, liveness every 0.1 s) drives ``cap_runs``
runs at once (FULL: 2,000), each step a ``cap_latency`` s model wait (FULL: 1 s) and
one read tool call; then two such processes together (FULL: 4,000 runs).  The runs
start spread evenly over whole model waits, so their steps are too.  The window
opens once every run is in flight and one wait has passed, and closes ``cap_window``
s later, before the first run ends.  Figures: steps/s against the ideal (runs /
wait; target at least 0.9 of it), client CPU per step (the children's utime +
stime), server CPU per step (every server process, from ``/proc``), the pool's
size, peak connections in use and waits, the database's backends, VmRSS per run,
and where a step's time beyond the wait goes (the probe of ``bench.capacity_child``).
Diagnoses: ``TICKETIQ_BENCH_CAPACITY_GC=off`` (no cyclic collector in the window),
``TICKETIQ_LEASE_TTL=130 TICKETIQ_RENEW_INTERVAL=60`` (no lease renewal in it).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from .common import BenchDB, Sizes
from .concurrency import _Meter
from .report import INFO, MISS, OK, _f, _row
from .workload import SEAL_KEY, SEAL_KEY_ID

TARGET_RATIO = 0.9
RAMP_WAITS = 2  # the runs start over this many model waits
ROOT = Path(__file__).resolve().parent.parent
BACKENDS_SQL = """
select coalesce(nullif(split_part(application_name, ':', 1), ''), 'pool+leases') as kind, count(*)
from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
group by 1 order by 1
"""


# -- the window's arithmetic (pure; tests/unit/test_bench_capacity.py) ---------------------


def launch_at(index: int, runs: int, ramp: float) -> float:
    """Seconds after ``go`` that run ``index`` of ``runs`` starts: evenly over ``ramp``."""
    return ramp * index / runs if runs else 0.0


def steps_per_run(latency: float, window: float, ramp_waits: int = RAMP_WAITS) -> int:
    """Steps each run takes so that none ends before the window closes.

    The window opens one wait after the last run started (``ramp_waits`` waits after
    ``go``, if starting keeps up) and lasts ``window`` s; the first run started at 0
    takes at least ``steps`` waits.  The ramp again and two steps are the slack for
    starts that lag (a lagging process also steps slower: the runs only end later).
    """
    needed = (2 * ramp_waits + 1) * latency + window
    return math.ceil(needed / latency - 1e-9) + 2


def arm_figures(windows: list[dict[str, Any]], latency: float) -> dict[str, Any]:
    """Steps/s of processes measured over their own (overlapping) windows, summed.

    ``windows``: each process's ``{"steps", "seconds", "cpu", "runs"}``.  The ideal
    is every run stepping once per model wait.
    """
    rate = sum(w["steps"] / w["seconds"] for w in windows)
    runs = sum(w["runs"] for w in windows)
    steps = sum(w["steps"] for w in windows)
    ideal = runs / latency
    cpu = sum(w["cpu"] for w in windows)
    return {
        "runs": runs, "steps": steps, "steps_per_s": rate, "ideal_steps_per_s": ideal,
        "ratio": rate / ideal if ideal else None,
        "client_cpu_us_per_step": 1e6 * cpu / steps if steps else None,
        "client_cores": sum(w["cpu"] / w["seconds"] for w in windows),
    }


# -- the worker processes ------------------------------------------------------------------


class Child:
    """A ``bench.capacity_child`` process, its events read line by line."""

    def __init__(self, url: str, name: str, runs: int, first: int, steps: int,
                 latency: float, ramp: float) -> None:
        env = dict(os.environ)
        env.update(
            TICKETIQ_DATABASE_URL=url,
            TICKETIQ_SEAL_KEYS=f"{SEAL_KEY_ID}:{base64.b64encode(SEAL_KEY).decode()}",
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        )
        self.err: IO[str] = tempfile.TemporaryFile("w+")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "bench.capacity_child", "--process-id", name,
             "--runs", str(runs), "--first", str(first), "--steps", str(steps),
             "--latency", str(latency), "--ramp", str(ramp)],
            env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.err, text=True)

    def send(self, word: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(word + "\n")
        self.popen.stdin.flush()

    async def expect(self, kind: str, seconds: float) -> dict[str, Any]:
        assert self.popen.stdout is not None
        while True:
            text = await asyncio.wait_for(asyncio.to_thread(self.popen.stdout.readline), seconds)
            if not text:
                self.err.seek(0)
                tail = self.err.read()[-2000:]
                raise RuntimeError(f"capacity child exited before {kind!r}: {tail}")
            item = json.loads(text)
            if item.get("event") == kind:
                return dict(item)

    def close(self) -> None:
        if self.popen.poll() is None:
            assert self.popen.stdin is not None
            self.popen.stdin.close()
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.err.close()


async def _arm(bdb: BenchDB, processes: int, per: int, latency: float, window: float,
               first: int) -> dict[str, Any]:
    steps = steps_per_run(latency, window)
    ramp = RAMP_WAITS * latency
    children = [Child(bdb.url, f"cap-{processes}-{i}", per, first + i * per, steps,
                      latency, ramp) for i in range(processes)]
    meter = _Meter(bdb.url)
    try:
        ready = [await c.expect("ready", 60) for c in children]
        for c in children:
            c.send("go")
        steady = [await c.expect("steady", 60 + 10 * ramp) for c in children]
        meter.refresh()
        meter.open()
        for c in children:
            c.send("open")
        peak, by_kind = 0, {}
        t0 = asyncio.get_running_loop().time()
        while (left := t0 + window - asyncio.get_running_loop().time()) > 0:
            await asyncio.sleep(min(0.25, left))
            by_kind = {k: int(n) for k, n in meter.conn.execute(BACKENDS_SQL).fetchall()}
            peak = max(peak, sum(by_kind.values()))
        for c in children:
            c.send("close")
        meter.close()
        server_seconds = asyncio.get_running_loop().time() - t0
        got = [await c.expect("window", 60) for c in children]
        done = [await c.expect("done", steps * latency * 4 + 60) for c in children]
    finally:
        meter.done()
        for c in children:
            c.close()
    fig = arm_figures([{**w, "runs": per} for w in got], latency)
    fig.update({
        "processes": processes, "runs_per_process": per, "latency_s": latency,
        "steps_per_run": steps, "ramp_s": ramp, "window_s": window,
        "started_s": [s["started_s"] for s in steady],
        "ended_in_window": sum(w["ended_in_window"] for w in got),
        "statuses": sorted({s for d in done for s in d["statuses"]}),
        "settings": ready[0]["settings"],
        "pool": [w["pool"] for w in got],
        "probe": [w["probe"] for w in got],
        "gc": [w["gc"] for w in got],
        "gc_enabled": all(w["gc_enabled"] for w in got),
        "peak_backends": peak, "backends_at_close": by_kind,
        "rss_kib": [{"ready": r["VmRSS"], "window": w["VmRSS"]}
                    for r, w in zip(ready, got, strict=True)],
        "rss_kib_per_run": sum(w["VmRSS"] - r["VmRSS"] for r, w in zip(ready, got, strict=True))
        / (per * processes),
    })
    if meter.cpu_ok and fig["steps"]:
        fig["server_cpu_us_per_step"] = 1e6 * meter.cpu / fig["steps"]
        fig["server_cores"] = meter.cpu / server_seconds
        fig["steps_per_s_per_server_core"] = fig["steps"] / meter.cpu
    return fig


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"target_ratio": TARGET_RATIO, "group_commit": "worker default",
                           "arms": {}}
    first = 0
    for processes in sizes.cap_processes:
        fig = await _arm(bdb, processes, sizes.cap_runs, sizes.cap_latency, sizes.cap_window,
                         first)
        first += processes * sizes.cap_runs
        out["arms"][str(processes)] = fig
        pool = fig["pool"][0]
        log(f"  {processes} process(es), {fig['runs']:,} runs, {fig['latency_s']:g} s wait: "
            f"{fig['steps_per_s']:,.0f} steps/s of {fig['ideal_steps_per_s']:,.0f} "
            f"({fig['ratio']:.3f}); client {fig['client_cpu_us_per_step']:.0f} us/step "
            f"({fig['client_cores']:.2f} cores), server "
            f"{fig.get('server_cpu_us_per_step', float('nan')):.0f} us/step; pool peak "
            f"{pool['peak_in_use']}/{pool['max_size']} in use, "
            f"{pool['wait_ms_per_request']:.2f} ms wait/request; {fig['peak_backends']} "
            f"backends; RSS {fig['rss_kib_per_run']:.1f} KiB/run; "
            f"{fig['ended_in_window']} ended in window")
        for probe in ("p50", "p95"):
            log(f"    {probe} ms: " + ", ".join(
                f"{k} {p[k][probe]:.1f}" for p in fig["probe"][:1] for k in (
                    "step_over_ms", "checkpoint_ms", "statement_ms", "ready_ms", "loop_lag_ms",
                    "renew_ms")
                if p[k]["n"]) + f"; group size {fig['probe'][0]['group_size'][probe]}")
        log(f"    full collections in the window: {fig['gc'][0]}")
    return out


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    out = []
    for key, fig in res["arms"].items():
        ratio = fig["ratio"]
        where = "one process" if key == "1" else f"{key} processes"
        clean = "" if not fig["ended_in_window"] else f"; {fig['ended_in_window']} ended early"
        clean += "" if fig["gc_enabled"] else "; GC off (a diagnosis)"
        out.append(_row(
            "14", f"{fig['runs']:,} runs at once ({where}), {fig['latency_s']:g} s model wait: "
            "steps/s vs ideal", f"{_f(fig['steps_per_s'], 0)} steps/s ({ratio:.3f})",
            f"ideal {_f(fig['ideal_steps_per_s'], 0)}{clean}", f">= {res['target_ratio']}",
            OK if ratio >= res["target_ratio"] else MISS, f"capacity.{key}.ratio", ratio))
        server = fig.get("server_cpu_us_per_step")
        out.append(_row(
            "14", f"  {where}: client CPU per step (server)",
            f"{_f(fig['client_cpu_us_per_step'], 0)} us ({_f(server, 0)} us)",
            f"{fig['client_cores']:.2f} client cores", "", INFO,
            f"capacity.{key}.client_cpu_us", fig["client_cpu_us_per_step"]))
        pools = fig["pool"]
        out.append(_row(
            "14", f"  {where}: pool connections in use, peak / size",
            " + ".join(f"{p['peak_in_use']}/{p['max_size']}" for p in pools),
            f"{fig['peak_backends']} backends; wait "
            + ", ".join(f"{p['wait_ms_per_request']:.2f}" for p in pools) + " ms/request",
            "", INFO, f"capacity.{key}.pool_peak", max(p["peak_in_use"] for p in pools)))
        probe = fig["probe"][0]
        renew = probe["renew_ms"]
        out.append(_row(
            "14", f"  {where}: a step's time beyond the wait, mean (checkpoint)",
            f"{_f(probe['step_over_ms']['mean'], 1)} ms ({_f(probe['checkpoint_ms']['mean'], 1)}"
            " ms)", f"renewal of {fig['runs_per_process']:,} leases {_f(renew['p50'], 0)} ms"
            f" p50; GC {fig['gc'][0]['pause_s']:.2f} s", "", INFO,
            f"capacity.{key}.step_over_ms", probe["step_over_ms"]["mean"]))
        out.append(_row(
            "14", f"  {where}: resident memory per run (VmRSS)",
            f"{fig['rss_kib_per_run']:.1f} KiB",
            ", ".join(f"{r['window'] / 1024:.0f} MiB" for r in fig["rss_kib"]), "", INFO,
            f"capacity.{key}.rss_kib_per_run", fig["rss_kib_per_run"]))
    return out
