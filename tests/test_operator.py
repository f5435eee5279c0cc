"""The operator's view: ``ticketiq-pg status``, ``runs``, ``show RUN`` and ``audit``.

A database is given runs in every state through the driver (a run in flight, one with a
call in doubt, one whose lease is about to lapse, one lost, swept, adopted and resumed to
its answer, a failed one, a released one, one suspended on an approval), processes, a
leader, an entry and jobs; the CLI's ``--json`` output is judged against what was made,
its filters one by one, the human tables by their alignment, and its errors by exit code
and message.  One test follows a real SIGKILLed worker process through the same commands,
one runs the documented psql queries as a login role granted only ticketiq_operator, and
one lists processes that ended (a session found ended by a watcher, a clean stop).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import (
    allow_fake_clock,
    body,
    call,
    db_now,
    fingerprint_sync,
    set_fake_now,
    start,
)
from procs import KILLED, Stack
from psycopg import sql
from psycopg.conninfo import make_conninfo

from ticketiq_pg.db.driver import KNOWN_SCHEMA_VERSIONS, TicketIQ
from ticketiq_pg.db.inspect import snapshot
from ticketiq_pg.ops import render
from ticketiq_pg.ops.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs" / "operators.md"


@dataclass
class World:
    url: str
    resumed: uuid.UUID  # lost, swept, adopted by p1, resumed and answered
    failed: uuid.UUID
    claimed: uuid.UUID  # released: waits for adoption
    running: uuid.UUID  # p1, lease for an hour
    doubtful: uuid.UUID  # p2, a write marked in doubt
    waiting: uuid.UUID  # suspended on an approval
    lapsing: uuid.UUID  # p2, a one-second lease
    approval_id: uuid.UUID
    job_running: uuid.UUID
    job_queued: uuid.UUID
    between: datetime  # after `claimed` was created, before `running`

    @property
    def newest_first(self) -> list[str]:
        made = [self.resumed, self.failed, self.claimed, self.running, self.doubtful,
                self.waiting, self.lapsing]
        return [str(r) for r in reversed(made)]


async def _build(url: str) -> World:
    tiq = await TicketIQ.connect(url, min_size=1, max_size=2)
    aconn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        await allow_fake_clock(aconn)
        await tiq.processes.register_process("p1", "host-a", 111)
        await tiq.processes.register_process("p2", "host-b", 222)
        await tiq.processes.claim_leader("sweeper", "p1", 600)

        # lost, swept, adopted by p1, its write settled on resume, answered and handed on
        resumed = await start(tiq, holder="p1", ttl=5)
        b = body(call("w1", "write", step_key="sk-r1"), call("r1", "read"), note="resumed")
        await tiq.write_checkpoint(resumed.run_id, 1, 1, b, "seal-r1", "key-a")
        await tiq.mark_in_doubt(resumed.run_id, 1, 1, "w1")
        await set_fake_now(aconn, resumed.lease_expires_at + timedelta(seconds=1))
        assert len(await tiq.processes.sweep_lapsed("leader", conn=aconn)) == 1
        adopted = await tiq.adopt_run("p1", 3600, resumed.run_id, conn=aconn)
        assert adopted is not None and adopted.epoch == 3
        await tiq.record_resume(
            resumed.run_id, 3,
            [{"call_id": "w1", "settlement": "resent_same_key", "outcome": {"ticket": 7}},
             {"call_id": "r1", "settlement": "redone", "outcome": {"rows": 1}}],
            conn=aconn,
        )
        await tiq.seal_answer(resumed.run_id, 3, 2, {"text": "fixed"}, "aseal", "key-b", 3600,
                              conn=aconn)
        await tiq.hand_on_answer(resumed.run_id, 3, conn=aconn)
        await set_fake_now(aconn, None)

        failed = await start(tiq, holder="p1")
        await tiq.fail_run(failed.run_id, 1, "tool exploded")

        claimed = await start(tiq, holder="p1")
        await tiq.write_checkpoint(claimed.run_id, 1, 1, body(call("w1")), "s", "key-a")
        await tiq.release_run(claimed.run_id, 1, "shutdown")

        between = await db_now(aconn)
        running = await start(tiq, holder="p1", ttl=3600)
        await tiq.write_checkpoint(running.run_id, 1, 1, body(call("w1")), "s", "key-a")

        doubtful = await start(tiq, holder="p2", ttl=3600, entry_point="billing.refund")
        await tiq.write_checkpoint(
            doubtful.run_id, 1, 1, body(call("w1", step_key="sk-d1", tool="billing.refund")),
            "s", "key-a",
        )
        await tiq.mark_in_doubt(doubtful.run_id, 1, 1, "w1")

        waiting = await start(tiq, holder="p1", ttl=3600, may_wait=True)
        await tiq.write_checkpoint(waiting.run_id, 1, 1, body(call("w-app")), "s", "key-a")
        approval = await tiq.waits.request_approval(waiting.run_id, 1, 1, "w-app",
                                              {"title": "close ticket"})
        await tiq.suspend_run(waiting.run_id, 1, f"approval:{approval.approval_id}")

        lapsing = await start(tiq, holder="p2", ttl=1.0, entry_point="billing.refund")

        await tiq.entries.accept_entry("webhook", "hook-1", {"body": {}}, owner="alice",
                               run_as="alice", channel="webhook")
        cur = await aconn.execute(
            "select job_id from ticketiq.enqueue_job('reindex', '{}', false)")
        job_queued = (await cur.fetchone())[0]  # type: ignore[index]
        await aconn.execute("select ticketiq.enqueue_job('source_sync', '{}', true)")
        cur = await aconn.execute(
            "select job_id from ticketiq.claim_job('p1', 2.0, array['source_sync'])")
        job_running = (await cur.fetchone())[0]  # type: ignore[index]
    finally:
        await aconn.close()
        await tiq.close()
    return World(url, resumed.run_id, failed.run_id, claimed.run_id, running.run_id,
                 doubtful.run_id, waiting.run_id, lapsing.run_id, approval.approval_id,
                 job_running, job_queued, between)


def _register_long_ago(url: str) -> None:
    """Process p-old, last seen two hours ago, its session closed."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select set_config('ticketiq.fake_now', "
                     "(clock_timestamp() - interval '2 hours')::text, false)")
        conn.execute("select ticketiq.register_process('p-old', 'host-c', 333)")
        pid = conn.info.backend_pid
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + 10
        while conn.execute("select count(*) from pg_stat_activity where pid = %s",
                           (pid,)).fetchone() != (0,):
            assert time.monotonic() < deadline, "a closed session did not go away"
            time.sleep(0.05)


@pytest.fixture
def world(db_url: str) -> World:
    built = asyncio.run(_build(db_url))
    _register_long_ago(db_url)
    return built


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def by_id(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {row[key]: row for row in rows}


def iso(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    assert value.tzinfo is not None and value.utcoffset() == timedelta(0), text
    return value


# -- status -----------------------------------------------------------------------------------


STATUS_KEYS = [
    "now", "schema_version", "processes", "leaders", "leases_lapsing", "runs_in_flight",
    "runs_suspended", "workflow_runs_unrunnable", "waiting_to_start", "vendors",
    "runs_retrying", "calls_in_doubt", "approvals_waiting", "entries_open", "jobs_open",
]


def test_status_json(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    report = cli_json(capsys, "status", "--database-url", world.url)
    assert list(report) == STATUS_KEYS
    assert report["runs_retrying"] == {"count": 0, "rows": []}  # (tests/test_model_errors.py)
    # (tests/test_workflow_deploys.py)
    assert report["workflow_runs_unrunnable"] == {"count": 0, "rows": []}
    # (tests/test_fair_shares.py, tests/test_vendor_limits.py)
    with psycopg.connect(world.url) as conn:
        pending = conn.execute("select owner, priority, count(*)::int from ticketiq.entries "
                               "where state = 'pending' group by 1, 2").fetchall()
    assert sorted((w["owner"], w["priority"], w["runs"]) for w in report["waiting_to_start"]) \
        == sorted(pending)
    assert report["vendors"] == []
    now = iso(report["now"])
    assert report["schema_version"] == max(KNOWN_SCHEMA_VERSIONS)

    procs = report["processes"]
    assert list(procs) == ["count", "hidden", "seen_within_s", "rows", "ended"]
    assert (procs["count"], procs["hidden"], procs["seen_within_s"]) == (2, 1, 300)
    assert procs["ended"] == {"count": 0, "rows": []}
    rows = by_id(procs["rows"], "process_id")
    assert set(rows) == {"p1", "p2"}  # p-old was last seen two hours ago
    assert (rows["p1"]["host"], rows["p1"]["os_pid"]) == ("host-a", 111)
    assert (rows["p1"]["runs_held"], rows["p1"]["jobs_held"], rows["p1"]["is_leader"]) == (
        1, 1, True)
    assert (rows["p2"]["runs_held"], rows["p2"]["jobs_held"], rows["p2"]["is_leader"]) == (
        2, 0, False)
    assert 0 <= rows["p1"]["last_seen_ago_s"] < 300
    assert iso(rows["p1"]["last_seen_at"]) <= now

    (leader,) = report["leaders"]
    assert (leader["name"], leader["holder"], leader["epoch"], leader["lapsed"]) == (
        "sweeper", "p1", 1, False)
    assert 500 < leader["expires_in_s"] <= 600
    assert iso(leader["expires_at"]) > now

    lapsing = report["leases_lapsing"]
    assert lapsing["within_s"] == 3
    assert lapsing["count"] == 2
    assert {(r["kind"], r["id"], r["holder"]) for r in lapsing["rows"]} == {
        ("run", str(world.lapsing), "p2"), ("job", str(world.job_running), "p1")}
    assert all(r["expires_in_s"] < 3 for r in lapsing["rows"])

    assert report["runs_in_flight"] == {"count": 4, "by_status": {"running": 3, "claimed": 1}}
    assert report["runs_suspended"] == 1

    doubt = report["calls_in_doubt"]
    assert doubt["count"] == 1
    (row,) = doubt["rows"]
    assert (row["run_id"], row["step"], row["call_id"], row["tool"], row["step_key"]) == (
        str(world.doubtful), 1, "w1", "billing.refund", "sk-d1")
    assert (row["marked_classification"], row["marked_epoch"], row["run_status"],
            row["lease_holder"]) == ("write", 1, "running", "p2")

    approvals = report["approvals_waiting"]
    assert approvals["count"] == 1
    (row,) = approvals["rows"]
    assert (row["approval_id"], row["run_id"], row["call_id"], row["summary"]) == (
        str(world.approval_id), str(world.waiting), "w-app", {"title": "close ticket"})

    entries = report["entries_open"]
    assert (entries["count"], entries["by_state"]) == (1, {"pending": 1, "running": 0})
    (row,) = entries["rows"]
    assert (row["kind"], row["sender_id"], row["state"], row["run_id"]) == (
        "webhook", "hook-1", "pending", None)

    jobs = report["jobs_open"]
    assert (jobs["count"], jobs["by_state"]) == (2, {"queued": 1, "running": 1})
    rows = by_id(jobs["rows"], "job_id")
    assert (rows[str(world.job_running)]["state"], rows[str(world.job_running)]["holder"]) == (
        "running", "p1")
    assert (rows[str(world.job_queued)]["kind"], rows[str(world.job_queued)]["holder"]) == (
        "reindex", None)


def test_status_options(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    wide = cli_json(capsys, "status", "--database-url", world.url, "--lapse-within", "7200")
    assert wide["leases_lapsing"]["count"] == 4
    assert {r["id"] for r in wide["leases_lapsing"]["rows"]} == {
        str(world.lapsing), str(world.running), str(world.doubtful), str(world.job_running)}
    # sorted by expiry: the one-second lease and the two-second job first
    assert [r["id"] for r in wide["leases_lapsing"]["rows"]][2:] == sorted(
        [str(world.running), str(world.doubtful)],
        key=lambda i: next(r["expires_at"] for r in wide["leases_lapsing"]["rows"]
                           if r["id"] == i))

    every = cli_json(capsys, "status", "--database-url", world.url, "--seen-within", "0")
    assert {p["process_id"] for p in every["processes"]["rows"]} == {"p1", "p2", "p-old"}
    old = by_id(every["processes"]["rows"], "process_id")["p-old"]
    assert old["last_seen_ago_s"] > 7000 and old["session_connected"] is False
    assert every["processes"]["hidden"] == 0

    # --limit cuts the rows of a section, never its count
    cut = cli_json(capsys, "status", "--database-url", world.url, "--limit", "1",
                   "--lapse-within", "7200")
    assert cut["leases_lapsing"]["count"] == 4 and len(cut["leases_lapsing"]["rows"]) == 1
    assert cut["jobs_open"]["count"] == 2 and len(cut["jobs_open"]["rows"]) == 1


def columns_of(header: str) -> dict[str, int]:
    """Where each column of a rendered table starts (columns are two spaces apart)."""
    return {m.group(0): m.start() for m in re.finditer(r"\S+(?: \S+)*", header)}


def value_at(line: str, start: int) -> str:
    return line[start:].split("  ")[0].strip()


def test_status_human(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "status", "--database-url", world.url)
    assert code == 0, err
    lines = out.splitlines()
    version = max(KNOWN_SCHEMA_VERSIONS)
    assert lines[0].startswith("database clock ") and f"schema version {version}" in lines[0]
    for heading in ("processes: 2, 1 more not seen for 5m00s", "processes ended within 5m00s: 0",
                    "sweep leader:",
                    "leases about to lapse (within 3s): 2", "calls in doubt: 1",
                    "approvals waiting: 1", "entries open: 1 (pending 1, running 0)",
                    "jobs open: 2 (queued 1, running 1)"):
        assert heading in lines, heading
    assert "runs in flight: 4 (running 3, claimed 1); suspended 1" in lines

    # the calls-in-doubt table: its values sit under their headers
    at = lines.index("calls in doubt: 1")
    header, rule, row = lines[at + 1], lines[at + 2], lines[at + 3]
    assert set(rule.strip()) == {"-", " "}
    cols = columns_of(header)
    assert value_at(row, cols["run"]) == str(world.doubtful)
    assert value_at(row, cols["call"]) == "w1"
    assert value_at(row, cols["tool"]) == "billing.refund"
    assert value_at(row, cols["holder"]) == "p2"
    step_end = cols["step"] + len("step")
    assert row[step_end - 1] == "1" and row[step_end - 2] == " "  # numbers right-aligned

    at = lines.index("sweep leader:")
    cols = columns_of(lines[at + 1])
    assert value_at(lines[at + 3], cols["holder"]) == "p1"
    assert re.search(r"in \d+m\d\ds$", lines[at + 3])


def _holding(url: str, process_id: str) -> psycopg.Connection[Any]:
    """A session that registered ``process_id`` and holds its liveness token."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("select ticketiq.register_process(%s, 'host-l', 444)", (process_id,))
    conn.execute("select * from ticketiq.hold_liveness(%s)", (process_id,))
    return conn


def _ended_long_ago(url: str) -> None:
    """Process long-gone: held its token and stopped cleanly two hours ago."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("update ticketiq.config set fake_clock_allowed = true")
        conn.execute("select set_config('ticketiq.fake_now', "
                     "(clock_timestamp() - interval '2 hours')::text, false)")
        conn.execute("select ticketiq.register_process('long-gone', 'host-c', 555)")
        conn.execute("select * from ticketiq.hold_liveness('long-gone')")
        assert conn.execute("select ticketiq.release_liveness('long-gone')").fetchone() == (
            True,)


def test_status_lists_processes_that_ended(db_url: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A process whose session a watcher found ended, and one that stopped cleanly, stay
    listed (with how they ended) for --seen-within after they are marked ended."""
    _ended_long_ago(db_url)
    watcher = _holding(db_url, "watcher")
    victim = _holding(db_url, "victim")
    clean = _holding(db_url, "clean")
    try:
        (session,) = {row[0] for row in watcher.execute(
            "select session from ticketiq.watch_processes('watcher')").fetchall()}
        victim.close()  # its session ends, and its token goes with it
        deadline = time.monotonic() + 10
        while watcher.execute(
            "select stopped_at is null from ticketiq.processes where process_id = 'victim'"
        ).fetchone() == (True,):
            assert time.monotonic() < deadline, "the watcher never found victim's session ended"
            time.sleep(0.05)
            watcher.execute("select * from ticketiq.watch_processes('watcher', %s, "
                            "array['victim'])", (session,))
        clean.execute("select ticketiq.release_liveness('clean')")

        report = cli_json(capsys, "status", "--database-url", db_url)
        procs = report["processes"]
        assert [p["process_id"] for p in procs["rows"]] == ["watcher"]
        ended = procs["ended"]
        assert ended["count"] == 2
        assert [p["process_id"] for p in ended["rows"]] == ["clean", "victim"]  # newest first
        rows = by_id(ended["rows"], "process_id")
        dead = rows["victim"]
        assert (dead["ended_how"], dead["ended_reason"], dead["noticed_by"]) == (
            "session_ended", "liveness session ended", "watcher")
        assert (dead["host"], dead["os_pid"], dead["runs_held"], dead["jobs_held"]) == (
            "host-l", 444, 0, 0)
        assert iso(dead["ended_at"]) <= iso(report["now"]) and 0 <= dead["ended_ago_s"] < 300
        assert (rows["clean"]["ended_how"], rows["clean"]["ended_reason"],
                rows["clean"]["noticed_by"]) == ("stopped", "stopped", None)

        every = cli_json(capsys, "status", "--database-url", db_url, "--seen-within", "0")
        assert every["processes"]["ended"]["count"] == 3
        old = by_id(every["processes"]["ended"]["rows"], "process_id")["long-gone"]
        assert (old["ended_how"], old["noticed_by"]) == ("stopped", None)
        assert old["ended_ago_s"] > 7000

        code, out, err = run_cli(capsys, "status", "--database-url", db_url)
        assert code == 0, err
        lines = out.splitlines()
        at = lines.index("processes ended within 5m00s: 2")
        cols = columns_of(lines[at + 1])
        shown = {value_at(line, cols["process"]): line for line in lines[at + 3: at + 5]}
        assert value_at(shown["victim"], cols["how"]) == "session_ended"
        assert value_at(shown["victim"], cols["noticed by"]) == "watcher"
        assert value_at(shown["clean"], cols["how"]) == "stopped"
        assert re.search(r"ago$", value_at(shown["victim"], cols["ended"]))
    finally:
        for conn in (watcher, victim, clean):
            conn.close()


# -- runs -------------------------------------------------------------------------------------


def run_ids(report: dict[str, Any]) -> list[str]:
    return [r["run_id"] for r in report["runs"]]


def test_runs_json_newest_first(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    report = cli_json(capsys, "runs", "--database-url", world.url)
    assert list(report) == ["now", "filters", "runs"]
    assert report["filters"] == {"status": None, "entry_point": None, "holder": None,
                                 "since": None, "limit": 50}
    assert run_ids(report) == world.newest_first
    rows = by_id(report["runs"], "run_id")
    resumed = rows[str(world.resumed)]
    assert (resumed["status"], resumed["epoch"], resumed["loss_count"], resumed["last_step"],
            resumed["lease_holder"], resumed["lease_expires_in_s"]) == (
        "completed", 3, 1, 2, None, None)
    assert iso(resumed["finished_at"]) >= iso(resumed["created_at"])
    assert rows[str(world.failed)]["failure_reason"] == "tool exploded"
    assert rows[str(world.waiting)]["wait_key"] == f"approval:{world.approval_id}"
    running = rows[str(world.running)]
    assert (running["status"], running["lease_holder"], running["entry_point"]) == (
        "running", "p1", "helpdesk.triage")
    assert 3500 < running["lease_expires_in_s"] <= 3600
    assert list(running) == [
        "run_id", "status", "entry_point", "owner", "run_as", "channel", "epoch", "lease_holder",
        "lease_expires_at", "loss_count", "last_step", "parent_run_id", "wait_key",
        "failure_reason", "created_at", "updated_at", "finished_at", "lease_expires_in_s",
    ]


def test_runs_filters(world: World, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKETIQ_DATABASE_URL", world.url)  # the default --database-url

    def ids(*argv: str) -> list[str]:
        return run_ids(cli_json(capsys, "runs", *argv))

    w = world
    assert ids("--status", "failed") == [str(w.failed)]
    assert ids("--status", "running", "--status", "claimed") == [
        str(w.lapsing), str(w.doubtful), str(w.running), str(w.claimed)]
    assert ids("--status", "suspended") == [str(w.waiting)]
    assert ids("--entry-point", "billing.refund") == [str(w.lapsing), str(w.doubtful)]
    assert ids("--holder", "p2") == [str(w.lapsing), str(w.doubtful)]
    assert ids("--holder", "p1", "--status", "running") == [str(w.running)]
    assert ids("--holder", "nobody") == []
    assert ids("--limit", "2") == world.newest_first[:2]
    assert ids("--since", w.between.isoformat()) == world.newest_first[:4]
    assert ids("--since", "1h") == world.newest_first
    assert ids("--since", "2999-01-01T00:00:00") == []
    report = cli_json(capsys, "runs", "--since", "90m", "--status", "failed")
    since = iso(report["filters"]["since"])
    assert timedelta(minutes=89) < iso(report["now"]) - since <= timedelta(minutes=90)
    assert report["filters"]["status"] == ["failed"]


def test_runs_human(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "runs", "--database-url", world.url)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "7 runs, newest first (limit 50)"
    cols = columns_of(lines[1])
    assert list(cols)[:3] == ["run", "status", "entry point"]
    body_lines = lines[3:]
    assert [value_at(line, cols["run"]) for line in body_lines] == world.newest_first
    statuses = {value_at(line, cols["run"]): value_at(line, cols["status"])
                for line in body_lines}
    assert statuses[str(world.failed)] == "failed"
    assert statuses[str(world.claimed)] == "claimed"
    assert statuses[str(world.waiting)] == "suspended"
    failed_line = next(line for line in body_lines if line.startswith(str(world.failed)))
    assert failed_line.endswith("tool exploded")


def test_runs_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--status", "lost"], ["--since", "yesterday"], ["--limit", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(["runs", "--database-url", "postgresql://unused", *argv])
        assert exc.value.code == 2, argv
    assert "not a time: 'yesterday'" in capsys.readouterr().err


# -- show RUN ---------------------------------------------------------------------------------


def test_show_json_of_a_resumed_run(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    report = cli_json(capsys, "show", str(world.resumed), "--database-url", world.url)
    assert list(report) == ["now", "run", "checkpoints", "calls", "approvals", "answer",
                            "entries", "children", "transcript", "audit", "workflow"]
    assert report["workflow"] is None  # an agent run
    run = report["run"]
    assert (run["run_id"], run["status"], run["epoch"], run["loss_count"], run["last_step"],
            run["claim_reason"]) == (str(world.resumed), "completed", 3, 1, 2, "lease_lapsed")

    (checkpoint,) = report["checkpoints"]
    assert (checkpoint["step"], checkpoint["epoch"], checkpoint["seal_key_id"],
            checkpoint["calls"], checkpoint["model_text"]) == (1, 1, "key-a", 2, "hello resumed")
    assert checkpoint["size_bytes"] > 100
    iso(checkpoint["written_at"])

    calls = {c["call_id"]: c for c in report["calls"]}
    assert list(calls) == ["w1", "r1"]
    w1 = calls["w1"]
    assert (w1["step"], w1["ordinal"], w1["tool"], w1["classification"], w1["step_key"]) == (
        1, 1, "crm.update", "write", "sk-r1")
    assert (w1["recorded"], w1["state"], w1["marked_classification"], w1["marked_epoch"]) == (
        True, "settled", "write", 1)
    assert (w1["settlement"], w1["finished_epoch"], w1["outcome"]) == (
        "resent_same_key", 3, {"ticket": 7})
    assert iso(w1["marked_at"]) < iso(w1["finished_at"])
    assert (calls["r1"]["classification"], calls["r1"]["ordinal"]) == ("read", 2)

    answer = report["answer"]
    assert (answer["step"], answer["epoch"], answer["seal_key_id"], answer["body"],
            answer["handed_on_epoch"]) == (2, 3, "key-b", {"text": "fixed"}, 3)
    assert iso(answer["retain_until"]) - iso(answer["sealed_at"]) == timedelta(hours=1)

    assert [t["kind"] for t in report["transcript"]] == ["step", "resumed", "answer"]
    assert report["transcript"][0]["body"]["text"] == "hello resumed"
    assert report["transcript"][1]["body"]["loss_count"] == 1

    events = [(a["event"], a["epoch"], a["actor"]) for a in report["audit"]]
    assert events == [
        ("agent.run.started", 1, "p1"),
        ("agent.run.lease_lapsed", 2, "leader"),
        ("agent.run.adopted", 3, "p1"),
        ("agent.run.crash_resumed", 3, "p1"),
        ("agent.run.answer_sealed", 3, "p1"),
        ("agent.run.completed", 3, "p1"),
    ]
    ids = [a["audit_id"] for a in report["audit"]]
    assert ids == sorted(ids)
    resume = next(a for a in report["audit"] if a["event"] == "agent.run.crash_resumed")
    assert resume["detail"]["settlements"][0]["settlement"] == "resent_same_key"
    assert report["approvals"] == [] and report["entries"] == [] and report["children"] == []


def test_show_json_of_runs_in_flight(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    doubtful = cli_json(capsys, "show", str(world.doubtful), "--database-url", world.url)
    run = doubtful["run"]
    assert (run["status"], run["lease_holder"], run["entry_point"]) == (
        "running", "p2", "billing.refund")
    assert 3500 < run["lease_expires_in_s"] <= 3600
    (w1,) = doubtful["calls"]
    assert (w1["state"], w1["step_key"], w1["marked_epoch"], w1["settlement"]) == (
        "in_doubt", "sk-d1", 1, None)
    assert doubtful["answer"] is None
    assert [t["kind"] for t in doubtful["transcript"]] == ["step"]

    waiting = cli_json(capsys, "show", str(world.waiting), "--database-url", world.url)
    assert (waiting["run"]["status"], waiting["run"]["wait_key"]) == (
        "suspended", f"approval:{world.approval_id}")
    (approval,) = waiting["approvals"]
    assert (approval["approval_id"], approval["call_id"], approval["state"],
            approval["summary"]) == (str(world.approval_id), "w-app", "waiting",
                                     {"title": "close ticket"})
    assert [c["approval_id"] for c in waiting["calls"]] == [str(world.approval_id)]
    assert [a["event"] for a in waiting["audit"]] == [
        "agent.run.started", "approval.requested", "agent.run.suspended"]


def test_show_human(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", str(world.resumed), "--database-url", world.url)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"run {world.resumed}: completed"
    assert re.search(r"^  losses +1$", out, re.M)
    assert re.search(r"^  claimed because +lease_lapsed$", out, re.M)
    for heading in ("checkpoints: 1", "calls: 2", "answer:", "transcript: 3", "audit: 6"):
        assert heading in lines, heading

    at = lines.index("calls: 2")
    cols = columns_of(lines[at + 1])
    w1 = lines[at + 3]
    assert value_at(w1, cols["call"]) == "w1"
    assert value_at(w1, cols["state"]) == "settled"
    assert value_at(w1, cols["settlement"]) == "resent_same_key"
    assert w1.rstrip().endswith("sk-r1")

    at = lines.index("transcript: 3")
    cols = columns_of(lines[at + 1])
    what = [value_at(line, cols["what"]) for line in lines[at + 3: at + 6]]
    assert what[0] == "hello resumed -> crm.update (resent_same_key), crm.update (read)"
    assert what[1] == "resumed from step 1 (run lost 1 times): w1 resent_same_key, r1 redone"
    assert what[2] == "fixed"


def test_show_says_who_lost_the_run_and_what_to_look_up(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 46, finding 17: the loss with the whole id of the process that lost it, and
    each call whose outcome is unknown with its tool and key."""
    code, out, err = run_cli(capsys, "show", str(world.resumed), "--database-url", world.url)
    assert code == 0, err
    lines = out.splitlines()
    at = lines.index("lost: 1")
    cols = columns_of(lines[at + 1])
    assert value_at(lines[at + 3], cols["lost by (process)"]) == "p1"
    assert value_at(lines[at + 3], cols["noticed by"]) == "lease_lapsed"
    calls = [{"step": 2, "call_id": "w9", "tool": "jira.comment", "step_key": "sk-w9",
              "settlement": "unknown"}, {"step": 2, "call_id": "r1", "tool": "crm.read",
                                         "step_key": None, "settlement": "redone"}]
    assert render._unknown_lines(calls)[2:] == ["  step 2 call w9: tool jira.comment, key sk-w9"]


def test_show_unknown_run_exits_1(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    missing = uuid.uuid4()
    code, out, err = run_cli(capsys, "show", str(missing), "--database-url", world.url)
    assert (code, out) == (1, "")
    assert err.strip() == f"ticketiq-pg: unknown run {missing}"
    code, out, err = run_cli(capsys, "show", str(missing), "--database-url", world.url,
                             "--json")
    assert (code, out) == (1, "")


def test_malformed_run_id_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["show", "not-a-uuid", "--database-url", "postgresql://unused"])
    assert exc.value.code == 2
    assert "argument RUN_ID: not a run id (a UUID): 'not-a-uuid'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--run", "1234", "--database-url", "postgresql://unused"])
    assert exc.value.code == 2


# -- audit ------------------------------------------------------------------------------------


def db_audit(url: str, where: str = "true", params: Any = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            f"select audit_id, event, run_id from ticketiq.audit where {where}"
            " order by audit_id desc", params).fetchall()


def test_audit_json(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    def rows(*argv: str) -> list[dict[str, Any]]:
        report = cli_json(capsys, "audit", "--database-url", world.url, "--limit", "1000",
                          *argv)
        assert list(report) == ["now", "filters", "audit"]
        return report["audit"]

    everything = rows()
    assert [(a["audit_id"], a["event"], a["run_id"] and uuid.UUID(a["run_id"]))
            for a in everything] == db_audit(world.url)
    assert list(everything[0]) == ["audit_id", "at", "event", "run_id", "epoch", "actor",
                                   "detail"]

    (resume,) = rows("--event", "agent.run.crash_resumed")
    assert (resume["run_id"], resume["epoch"]) == (str(world.resumed), 3)
    assert resume["detail"]["loss_count"] == 1

    agent = rows("--event", "agent.run.*")
    assert agent and all(a["event"].startswith("agent.run.") for a in agent)
    assert len(agent) == len(db_audit(world.url, "event like 'agent.run.%%'"))
    both = rows("--event", "leader.claimed", "--event", "agent.run.failed")
    assert {a["event"] for a in both} == {"leader.claimed", "agent.run.failed"}
    assert [a["run_id"] for a in both if a["event"] == "agent.run.failed"] == [str(world.failed)]
    assert rows("--event", "agent.run") == []  # exact unless it has a *

    mine = rows("--run", str(world.resumed))
    assert [a["audit_id"] for a in mine] == [
        r[0] for r in db_audit(world.url, "run_id = %s", (world.resumed,))]
    assert [a["event"] for a in mine][0] == "agent.run.completed"  # newest first
    assert rows("--run", str(world.resumed), "--event", "agent.run.adopted")[0]["actor"] == "p1"

    newest = cli_json(capsys, "audit", "--database-url", world.url, "--limit", "2")["audit"]
    assert [a["audit_id"] for a in newest] == [a["audit_id"] for a in everything[:2]]
    assert rows("--since", "2999-01-01T00:00:00Z") == []
    assert len(rows("--since", "1d")) == len(everything)
    later = rows("--since", world.between.isoformat())
    assert 0 < len(later) < len(everything)
    assert all(iso(a["at"]) >= world.between for a in later)


def test_audit_human(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "audit", "--database-url", world.url, "--run",
                             str(world.resumed))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "6 audit rows, newest first (limit 50)"
    cols = columns_of(lines[1])
    assert list(cols) == ["id", "at", "event", "run", "epoch", "actor", "detail"]
    events = [value_at(line, cols["event"]) for line in lines[3:]]
    assert events[0] == "agent.run.completed" and events[-1] == "agent.run.started"
    assert {value_at(line, cols["run"]) for line in lines[3:]} == {str(world.resumed)}


# -- read only, errors, roles -----------------------------------------------------------------


def test_commands_only_read(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    with psycopg.connect(world.url, autocommit=True) as conn:
        before = fingerprint_sync(conn)
    for argv in (["status"], ["runs"], ["show", str(world.resumed)], ["audit"]):
        for fmt in ([], ["--json"]):
            code, _, err = run_cli(capsys, *argv, "--database-url", world.url, *fmt)
            assert code == 0, err
    with psycopg.connect(world.url, autocommit=True) as conn:
        assert fingerprint_sync(conn) == before

    with snapshot(world.url) as conn:
        assert conn.execute("show transaction_read_only").fetchone() == {
            "transaction_read_only": "on"}
        assert conn.execute("show transaction_isolation").fetchone() == {
            "transaction_isolation": "repeatable read"}
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("insert into ticketiq.audit (at, event) values (now(), 'x')")


def test_no_schema_and_no_url(empty_db_url: str, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_cli(capsys, "status", "--database-url", empty_db_url)
    assert (code, out) == (1, "")
    assert "schema ticketiq is not installed" in err and "ticketiq-pg migrate" in err
    monkeypatch.delenv("TICKETIQ_DATABASE_URL", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["runs"])
    assert "TICKETIQ_DATABASE_URL" in str(exc.value.code)


@pytest.fixture
def operator_login(db_url: str, pg_server_url: str) -> Iterator[str]:
    """A uniquely named LOGIN role granted only ticketiq_operator; its conninfo."""
    role = f"tiq_ops_{secrets.token_hex(6)}"
    password = secrets.token_hex(16)
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("create role {} login password {}").format(
            sql.Identifier(role), sql.Literal(password)))
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(sql.SQL("grant ticketiq_operator to {}").format(sql.Identifier(role)))
        yield make_conninfo(db_url, user=role, password=password)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                          " where usename = %s", (role,))
            admin.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def documented_view_queries() -> list[str]:
    """The psql queries docs/operators.md tells an operator to type, on the views."""
    text = DOCS.read_text()
    blocks = re.findall(r"```sql\n(.*?)```", text, re.S)
    queries = [b.strip() for b in blocks
               if b.lstrip().lower().startswith("select") and "run_transcript" not in b]
    return queries


def test_operator_role_reads_the_views_not_the_tables(
    world: World, operator_login: str, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = documented_view_queries()
    assert len(queries) >= 7
    with psycopg.connect(operator_login, autocommit=True) as conn:
        for query in queries:
            conn.execute(query).fetchall()  # each documented query runs as the operator
        (n,) = conn.execute("select count(*) from ticketiq.calls_in_doubt").fetchone() or (0,)
        assert n == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select count(*) from ticketiq.runs")
    # the CLI reads tables: as the operator role it stops with a clear message
    code, out, err = run_cli(capsys, "status", "--database-url", operator_login)
    assert (code, out) == (1, "")
    assert "permission denied for table" in err and "schema's owner" in err


# -- a real worker, killed and resumed --------------------------------------------------------


def test_a_killed_worker_seen_through_the_cli(stack: Stack,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    victim = stack.spawn("--start", "1", "--exit-after", "1", "--seed", "8", "--steps", "2",
                         "--plan", "writes", "--process-id", "victim", faults="after_mark@1")
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr

    status = cli_json(capsys, "status", "--database-url", stack.db_url,
                      "--lapse-within", "3600")
    assert "victim" in {p["process_id"] for p in status["processes"]["rows"]}
    assert status["runs_in_flight"]["by_status"]["running"] == 1
    (doubt,) = status["calls_in_doubt"]["rows"]
    assert (doubt["run_id"], doubt["lease_holder"], doubt["step"]) == (run_id, "victim", 1)
    assert doubt["step_key"]
    assert [(r["kind"], r["id"], r["holder"]) for r in status["leases_lapsing"]["rows"]] == [
        ("run", run_id, "victim")]

    assert len(stack.sweep_as_if_later()) == 1
    survivor = stack.run("--exit-after", "1", "--process-id", "survivor")
    assert survivor.popen.returncode == 0, survivor.stderr

    shown = cli_json(capsys, "show", run_id, "--database-url", stack.db_url)
    assert (shown["run"]["status"], shown["run"]["loss_count"]) == ("completed", 1)
    assert {c["seal_key_id"] for c in shown["checkpoints"]} == {"k1"}
    doubted = next(c for c in shown["calls"] if c["call_id"] == doubt["call_id"])
    assert (doubted["state"], doubted["marked_epoch"]) == ("settled", 1)
    assert doubted["settlement"] in {"resent_same_key", "read_back", "coalesced", "unknown"}
    assert "resumed" in [t["kind"] for t in shown["transcript"]]
    assert shown["answer"]["handed_on_at"] is not None
    resumes = cli_json(capsys, "audit", "--database-url", stack.db_url, "--event",
                       "agent.run.crash_resumed")["audit"]
    assert [(a["run_id"], a["actor"]) for a in resumes] == [(run_id, "survivor")]
    after = cli_json(capsys, "status", "--database-url", stack.db_url)
    assert after["calls_in_doubt"]["count"] == 0
    assert after["runs_in_flight"]["count"] == 0
