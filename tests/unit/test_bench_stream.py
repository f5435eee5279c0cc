"""Bench section 17 (the event stream): the stamps the model streams, and the rows."""

from __future__ import annotations

import asyncio
import uuid

from bench import stream
from ticketiq_pg.agent import StepRequest


def request(on_text: object) -> StepRequest:
    return StepRequest(run_id=uuid.uuid4(), step=1, input={"steps": 2}, conversation=[],
                       on_text=on_text)  # type: ignore[arg-type]


def test_each_piece_streamed_carries_its_stamp_and_the_text_is_the_pieces() -> None:
    pieces: list[str] = []
    made = asyncio.run(stream.Streamer(gap=0).step(request(pieces.append)))
    stamps = [int(s) for s in stream.STAMP.findall(made.text)]
    assert len(pieces) == len(stamps) == stream.PIECES
    assert "".join(pieces) == made.text and stamps == sorted(stamps) and stamps[0] > 0
    # Nobody listening: the same length of text, no stamps taken.
    quiet = asyncio.run(stream.Streamer(gap=0).step(request(None)))
    assert len(quiet.text) == len(made.text)
    assert [c.tool for c in made.calls] == [c.tool for c in quiet.calls] == ["kb.search"]


def test_the_rows_show_latency_and_each_levels_cost() -> None:
    arm = {"statements_per_step": 2.0, "wal_bytes_per_step": 4000.0,
           "notify_statements_per_step": 0.5}
    res = {"latency": {"0.05": {"p50_ms": 30.0, "p99_ms": 55.0},
                       "0.0": {"p50_ms": 1.0, "p99_ms": 3.0}},
           "cost": {"1": {"off": arm, "always": {**arm, "wal_bytes_per_step": 4100.0}}},
           "durable": {"rows_per_step": 1.2, "bytes_per_step": 250.0, "bytes_per_row": 208.0}}
    rows = stream.rows(res)
    assert rows[0]["measured"] == "30.0 / 55.0 ms" and rows[0]["value"] == 55.0
    assert "4000 off" in rows[1]["measured"] and "4100 always" in rows[1]["measured"]
    assert rows[1]["key"] == "stream.wal_bytes_per_step_1_always"
    assert rows[2]["measured"] == "1.20 rows, 250 B"
