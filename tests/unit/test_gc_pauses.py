"""The collector's pause recorder (runtime.gc_pauses.GcPauses): per generation, in all."""

from __future__ import annotations

import gc

import pytest

from ticketiq_pg.runtime.gc_pauses import GcPauses


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_pause_is_counted_in_its_generation_and_in_all() -> None:
    clock = Clock()
    pauses = GcPauses(clock)
    for gen, took in ((0, 0.001), (0, 0.003), (1, 0.01), (2, 0.5), (2, 0.25)):
        pauses("start", {"generation": gen})
        clock.now += took
        pauses("stop", {"generation": gen, "collected": 0, "uncollectable": 0})
        clock.now += 1.0  # time between collections is no pause
    fig = pauses.figures()
    assert fig["pauses"] == 5
    assert fig["full_collections"] == 2
    assert abs(fig["pause_s"] - 0.764) < 1e-9
    assert fig["longest_s"] == 0.5
    assert fig["by_generation"]["0"] == {"pauses": 2, "pause_s": 0.004, "longest_s": 0.003}
    assert fig["by_generation"]["1"] == {"pauses": 1, "pause_s": 0.01, "longest_s": 0.01}
    assert fig["by_generation"]["2"]["pauses"] == 2


def test_it_hooks_the_collector_once_and_unhooks() -> None:
    pauses = GcPauses().start()
    try:
        pauses.start()
        assert gc.callbacks.count(pauses) == 1
        gc.collect()
        assert pauses.figures()["full_collections"] >= 1
    finally:
        pauses.stop()
    assert pauses not in gc.callbacks
    before = pauses.figures()["pauses"]
    gc.collect()
    assert pauses.figures()["pauses"] == before


def test_settling_freezes_once_and_only_raises_the_thresholds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ticketiq_pg.runtime import gc_pauses

    before = gc.get_threshold()
    monkeypatch.setattr(gc_pauses, "_settled", False)
    monkeypatch.setattr(gc, "freeze", lambda: None)  # the test process's objects stay collectable
    try:
        gc.set_threshold(700, 50, 10)
        assert gc_pauses.settle_collector(young=100_000, middle=20)
        assert gc.get_threshold() == (100_000, 50, 10)  # the middle one was higher: kept
        gc.set_threshold(700, 10, 10)
        assert not gc_pauses.settle_collector()  # once per process
        assert gc.get_threshold() == (700, 10, 10)
        monkeypatch.setattr(gc_pauses, "_settled", False)
        gc.disable()
        assert not gc_pauses.settle_collector()  # an app that turned it off keeps it off
    finally:
        gc.enable()
        gc.set_threshold(*before)
