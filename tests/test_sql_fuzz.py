"""Every SQL function, called past its documented limits by an application login.

docs/sql-api.md gives, per function, a ``Limits:`` block (each argument's rule) and a
``SQLSTATEs:`` line (every SQLSTATE it raises).  These tests read both from the page and
call every function granted to ``ticketiq_app`` through a LOGIN role granted it:

* every argument of every such function has a documented rule, every function its
  SQLSTATEs;
* each argument past each of its limits, the others valid, raises TQ004 (checked first)
  and leaves every table as it was (I15);
* hypothesis: random calls with at least one argument past its limit and the rest valid
  or random raise only the function's documented SQLSTATEs and change no table.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import body, call, fingerprint_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "sql-api.md"
SQLSTATE = re.compile(r"\b(TQ\d{3}|\d{2}[0-9A-Z]\d{2})\b")
#: Read-only functions without a limit to break: called with random arguments only.
READ_ONLY = {"get_answer", "get_approval", "get_entry", "get_job", "get_run", "now",
             "run_transcript", "run_events_after", "schema_version", "get_entry_by_run",
             "find_api_key", "list_api_keys", "revoke_api_key", "note_api_key_use"}
R1 = uuid.UUID(int=1)
SQL_NULL = object()  # a JSON argument's SQL null (None is JSON null for Jsonb)


@dataclass
class Fn:
    name: str
    args: list[tuple[str, str]]  # (name, type)
    rules: dict[str, str] = field(default_factory=dict)
    sqlstates: set[str] = field(default_factory=set)
    documented: bool = False


def documented() -> dict[str, tuple[dict[str, str], set[str] | None]]:
    """{function: ({argument: rule}, SQLSTATEs or None when no line)} from docs/sql-api.md."""
    out: dict[str, tuple[dict[str, str], set[str] | None]] = {}
    for section in DOC.read_text().split("\n### `")[1:]:
        name = section.split("`", 1)[0]
        rules: dict[str, str] = {}
        states: set[str] | None = None
        lines = section.splitlines()
        for i, line in enumerate(lines):
            if m := re.match(r"^  (p_\w+)\s+(.*)$", line):
                rules[m.group(1)] = m.group(2)
            elif line.startswith("SQLSTATEs:"):
                block = [line]
                for follow in lines[i + 1:]:
                    if not follow.startswith("  "):
                        break
                    block.append(follow)
                states = set(SQLSTATE.findall(" ".join(block)))
        out[name] = (rules, states)
    return out


def bad_values(rule: str, typ: str) -> list[Any]:
    """Values past the documented rule (none for a rule that does not limit)."""
    if m := re.match(r"^1\.\.(\d+)\b", rule):
        n = int(m.group(1))
        return ["", None, "x" * (n + 1), "\U0001F600" * (n + 1)]
    if m := re.match(r"^null\b.*, or 1\.\.(\d+)\b", rule):
        n = int(m.group(1))
        return ["", "x" * (n + 1), "\U0001F600" * (n + 1)]
    if m := re.match(r"^null\b.*, or at most (\d+) characters", rule):
        return ["x" * (int(m.group(1)) + 1)]
    if m := re.match(r"^seconds in ([(\[])(\d+), 1e9\]", rule):
        low = float(m.group(2))
        below = [low] if m.group(1) == "(" else []
        return [None, *below, low - 0.5, 1e9 + 1, 1e13, float("inf"), float("-inf"),
                float("nan")]
    if m := re.match(r"^>= (\d+)$", rule):
        return [None, int(m.group(1)) - 1]
    if "one-dimensional" in rule:
        element = {"uuid[]": R1, "bigint[]": 1, "integer[]": 1, "text[]": "a"}[typ]
        return [[[element], [element]]]
    if rule.startswith("a JSON object"):
        return [SQL_NULL, [], 1]
    if m := re.match(r"^a JSON array of 1\.\.(\d+) objects", rule):
        return [SQL_NULL, {}, [], 1, ["w1"], [{"call_id": "w1"}] * (int(m.group(1)) + 1)]
    if "not SQL null" in rule:
        return [SQL_NULL]
    if m := re.match(r"^a finite time from (\S+) to (\S+) \(UTC\)", rule):
        # what PostgreSQL stores past what a client reads back (Python: years 1 to 9999)
        second = timedelta(seconds=1)
        low, high = (datetime.fromisoformat(d).replace(tzinfo=UTC) for d in m.groups())
        return ["-infinity", "infinity", "4713-01-01 BC", "294276-01-01",
                (low - second).isoformat(), (high + second).isoformat()]
    if rule.startswith("a finite time"):
        return ["-infinity", "infinity"]
    if rule in ("true or false", "not null"):
        return [None]
    if rule.startswith("agent.run."):
        return [None, "run.x", "agent.run." + "x" * 200]
    if rule.startswith("not empty"):
        return ["", None]
    if rule.startswith("one of ") or rule.startswith("null, or one of "):
        return ["nope"]
    return []


def baseline(fn: str, arg: str, ids: dict[str, Any]) -> Any:
    """A valid value for the argument, by its name (and the function where names clash)."""
    special = {
        ("accept_entry", "p_kind"): "webhook", ("get_entry", "p_kind"): "webhook",
        ("enqueue_job", "p_kind"): "source_sync", ("upsert_cron_schedule", "p_name"): "nightly",
        ("write_checkpoint", "p_step"): 2, ("seal_answer", "p_step"): 2,
        ("take_over_child", "p_child_run_id"): ids["child"],
        ("fail_run", "p_event"): "agent.run.failed", ("audit_once", "p_event"): "agent.run.x",
        ("create_api_key", "p_run_as"): ["agent:triage"],
        ("wait_run", "p_wait_key"): "timer:x",
        ("audit_inspector_call", "p_outcome"): "made",
        ("audit_inspector_call", "p_run_id"): SQL_NULL,
        ("record_trace_context", "p_kind"): "webhook",
        ("renew_leases", "p_kind"): "run",
        ("record_resumes", "p_settlements"): [[]],
    }
    if (fn, arg) in special:
        return special[(fn, arg)]
    common = {
        "p_run_id": R1, "p_epoch": 1, "p_parent_run_id": SQL_NULL, "p_parent_epoch": 1,
        "p_step": 1, "p_call_id": "w1", "p_holder": "app-1", "p_ttl_seconds": 30.0,
        "p_owner": "o", "p_run_as": "ra", "p_channel": "web", "p_entry_point": "ep",
        "p_may_wait": False, "p_input": {}, "p_correlation_id": None, "p_idempotency_key": None,
        "p_meta": {}, "p_durable": True, "p_body": body(), "p_seal": "s", "p_seal_key_id": "k",
        "p_classification": None, "p_outcome": {}, "p_settlement": "made", "p_run_ids": [R1],
        "p_ids": [R1],
        "p_epochs": [1], "p_steps": [2], "p_bodies": [body()], "p_seals": ["s"],
        "p_seal_key_ids": ["k"], "p_name": "sweep", "p_sweeper": "app-1", "p_max_losses": 2,
        "p_limit": 10, "p_reason": "r", "p_outcomes": {}, "p_retain_seconds": 60.0,
        "p_actor": "alice", "p_settlements": [], "p_marks": [{"call_id": "w1"}],
        "p_process_id": "app-1", "p_host": "h",
        "p_os_pid": 1, "p_watcher": "app-1", "p_session": None, "p_seen": [],
        "p_grace_seconds": 0.3, "p_approval_id": ids["approval"], "p_approve": True,
        "p_delegation_key": "deleg-1", "p_wait_key": "reply:x", "p_detail": {},
        "p_sender_id": "d2", "p_payload": {}, "p_min_age_seconds": 0.0,
        "p_every_seconds": 60.0, "p_first_at": None, "p_enabled": True, "p_job_id": ids["job"],
        "p_job_ids": [ids["job"]], "p_progress": {}, "p_result": {}, "p_resumable": True,
        "p_kinds": None, "p_older_than_seconds": 3600.0, "p_target": "model", "p_error": "e",
        "p_key": "k1", "p_summary": {}, "p_child_run_id": ids["child"],
        "p_key_id": "fuzzkey01", "p_key_hash": bytes(32), "p_identity": "svc",
        "p_scopes": [], "p_step_key": "k-step", "p_seconds": 5.0, "p_sender_key": "s-1",
        "p_tool": "tickets.get", "p_arguments_digest": "0" * 64,
        "p_traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "p_after": 0,
        "p_vendor": "jira", "p_rate": 1.0, "p_burst": 1, "p_concurrency": None, "p_per": "all",
        "p_set_by": "app", "p_priority": 0, "p_owner_limit": None,
        # operating runs (schema 23): the list's filters, a fork's source and copies
        "p_statuses": None, "p_kind": None, "p_workflow": None, "p_created_from": None,
        "p_created_to": None, "p_ended_from": None, "p_ended_to": None, "p_failure": None,
        "p_after_created": None, "p_after_run_id": None, "p_source_run_id": R1,
        "p_checkpoints": [{"step": 1, "body": body(), "seal": "f1", "seal_key_id": "k"}],
        "p_source_seal": "s1",
        # workflows across deploys (schema 24): a process's declaration
        "p_status": None,
        "p_workflows": [{"name": "flow", "version": "1", "kind": "flow", "runs": ["1"],
                         "signals": ["go"]}],
        # a workflow waits for the first of its children (schema 26)
        "p_group": "k-group", "p_children": [ids["child"]],
    }
    return common[arg]


def literal(value: Any, typ: str) -> sql.Composable:
    if value is SQL_NULL or value is None:
        return sql.SQL("null::{}").format(sql.SQL(typ))
    if typ == "jsonb":
        return sql.SQL("{}::jsonb").format(sql.Literal(Jsonb(value)))
    if isinstance(value, float) and value != value:
        return sql.SQL("'NaN'::float8")
    return sql.SQL("({})::{}").format(sql.Literal(value), sql.SQL(typ))


def statement(fn: Fn, values: dict[str, Any]) -> sql.Composed:
    args = sql.SQL(", ").join(
        sql.SQL("{} => {}").format(sql.Identifier(name), literal(values[name], typ))
        for name, typ in fn.args
    )
    return sql.SQL("select * from ticketiq.{}({})").format(sql.Identifier(fn.name), args)


def populate(conn: psycopg.Connection) -> dict[str, Any]:
    """A process, a leader, a run at step 1 with a write held for approval, a child run, a
    queued and a running job, a cron schedule and an entry: what the baselines name."""
    one = conn.execute
    one("select ticketiq.register_process('app-1', 'h', 1)")
    one("select ticketiq.claim_leader('sweep', 'app-1', 600)")
    one("select ticketiq.start_run('app-1', 'o', 'ra', 'web', 'ep', true, 600, '{}', null,"
        " null, '{}', %s)", (R1,))
    one("select ticketiq.write_checkpoint(%s, 1, 1, %s, 's1', 'k')",
        (R1, Jsonb(body(call("w1"), call("r1", "read")))))
    approval = one("select approval_id from ticketiq.request_approval(%s, 1, 1, 'w1')",
                   (R1,)).fetchone()[0]
    child = one("select run_id from ticketiq.start_run('app-1', 'o', 'ra', 'delegation', 'ep',"
                " false, 600, '{}', null, 'deleg-1', '{}', null, %s)", (R1,)).fetchone()[0]
    one("select ticketiq.enqueue_job('source_sync', '{}', true, 'j1')")
    one("select ticketiq.enqueue_job('source_sync', '{}', true, 'j2')")
    job = one("select job_id from ticketiq.claim_job('app-1', 600)").fetchone()[0]
    one("select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra', 'cron',"
        " '2100-01-01')")
    one("select ticketiq.accept_entry('webhook', 'd1', '{}', 'o', 'ra', 'web')")
    return {"approval": approval, "child": child, "job": job}


@pytest.fixture
def world(db_url: str, pg_server_url: str) -> Iterator[dict[str, Any]]:
    """The populated database, its API functions, an admin and an app-login connection."""
    role = f"tiq_fuzz_{secrets.token_hex(5)}"
    password = secrets.token_hex(16)
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("create role {} login password {}").format(
            sql.Identifier(role), sql.Literal(password)))
    admin = psycopg.connect(db_url, autocommit=True)
    admin.execute(sql.SQL("grant ticketiq_app to {}").format(sql.Identifier(role)))
    ids = populate(admin)
    rows = admin.execute(
        "select p.proname, coalesce(p.proargnames[1:p.pronargs], '{}'),"
        " array(select format_type(t, null) from unnest(p.proargtypes) as t)"
        " from pg_proc as p where p.pronamespace = 'ticketiq'::regnamespace"
        " and has_function_privilege('ticketiq_app', p.oid, 'execute') order by 1").fetchall()
    docs = documented()
    fns = {}
    for name, argnames, types in rows:
        rules, states = docs.get(name, ({}, None))
        fns[name] = Fn(name, list(zip(argnames, types, strict=True)), rules,
                       set() if states is None else states, states is not None)
    app = psycopg.connect(make_conninfo(db_url, user=role, password=password), autocommit=True)
    try:
        yield {"fns": fns, "ids": ids, "admin": admin, "app": app}
    finally:
        app.close()
        admin.close()
        with psycopg.connect(pg_server_url, autocommit=True) as server:
            server.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                           " where usename = %s", (role,))
            server.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def attempt(app: psycopg.Connection, stmt: sql.Composed) -> str | None:
    """The SQLSTATE the statement raised, or None when it did not raise.  An error without
    one is the client's (a row psycopg cannot load, say a year past 9999, or a broken
    connection): it is named, with its message, so a failure tells which."""
    try:
        app.execute(stmt).fetchall()
    except psycopg.Error as exc:
        return exc.sqlstate or f"no SQLSTATE ({type(exc).__name__}: {exc})"
    return None


def test_every_function_documents_its_sqlstates_and_every_argument_its_limit(
    world: dict[str, Any],
) -> None:
    fns: dict[str, Fn] = world["fns"]
    assert len(fns) > 50
    missing = [f.name for f in fns.values() if not f.documented]
    assert missing == [], f"no SQLSTATEs line: {missing}"
    unruled = [f"{f.name}.{a}" for f in fns.values() for a, _ in f.args if a not in f.rules]
    assert unruled == [], f"arguments without a documented rule: {unruled}"


def test_every_argument_past_each_limit_raises_tq004_and_changes_nothing(
    world: dict[str, Any],
) -> None:
    fns: dict[str, Fn] = world["fns"]
    admin, app, ids = world["admin"], world["app"], world["ids"]
    before = fingerprint_sync(admin)
    wrong: list[str] = []
    broken = 0
    for fn in fns.values():
        valid = {a: baseline(fn.name, a, ids) for a, _ in fn.args}
        for arg, typ in fn.args:
            for bad in bad_values(fn.rules[arg], typ):
                broken += 1
                state = attempt(app, statement(fn, {**valid, arg: bad}))
                if state != "TQ004":
                    wrong.append(f"{fn.name}({arg}={str(bad)[:40]!r}): {state}")
        after = fingerprint_sync(admin)
        assert after == before, f"{fn.name} changed a table past a limit"
    assert broken > 300
    assert wrong == []


@st.composite
def calls(draw: st.DrawFn, fns: list[Fn], ids: dict[str, Any]) -> tuple[Fn, dict[str, Any]]:
    """A function and its arguments, at least one past its limit (none for READ_ONLY)."""
    fn = draw(st.sampled_from(fns))
    breakable = [(a, t) for a, t in fn.args if bad_values(fn.rules[a], t)]
    values: dict[str, Any] = {}
    for arg, typ in fn.args:
        values[arg] = draw(st.one_of(st.just(baseline(fn.name, arg, ids)), junk(typ, ids)))
    if breakable:
        for arg, typ in draw(st.lists(st.sampled_from(breakable), min_size=1, max_size=3)):
            values[arg] = draw(st.sampled_from(bad_values(fn.rules[arg], typ)))
    return fn, values


def junk(typ: str, ids: dict[str, Any]) -> st.SearchStrategy[Any]:
    known = [R1, ids["child"], ids["job"], ids["approval"]]
    scalar: dict[str, st.SearchStrategy[Any]] = {
        "uuid": st.sampled_from(known) | st.uuids(),
        "bigint": st.integers(-(2**63), 2**63 - 1) | st.integers(-2, 3),
        "integer": st.integers(-(2**31), 2**31 - 1) | st.integers(-2, 3),
        "double precision": st.floats(allow_nan=True, allow_infinity=True),
        "boolean": st.booleans(),
        "text": st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)),
                        max_size=12) | st.sampled_from(["app-1", "w1", "sweep", "webhook"]),
        "jsonb": st.sampled_from([{}, [], 1, "x", None, {"a": 1}, SQL_NULL]),
        "timestamp with time zone": st.sampled_from(
            ["-infinity", "infinity", "2030-01-01", "4713-01-01 BC", "294276-01-01"]),
        "bytea": st.binary(max_size=40),
    }
    if typ.endswith("[]"):
        return st.none() | st.lists(scalar[typ[:-2]], max_size=3)
    return st.none() | scalar[typ]


def test_random_calls_past_the_limits_raise_only_documented_sqlstates(
    world: dict[str, Any],
) -> None:
    fns = [f for f in world["fns"].values()
           if f.name in READ_ONLY or any(bad_values(f.rules[a], t) for a, t in f.args)]
    admin, app = world["admin"], world["app"]
    before = fingerprint_sync(admin)

    @settings(max_examples=500, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(calls(fns, world["ids"]))
    def check(case: tuple[Fn, dict[str, Any]]) -> None:
        fn, values = case
        state = attempt(app, statement(fn, values))
        if fn.name not in READ_ONLY:
            assert state is not None, f"{fn.name} accepted arguments past a limit"
        assert state is None or state in fn.sqlstates, (
            f"{fn.name} raised {state}, documented: {sorted(fn.sqlstates)}")
        assert fingerprint_sync(admin) == before, f"{fn.name} changed a table"

    check()


def test_random_calls_of_any_arguments_raise_only_documented_sqlstates(
    world: dict[str, Any],
) -> None:
    """Random arguments, none forced past a limit: a call may succeed (and write), but what
    it raises is one of its function's documented SQLSTATEs.  The examples share one
    database: a call may fail on a row an earlier example wrote, and hypothesis then
    shrinks to the simplest call that reads it (the baselines, often)."""
    fns = list(world["fns"].values())
    app, ids = world["app"], world["ids"]

    @settings(max_examples=800, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def check(data: st.DataObject) -> None:
        fn = data.draw(st.sampled_from(fns))
        values = {arg: data.draw(st.one_of(st.just(baseline(fn.name, arg, ids)), junk(typ, ids)))
                  for arg, typ in fn.args}
        state = attempt(app, statement(fn, values))
        assert state is None or state in fn.sqlstates, (
            f"{fn.name} raised {state}, documented: {sorted(fn.sqlstates)}")

    check()
