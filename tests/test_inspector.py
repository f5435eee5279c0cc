"""The inspector: an admin's ad hoc call of one of the app's tools (runtime/inspector.py).

From the command line (``ticketiq-pg inspect``) through a running worker's front: the
triage example's tools and gates, the example's ticket service keeping its own record of
every request.  Two calls with the same arguments get two keys and land twice, both
audited with the person's identity; a call the gates refuse sends nothing and is
audited refused; a caller without the admin scope is refused.  In process, over a real
database: a write whose outcome is unknown is sent once and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from test_example_app import EXAMPLE, Example, comment_requests

from ticketiq_pg import INSPECTOR, RunInfo, ToolCall, Tools, Verdict, new_seal_key
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.inspector import Inspector, InspectorRefused, arguments_digest
from ticketiq_pg.testing import WorkerProcess, fresh_database, make_api_key

COMMENT = {"ticket_id": "T-1", "team": "support", "text": "Triage: P3, for support."}


def inspect(front: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ticketiq_pg.ops.cli", "inspect", *args, "--front", front,
         "--token", token, "--json"], capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")})


def audited(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    with psycopg.connect(url) as conn:
        return conn.execute("select event, actor, detail from ticketiq.audit "
                            "where event like 'inspector.%' order by audit_id").fetchall()


@pytest.mark.slow
def test_an_admin_calls_the_apps_tools_from_the_command_line(
        pg_server_url: str, tmp_path: Path) -> None:
    service = Example("", tmp_path)
    service.start_service()
    try:
        httpx.post(f"{service.service_url}/tickets", json={
            "id": "T-1", "title": "Export fails", "body": "An error."}).raise_for_status()
        with fresh_database(pg_server_url) as db:
            admin = make_api_key(db, "dana", scopes=["admin"])
            client = make_api_key(db, "triage-client")
            with WorkerProcess("app:app", db, seal_keys=new_seal_key(), app_dir=EXAMPLE,
                               http=True, log_dir=tmp_path,
                               env={"TRIAGE_SERVICE_URL": service.service_url,
                                    "TRIAGE_FROZEN_TICKETS": "T-1"}) as worker:
                assert worker.url is not None
                listed = inspect(worker.url, admin, "--list")
                assert listed.returncode == 0, listed.stderr
                assert {json.loads(line)["name"] for line in listed.stdout.splitlines()} == {
                    "tickets.get", "tickets.comment"}

                read = inspect(worker.url, admin, "tickets.get", "--arguments",
                               json.dumps({"ticket_id": "T-1"}))
                assert read.returncode == 0, read.stderr
                got = json.loads(read.stdout)
                assert (got["outcome"], got["result"]["title"]) == ("made", "Export fails")

                # T-1 is frozen: the example's gate refuses a comment on it.
                refused = inspect(worker.url, admin, "tickets.comment", "--arguments",
                                  json.dumps(COMMENT))
                assert refused.returncode == 1
                assert "frozen" in json.loads(refused.stdout)["detail"]
                assert comment_requests(service.requests(), "T-1") == []

                forbidden = inspect(worker.url, client, "tickets.get", "--arguments",
                                    json.dumps({"ticket_id": "T-1"}))
                assert forbidden.returncode == 1
                assert json.loads(forbidden.stdout)["status"] == 403
                unknown = inspect(worker.url, admin, "tickets.delete")
                assert json.loads(unknown.stdout)["status"] == 404
                invalid = inspect(worker.url, admin, "tickets.get", "--arguments", "{}")
                assert json.loads(invalid.stdout)["status"] == 422

            # Unfrozen: the same comment twice is two calls, two keys, two comments.
            with WorkerProcess("app:app", db, seal_keys=new_seal_key(), app_dir=EXAMPLE,
                               http=True, log_dir=tmp_path, name="second",
                               env={"TRIAGE_SERVICE_URL": service.service_url}) as worker:
                assert worker.url is not None
                made = [json.loads(inspect(worker.url, admin, "tickets.comment",
                                           "--arguments", json.dumps(COMMENT)).stdout)
                        for _ in range(2)]
            assert [m["outcome"] for m in made] == ["made", "made"]
            keys = [m["step_key"] for m in made]
            assert keys[0] != keys[1] and all(k.startswith("tiq1-adhoc-") for k in keys)
            landed = comment_requests(service.requests(), "T-1")
            assert [(r["idempotency_key"], r["effect"]) for r in landed] == [
                (keys[0], "created"), (keys[1], "created")]

            rows = audited(db)
            digest = arguments_digest(COMMENT)
            assert [(e, a, d["tool"], d["outcome"]) for e, a, d in rows] == [
                ("inspector.call", "dana", "tickets.get", "made"),
                ("inspector.call", "dana", "tickets.comment", "refused"),
                ("inspector.call_sent", "dana", "tickets.comment", "sent"),
                ("inspector.call", "dana", "tickets.comment", "made"),
                ("inspector.call_sent", "dana", "tickets.comment", "sent"),
                ("inspector.call", "dana", "tickets.comment", "made")]
            assert [d["key"] for e, _, d in rows if e == "inspector.call"][2:] == keys
            assert all(d["arguments_digest"] == digest for _, _, d in rows[1:])
            assert all("text" not in json.dumps(d) for _, _, d in rows)  # a digest, not them
    finally:
        service.close()


class Gate:
    """Records what it was shown; refuses a call whose arguments say so."""

    def __init__(self) -> None:
        self.seen: list[RunInfo] = []

    async def check_run(self, run: RunInfo) -> Verdict:
        self.seen.append(run)
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        return Verdict.hold("held") if call.arguments.get("hold") else Verdict.allow()


async def test_a_write_of_unknown_outcome_is_sent_once_and_says_so(db_url: str) -> None:
    sent: list[str | None] = []
    tools = Tools()

    @tools.write("vendor.post", takes_key=True, dedupe_window=60.0)
    async def post(call: Any) -> dict[str, Any]:
        sent.append(call.step_key)
        raise TimeoutError("the vendor did not answer")

    gate = Gate()
    db = await TicketIQ.connect(db_url)
    try:
        inspector = Inspector(db, tools, gate)
        made = await inspector.call("dana", "vendor.post", {"n": 1})
        assert made.outcome == "unknown" and made.result["outcome"] == "unknown"
        assert made.result["sent_again"] is False
        assert sent == [made.step_key]  # once: a write of the inspector is never retried
        (seen,) = gate.seen
        assert (seen.channel, seen.entry_point, seen.owner, seen.run_as) == (
            INSPECTOR, INSPECTOR, "dana", "dana")
        with pytest.raises(InspectorRefused) as held:
            await inspector.call("dana", "vendor.post", {"hold": True})
        assert held.value.status == 403 and "never held for approval" in str(held.value)
        assert len(sent) == 1
    finally:
        await db.close()
    rows = audited(db_url)
    assert [(e, d["outcome"]) for e, _, d in rows] == [
        ("inspector.call_sent", "sent"), ("inspector.call", "unknown"),
        ("inspector.call", "refused")]
