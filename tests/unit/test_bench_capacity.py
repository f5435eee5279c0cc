"""Bench section 14's window arithmetic: when runs start, how long they run, the rates."""

from __future__ import annotations

import pytest

from bench.capacity import arm_figures, launch_at, rows, steps_per_run


def test_runs_start_evenly_over_the_ramp() -> None:
    starts = [launch_at(i, 4, 2.0) for i in range(4)]
    assert starts == [0.0, 0.5, 1.0, 1.5]
    assert launch_at(0, 0, 2.0) == 0.0


@pytest.mark.parametrize(("latency", "window"), [(1.0, 20.0), (0.2, 1.0), (0.3, 2.5)])
def test_no_run_ends_before_the_window_closes(latency: float, window: float) -> None:
    steps = steps_per_run(latency, window, ramp_waits=2)
    # The first run (started at 0) ends after ``steps`` waits at the soonest; the window
    # closes one wait after the last start (2 waits) plus ``window``.
    closes = 2 * latency + latency + window
    assert steps * latency > closes
    # ... with slack for a lagging start, but not runs twice as long as needed.
    assert steps * latency < 2 * closes + 4 * latency


def test_the_full_size_steps() -> None:
    assert steps_per_run(1.0, 20.0) == 27


def test_rates_are_summed_over_each_process_window() -> None:
    fig = arm_figures([
        {"steps": 1800, "seconds": 1.0, "cpu": 0.36, "runs": 2000},
        {"steps": 3800, "seconds": 2.0, "cpu": 0.38, "runs": 2000},
    ], latency=1.0)
    assert fig["steps_per_s"] == pytest.approx(1800 + 1900)
    assert fig["ideal_steps_per_s"] == 4000
    assert fig["ratio"] == pytest.approx(3700 / 4000)
    assert fig["client_cpu_us_per_step"] == pytest.approx(1e6 * 0.74 / 5600)
    assert fig["client_cores"] == pytest.approx(0.36 + 0.19)
    assert fig["steps"] == 5600 and fig["runs"] == 4000


def _arm(ratio: float) -> dict[str, object]:
    summary = {"n": 1, "p50": 5.0, "p95": 9.0, "max": 9.0, "mean": 6.0}
    return {
        "runs": 2000, "runs_per_process": 2000, "latency_s": 1.0, "ratio": ratio,
        "steps_per_s": 2000 * ratio, "ideal_steps_per_s": 2000, "ended_in_window": 0,
        "gc_enabled": True, "client_cpu_us_per_step": 250.0, "client_cores": 0.5,
        "server_cpu_us_per_step": 140.0, "peak_backends": 20, "rss_kib_per_run": 55.0,
        "pool": [{"peak_in_use": 16, "max_size": 16, "wait_ms_per_request": 4.8}],
        "probe": [{"step_over_ms": summary, "checkpoint_ms": summary, "renew_ms": summary}],
        "gc": [{"pause_s": 1.5}], "rss_kib": [{"window": 150_000}],
    }


@pytest.mark.parametrize(("ratio", "verdict"), [(0.966, "ok"), (0.9, "ok"), (0.89, "MISS")])
def test_the_row_holds_steps_per_second_to_nine_tenths_of_the_ideal(
        ratio: float, verdict: str) -> None:
    table = rows({"target_ratio": 0.9, "arms": {"1": _arm(ratio)}})
    assert table[0]["verdict"] == verdict and table[0]["key"] == "capacity.1.ratio"
    assert all(row["verdict"] == "-" for row in table[1:])  # the others inform
