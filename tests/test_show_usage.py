"""``ticketiq-pg show RUN`` shows the tokens each model step cost, and their sums per run.

The checkpoints are written through the driver directly, each body carrying the
``"usage"`` the runner stores from its step's ``ModelStep`` (with ``"request_id"``);
the final step's usage rides in the sealed answer's body.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import body, call, start

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.ops.cli import main


def shown(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


async def test_show_gives_usage_per_step_and_per_run(
    db_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    async with await TicketIQ.connect(db_url, min_size=1, max_size=2) as tiq:
        run = await start(tiq, holder="p1")
        one = body(call("call_AAAAAAAAAAAAAAAAAAAAAAAA", "read", tool="jira.get_issue"))
        one["usage"] = {"input_tokens": 120, "output_tokens": 30, "cached_tokens": 64,
                        "request_id": "req_first"}
        two = body(call("call_BBBBBBBBBBBBBBBBBBBBBBBB", "read", tool="jira.get_issue"))
        two["usage"] = {"input_tokens": 200, "output_tokens": 10, "request_id": "req_second"}
        await tiq.write_checkpoint(run.run_id, 1, 1, one, "s1", "key-a")
        await tiq.write_checkpoint(run.run_id, 1, 2, two, "s2", "key-a")
        await tiq.seal_answer(run.run_id, 1, 3, {
            "text": "done", "step": 3,
            "usage": {"input_tokens": 260, "output_tokens": 5, "request_id": "req_third"}},
            "aseal", "key-a", 3600)
        bare = await start(tiq, holder="p1")
        await tiq.write_checkpoint(bare.run_id, 1, 1, body(call("call_x1y2z3w4v5u6", "read")),
                                   "s", "key-a")

    report = json.loads(shown(capsys, "show", str(run.run_id), "--database-url", db_url,
                              "--json"))
    assert report["run"]["usage"] == {
        "steps": [
            {"step": 1, "request_id": "req_first", "input_tokens": 120, "output_tokens": 30,
             "cached_tokens": 64},
            {"step": 2, "request_id": "req_second", "input_tokens": 200, "output_tokens": 10},
            {"step": 3, "request_id": "req_third", "input_tokens": 260, "output_tokens": 5},
        ],
        "total": {"input_tokens": 580, "output_tokens": 45, "cached_tokens": 64, "steps": 3},
    }
    assert [c["usage"]["request_id"] for c in report["checkpoints"]] == [
        "req_first", "req_second"]
    text = shown(capsys, "show", str(run.run_id), "--database-url", db_url)
    assert "usage: cached_tokens 64, input_tokens 580, output_tokens 45 over 3 model steps" in text
    assert "req_second" in text

    # a run whose steps reported nothing: empty, and no usage section
    plain: Any = json.loads(shown(capsys, "show", str(bare.run_id), "--database-url", db_url,
                                  "--json"))
    assert plain["run"]["usage"] == {"steps": [], "total": {}}
    assert "usage:" not in shown(capsys, "show", str(bare.run_id), "--database-url", db_url)
