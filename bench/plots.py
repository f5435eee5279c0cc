"""PNG plots from the bench's figures (matplotlib, the optional ``bench`` extra).

``python -m bench.plots RESULTS.json DIR`` redraws them from a JSON report;
``python -m bench`` draws them itself when ``TICKETIQ_BENCH_PLOTS`` (or
``--plots``) names a folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def throughput(res: dict[str, Any], peer: dict[str, Any] | None, path: Path) -> None:
    plt = _pyplot()
    conc = list(res["by_concurrency"])
    by = res["by_concurrency"]
    bars = [
        ("ticketiq step (Runner, group commit)", "ticketiq_steps_per_s", "#3b6ea8"),
        ("the same without group commit", "ungrouped_steps_per_s", "#6f93c0"),
        ("checkpoints alone (no Runner)", "write_checkpoint_alone_steps_per_s", "#a9c4e4"),
        ("raw single-statement UPDATE", "raw_update_steps_per_s", "#b0b0b0"),
    ]
    bars = [b for b in bars if all(b[1] in by[c] for c in conc)]  # older JSON: no A0 arm
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    xs = range(len(conc))
    width = 0.8 / len(bars)
    for index, (label, key, color) in enumerate(bars):
        offset = (index - (len(bars) - 1) / 2) * width
        values = [by[c][key] for c in conc]
        ax.bar([x + offset for x in xs], values, width, label=label, color=color)
        if key != "raw_update_steps_per_s":
            for x, c, v in zip(xs, conc, values, strict=True):
                ax.annotate(f"{v / by[c]['raw_update_steps_per_s']:.2f}x", (x + offset, v),
                            ha="center", va="bottom", fontsize=8)
    if peer and "skipped" not in peer:
        c = str(peer["concurrency"])
        label = (f"{peer['runs']} runs x {peer['steps_per_run']} steps at {c}: "
                 f"ours {peer['ticketiq']['steps_per_s']:,.0f}, "
                 f"DBOS {peer['dbos']['steps_per_s']:,.0f} steps/s")
        ax.text(0.01, 0.98, label, transform=ax.transAxes, va="top", fontsize=8)
    ax.set_xticks(list(xs), [f"{c} run{'s' if c != '1' else ''} at once" for c in conc])
    ax.set_ylabel("durable steps per second")
    ax.set_title("Checkpoint step throughput vs a raw UPDATE of the same payload")
    ax.legend(loc="upper left", bbox_to_anchor=(0, 0.92), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def history(res: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    levels = res["levels"]
    xs = list(range(len(levels)))
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    for key, db_key, label in (
        ("sweep_idle_ms", "sweep_idle", "sweep_lapsed, nothing lapsed"),
        ("sweep_lapsed_ms", "sweep_lapsed", f"sweep_lapsed, {res['lapsed_per_sweep']} lapsed"),
        ("adopt_ms", "adopt", "adopt_run"),
    ):
        p50 = [level[key]["p50"] for level in levels]
        p95 = [level[key]["p95"] for level in levels]
        line = ax.errorbar(
            xs, p50, yerr=[[0] * len(p50), [b - a for a, b in zip(p50, p95, strict=True)]],
            marker="o", capsize=3, label=f"{label}: client p50, bar to p95")
        if all(level.get("db_mean_ms") for level in levels):
            ax.plot(xs, [level["db_mean_ms"][db_key] for level in levels], linestyle="--",
                    color=line.lines[0].get_color(), label=f"{label}: database mean")
    ax.set_xticks(xs, [f"{level['finished_runs']:,}" for level in levels])
    ax.set_xlim(-0.3, len(levels) - 0.7)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("finished runs kept in ticketiq.runs")
    ax.set_ylabel("ms per call")
    ax.set_title("Sweep and adopt cost versus history\n(client: round trip and durable commit)",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def wakeup(res: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    for ax, mode, title in ((axes[0], "notify", "through NOTIFY"),
                            (axes[1], "poll", f"poll only ({res['poll_interval_s']:g} s)")):
        samples = sorted(res[mode]["samples_ms"])
        if samples:
            ys = [(i + 1) / len(samples) for i in range(len(samples))]
            ax.step(samples, ys, where="post")
        lat = res[mode]["latency_ms"]
        ax.set_title(f"{title}: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms", fontsize=9)
        ax.set_xlabel("sweep claim -> resume started, ms")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of trials")
    fig.suptitle("Wake-up latency (cumulative distribution)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def recovery(res: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    resume = res.get("resume_samples_s") or {}
    fig, axes = plt.subplots(1, 2 if resume else 1, figsize=(11 if resume else 7, 3.8),
                             squeeze=False)
    ax = axes[0][0]
    ax.hist(res["samples_s"], bins=30, color="#3b6ea8")
    ax.axvline(res["target_s"], color="red", linestyle="--", label="target")
    ax.set_xlabel("kill -> trial end, s")
    ax.set_ylabel("trials")
    ax.set_title("Recovery time from the kill trials")
    ax.legend()
    if resume:
        ax = axes[0][1]
        colors = {"session": "#2f8f4e", "lease": "#c0782c"}
        for detection, values in sorted(resume.items()):
            label = "by session (liveness)" if detection == "session" else "by lease alone"
            ax.hist(values, bins=40, range=(0, max(12.0, max(values))), alpha=0.75,
                    color=colors.get(detection), label=f"{label}, n={len(values)}")
        ax.axvline(2.0, color="red", linestyle="--", label="p99 target (session)")
        ax.set_xlabel("kill -> taken-over run's next step written, s")
        ax.set_title("Resume time, both detections in one run")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def concurrency(res: dict[str, Any], path: Path) -> None:
    """Steps/s against runs at once, ours and the raw UPDATE, per model latency."""
    plt = _pyplot()
    latencies = list(res["by_latency"])
    fig, axes = plt.subplots(1, len(latencies), figsize=(5.2 * len(latencies), 4.0),
                             squeeze=False)
    for ax, latency in zip(axes[0], latencies, strict=True):
        by_c = res["by_latency"][latency]
        cs = [int(c) for c in by_c]
        ours = [by_c[str(c)]["ticketiq_steps_per_s"] for c in cs]
        raw = [by_c[str(c)]["raw_update_steps_per_s"] for c in cs]
        ax.plot(cs, raw, marker="s", color="#888888", label="raw single-statement UPDATE")
        ax.plot(cs, ours, marker="o", color="#3b6ea8", label="ticketiq step (Runner)")
        ax.plot(cs, [0.8 * r for r in raw], linestyle=":", color="red",
                label="target at 32 and 128: 0.8 of raw")
        for c, v, r in zip(cs, ours, raw, strict=True):
            ax.annotate(f"{v / r:.2f}", (c, v), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=8)
        two = [(int(c), f["two_processes_steps_per_s"]) for c, f in by_c.items()
               if "two_processes_steps_per_s" in f]
        if two:
            ax.plot([t[0] for t in two], [t[1] for t in two], marker="^", linestyle="none",
                    color="#2f8f4e", label="128 over 2 processes")
        ax.set_xscale("log", base=2)
        ax.set_xticks(cs, [str(c) for c in cs])
        ax.set_xlabel("runs (clients) at once")
        ax.set_ylabel("durable steps per second")
        ax.set_ylim(bottom=0)
        ax.set_title(f"model latency {latency} ms (labels: ratio to raw)", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Throughput against concurrency, side by side in one run", fontsize=10)
    _save(plt, fig, path)


def takeover(res: dict[str, Any], path: Path) -> None:
    """Kill -> next step written, per run, sorted: the thousand-run (or long mode's) takeover."""
    plt = _pyplot()
    t = res["takeover"]
    samples = sorted(t["samples_s"])
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    ax.plot(range(1, len(samples) + 1), samples, color="#3b6ea8",
            label="kill -> the run's next step written")
    if "target" not in t:  # the long mode has no time target (bench/takeover.py)
        ax.axhline(t["target_s"], color="red", linestyle="--",
                   label=f"target {t['target_s']:g} s")
    for key, label, color in (("claimed_s", "all claimed by", "#2f8f4e"),
                              ("adopted_s", "all adopted by", "#c0782c")):
        ax.axhline(t[key]["max"], color=color, linestyle=":",
                   label=f"{label} {t[key]['max']:.2f} s")
    ax.set_xlabel("runs, sorted by resume time")
    ax.set_ylabel("seconds after SIGKILL")
    ax.set_ylim(bottom=0)
    ax.set_title(f"SIGKILL of a process holding {t['runs']:,} runs: lost {t['lost']}, "
                 f"duplicates {t['duplicates']}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(results: dict[str, Any], folder: Path) -> list[Path]:
    """Draw every plot the results allow into ``folder``; return the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    sections = results["sections"]
    written: list[Path] = []

    def ok(name: str) -> dict[str, Any] | None:
        res = sections.get(name)
        return res if res and "error" not in res and "skipped" not in res else None

    if (res := ok("throughput")) is not None:
        throughput(res, ok("peer"), folder / "throughput.png")
        written.append(folder / "throughput.png")
    if (res := ok("concurrency")) is not None:
        concurrency(res, folder / "throughput_concurrency.png")
        written.append(folder / "throughput_concurrency.png")
    if (res := ok("takeover")) is not None:
        # takeover_1000.png, or takeover_10000.png in the long mode
        path = folder / f"takeover_{res['takeover']['runs']}.png"
        takeover(res, path)
        written.append(path)
    if (res := ok("history")) is not None:
        history(res, folder / "sweep_adopt_vs_history.png")
        written.append(folder / "sweep_adopt_vs_history.png")
    if (res := ok("wakeup")) is not None:
        wakeup(res, folder / "wakeup_latency.png")
        written.append(folder / "wakeup_latency.png")
    if (res := ok("recovery")) is not None and "samples_s" in res:
        recovery(res, folder / "recovery_time.png")
        written.append(folder / "recovery_time.png")
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m bench.plots RESULTS.json DIR")
    for written_path in draw(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])):
        print(written_path)
