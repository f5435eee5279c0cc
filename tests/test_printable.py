"""ticketiq_pg.printable: stored text reaches a person's terminal without its control
characters (issue 46, finding 12): the CLI's views and lines, and the text log format."""

from __future__ import annotations

import logging

import pytest
from helpers import body, call, start

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.observe.logs import TextFormatter
from ticketiq_pg.ops.cli import main
from ticketiq_pg.printable import printable

ESC_NAME = "triage\x1b[2J\x1b]0;owned\x07\u202eevil"


def test_printable_escapes_controls_and_keeps_text() -> None:
    assert printable("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert printable("a\x1b[31mred\r\u202e") == "a\\x1b[31mred\\x0d\\u202e"
    assert printable("two\nlines\tok") == "two\nlines\tok"
    assert printable("two\nlines", keep_lines=False) == "two\\x0alines"


async def test_show_and_runs_neutralise_a_stored_escape(
    db_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    async with await TicketIQ.connect(db_url, min_size=1, max_size=2) as tiq:
        run = await start(tiq, holder="p1", entry_point=ESC_NAME, owner=ESC_NAME)
        await tiq.write_checkpoint(run.run_id, 1, 1, body(call("c1", "read", tool=ESC_NAME)),
                                   "s1", "key-a")
        await tiq.fail_run(run.run_id, 1, f"the model said {ESC_NAME}")
    for argv in (["show", str(run.run_id)], ["runs"], ["status"], ["audit"]):
        assert main([*argv, "--database-url", db_url]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, argv
    assert main(["show", str(run.run_id), "--database-url", db_url]) == 0
    assert "\\x1b[2J" in capsys.readouterr().out  # shown, as its escape


def test_the_text_log_format_neutralises_a_stored_escape() -> None:
    record = logging.LogRecord("ticketiq_pg.runtime", logging.WARNING, __file__, 1,
                               "run failed: %s", (ESC_NAME,), None)
    line = TextFormatter("%(levelname)s %(message)s").format(record)
    assert line == "WARNING run failed: triage\\x1b[2J\\x1b]0;owned\\x07\\u202eevil"
