"""``ticketiq-pg list-runs``, ``stop-runs``, ``restart`` and ``fork`` (issue 42): the
operator's acts on runs as a whole, each one SQL function through the driver."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid

import psycopg
import pytest
from helpers import start
from test_front_manage import failed, written

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.ops.cli import main

KEYS = "k1:" + base64.b64encode(b"k" * 32).decode()  # test_front_manage's SEALER


def setup(db_url: str) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID]:
    async def make() -> tuple[uuid.UUID, uuid.UUID, uuid.UUID]:
        db = await TicketIQ.connect(db_url)
        try:
            gone = await failed(db)
            source = await written(db, owner="bob")
            cron = (await start(db, owner="bob", entry_point="cron")).run_id
            return gone, source, cron
        finally:
            await db.close()
    return asyncio.run(make())


def out(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def test_the_operator_lists_stops_restarts_and_forks_runs(
        db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    gone, source, cron = setup(db_url)
    url = ["--database-url", db_url, "--json"]
    assert main(["list-runs", *url, "--status", "failed"]) == 0
    assert [r["run_id"] for r in out(capsys)["runs"]] == [str(gone)]  # type: ignore[index]
    assert main(["list-runs", *url, "--owner", "bob", "--limit", "1"]) == 0
    page = out(capsys)
    assert [r["run_id"] for r in page["runs"]] == [str(cron)] and page["next"]  # type: ignore[index]
    assert main(["list-runs", *url, "--owner", "bob", "--after", page["next"]]) == 0  # type: ignore[index]
    assert [r["run_id"] for r in out(capsys)["runs"]] == [str(source)]  # type: ignore[index]

    with pytest.raises(SystemExit):
        main(["stop-runs", *url])  # no filter: nothing asked
    assert main(["stop-runs", *url, "--kind", "cron", "--actor", "dana"]) == 0
    assert [r["run_id"] for r in out(capsys)] == [str(cron)]  # type: ignore[union-attr]

    assert main(["restart", str(gone), *url, "--actor", "dana", "--reason", "back"]) == 0
    assert out(capsys)["status"] == "claimed"  # type: ignore[index]
    assert main(["restart", str(gone), *url]) == 1, "claimed now: not restarted twice"
    assert "ticketiq-pg:" in capsys.readouterr().err

    monkeypatch.delenv("TICKETIQ_SEAL_KEYS", raising=False)
    assert main(["fork", str(source), "--step", "1", *url]) == 1  # no keys: nothing written
    monkeypatch.setenv("TICKETIQ_SEAL_KEYS", KEYS)
    assert main(["fork", str(source), "--step", "2", *url, "--input", '{"ticket": 9}']) == 0
    forked = out(capsys)
    assert forked["created"] and forked["step"] == 2  # type: ignore[index]
    with psycopg.connect(db_url) as conn:
        row = conn.execute("select owner::text, input, status::text from ticketiq.runs"
                           " where run_id = %s", (forked["run_id"],)).fetchone()  # type: ignore[index]
    assert row == ("bob", {"ticket": 9}, "claimed")
    other = "k1:" + base64.b64encode(b"x" * 32).decode()
    monkeypatch.setenv("TICKETIQ_SEAL_KEYS", other)
    assert main(["fork", str(source), "--step", "2", *url]) == 1, "a source that does not verify"
