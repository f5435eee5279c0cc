"""21. A step's server work split by what it does (issue 45): ``write_checkpoint`` ablated.

The function as shipped is timed beside copies of itself with one part taken out each,
and beside the raw ``UPDATE`` of the same body (the floor), on one connection, one run
at a time, each call its own transaction as a step at 1 at once is.  What a part costs
is the median over rounds of the shipped arm's figure less the copy's without it,
paired within each round.  The arms:

* ``shipped``: ``sql/functions/write_checkpoint.sql`` as installed;
* ``no_validation``: without ``_checkpoint_ok`` (the body's shape);
* ``no_event``: without the ``step_written`` row of the run's event stream;
* ``db_clock``: ``clock_timestamp()`` for ``ticketiq.now()`` (its fake-clock lookup and
  its call as a ``SECURITY DEFINER`` function with a pinned ``search_path``);
* ``no_calls_probe``: without the probe for open calls of the previous step and
  changing calls of this one;
* ``no_answer_check``: without the sealed-answer check in the fenced ``UPDATE``;
* ``invoker``: the function neither ``SECURITY DEFINER`` nor with a pinned
  ``search_path`` (the call's own overhead);
* ``bare``: all of those out: the fenced ``UPDATE`` and the checkpoint's insert;
* ``statement``: that ``UPDATE`` and insert as one SQL statement, no function;
* ``floor``: one ``UPDATE`` of a row's body, nothing else.

Per arm and round: the median wall of a call, the server backend's CPU a call (from
``/proc/<pid>/schedstat``, in nanoseconds; n/a where the server is not on this machine)
and WAL bytes a call.  Rounds alternate the arms' order; the figures are medians over
rounds.  The copies are made from the shipped text by exact replacements, each checked
to have matched, so a change to the function that this section no longer understands
fails it rather than measuring something else.
"""

from __future__ import annotations

import re
import secrets
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .common import BenchDB, Sizes
from .report import _row

SQL = Path(__file__).resolve().parent.parent / "sql" / "functions" / "write_checkpoint.sql"



def body(step: int) -> Jsonb:
    """A step of the bench workload's agent (bench/workload.py), as its runner writes it: a
    chain link of about 1 KB, the previous read's result and this step's read, new at
    every step (an update's WAL record shrinks to what changed on the page)."""
    call = f"toolu_{secrets.token_hex(12)}"
    query = f"export timeout connector {step} {secrets.token_hex(8)}"
    return Jsonb({
        "calls": [{"tool": "kb.search", "call_id": call,
                   "step_key": f"tiq1-call-{secrets.token_hex(20)}",
                   "arguments": {"limit": 2, "query": query}, "classification": "read"}],
        "chain": "link", "history": [{"step": step, "calls": [call]}],
        "counters": {"max_steps": 50, "agent_loop": "main", "tool_calls": step,
                     "deadline_at": 1796575668.1730795, "model_steps": step},
        "outcomes": {},
        "conversation": [
            {"role": "tool", "call_id": f"toolu_{secrets.token_hex(12)}", "content": {
                "hits": [{"id": "KB-1042", "title": "Exports time out after plan upgrade",
                          "snippet": "Raise the export window or split connectors."}],
                "query": f"export timeout connector {step - 1}"}},
            {"role": "assistant", "content": "", "tool_calls": [
                {"tool": "kb.search", "call_id": call,
                 "arguments": {"limit": 2, "query": query}}]}],
        "sealed_calls": True, "delegation_keys": {}})


CALL = "select * from ticketiq.write_checkpoint(%s, %s, %s, %s, 's', 'k')"
STATEMENT = """
with fenced as (
    update ticketiq.runs as r set last_step = %(step)s
    where r.run_id = %(run)s and r.epoch = %(epoch)s and r.status = 'running'
        and r.lease_expires_at > clock_timestamp() and r.last_step = %(step)s - 1
    returning r.lease_expires_at, clock_timestamp() as locked_at
)
insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
select %(run)s, %(step)s, %(epoch)s, %(body)s, 's', 'k', f.locked_at from fenced as f
returning written_at
"""
FLOOR = "update bench_split_floor set step = %s, body = %s where id = 1"


def _cut(text: str, pattern: str, repl: str = "", *, regex: bool = False) -> str:
    found = re.search(pattern, text, re.S) if regex else (pattern in text)
    if not found:
        raise RuntimeError(f"write_checkpoint.sql changed shape: no {pattern[:60]!r}")
    return re.sub(pattern, repl, text, flags=re.S) if regex else text.replace(pattern, repl)


CUTS: dict[str, Callable[[str], str]] = {
    "no_validation": lambda t: _cut(
        t, "    if not ticketiq._checkpoint_ok(p_body) then\n"
           "        perform ticketiq._validate_checkpoint(p_body);\n    end if;\n"),
    "no_event": lambda t: _cut(
        t, r",\n\n            -- The run's event stream.*?"
           r"where f.lease_expires_at > f.locked_at\n            \)", regex=True),
    "db_clock": lambda t: _cut(t, "ticketiq.now()", "clock_timestamp()"),
    "no_calls_probe": lambda t: _cut(
        t, r"exists \(\n\s+select 1 from ticketiq\.calls as c.*?"
           r"jsonb_path_exists\(p_body, '[^']*'\)", "false", regex=True),
    "no_answer_check": lambda t: _cut(
        t, "\n                    and not exists (select 1 from ticketiq.answers as a "
           "where a.run_id = p_run_id)"),
    "invoker": lambda t: _cut(_cut(t, "security definer\n"),
                              "set search_path = pg_catalog, pg_temp\n"),
}


def variants() -> dict[str, str]:
    shipped = SQL.read_text()
    out = {"shipped": shipped}
    bare = shipped
    for name, cut in CUTS.items():
        out[name] = cut(shipped)
        bare = cut(bare)
    out["bare"] = bare
    return out


def _backend_cpu_ns(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _arm(conn: psycopg.Connection[Any], pid: int, label: str, sql: str | None,
         calls: int) -> dict[str, float | None]:
    """``calls`` steps of a new run through the arm; the medians a call."""
    if sql is not None:
        conn.execute(sql)
    run_id, epoch = conn.execute(
        "select run_id, epoch from ticketiq.start_run('bench-split', 'o', 'r', 'c', 'e', false,"
        " 3600, '{}', null, null, '{}')").fetchone()  # type: ignore[misc]
    warm = max(10, calls // 20)
    bodies = [body(step) for step in range(warm + calls + 1)]

    def one(step: int) -> None:
        if label == "floor":
            conn.execute(FLOOR, (step, bodies[step]))
        elif label == "statement":
            conn.execute(STATEMENT, {"step": step, "run": run_id, "epoch": epoch,
                                     "body": bodies[step]})
        else:
            conn.execute(CALL, (run_id, epoch, step, bodies[step]))

    for step in range(1, warm + 1):
        one(step)
    walls = []
    lsn0 = conn.execute("select pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
    cpu0 = _backend_cpu_ns(pid)
    for step in range(warm + 1, warm + calls + 1):
        started = time.perf_counter()
        one(step)
        walls.append(time.perf_counter() - started)
    cpu1 = _backend_cpu_ns(pid)
    wal = conn.execute("select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)",
                       (lsn0,)).fetchone()[0]  # type: ignore[index]
    return {"wall_us": statistics.median(walls) * 1e6,
            # two statements outside the loop (the LSN's) are in neither figure
            "server_cpu_us": None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / calls / 1e3,
            "wal_bytes": float(wal) / calls}


def measure(url: str, calls: int, rounds: int, log: Any) -> dict[str, Any]:
    found = variants()
    labels = [*found, "statement", "floor"]
    per: dict[str, list[dict[str, float | None]]] = {k: [] for k in labels}
    with psycopg.connect(url, autocommit=True) as conn:
        pid = conn.execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        conn.execute("create table bench_split_floor (id int primary key, step int, body jsonb)")
        conn.execute("insert into bench_split_floor values (1, 0, '{}')")
        try:
            for rnd in range(rounds):
                for label in (labels if rnd % 2 == 0 else list(reversed(labels))):
                    sql = found.get(label, found["shipped"])
                    per[label].append(_arm(conn, pid, label, sql, calls))
        finally:
            conn.execute(found["shipped"])
            conn.execute("drop table bench_split_floor")
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    out: dict[str, Any] = {"calls": calls, "rounds": rounds, "load_average": load, "arms": {}}
    for label, got in per.items():
        fig: dict[str, Any] = {}
        for key in ("wall_us", "server_cpu_us", "wal_bytes"):
            values = [g[key] for g in got if g[key] is not None]
            fig[key] = statistics.median(values) if values else None
            fig[f"{key}_rounds"] = values
        out["arms"][label] = fig
    shipped = out["arms"]["shipped"]
    # A part's cost: the median over rounds of the shipped arm less the arm without it,
    # paired within each round (a round's arms ran minutes apart at most, the rounds
    # longer: pairing takes the machine's drift out of the difference).
    out["parts_cpu_us"] = {}
    for label in [*CUTS, "bare"]:
        pairs = [(a["server_cpu_us"], b["server_cpu_us"])
                 for a, b in zip(per["shipped"], per[label], strict=True)]
        diffs = [x - y for x, y in pairs if x is not None and y is not None]
        out["parts_cpu_us"][label] = statistics.median(diffs) if diffs else None
    floor = out["arms"]["floor"]["server_cpu_us"]
    out["shipped_over_floor"] = (shipped["server_cpu_us"] / floor) if floor else None
    for label in labels:
        fig = out["arms"][label]
        cpu = fig["server_cpu_us"]
        log(f"  {label:16} wall {fig['wall_us']:7.1f} us, server CPU "
            f"{'n/a' if cpu is None else f'{cpu:7.1f}'} us, WAL {fig['wal_bytes']:7.0f} B a call")
    return out


async def run(bdb: BenchDB, sizes: Sizes, log: Any) -> dict[str, Any]:
    return measure(bdb.url, sizes.split_calls, sizes.split_rounds, log)


def rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The section's rows of the bench table (see bench/report.py)."""
    arms, parts = res["arms"], res["parts_cpu_us"]

    def cpu(label: str) -> str:
        value = arms[label]["server_cpu_us"]
        return "n/a" if value is None else f"{value:.0f} us"

    out = [_row("21", "a step's server CPU: write_checkpoint, the raw UPDATE",
                f"{cpu('shipped')} ({res['shipped_over_floor'] or 0:.2f}x)", cpu("floor"),
                key="step_split.shipped_over_floor", value=res["shipped_over_floor"])]
    for label in [*CUTS, "bare"]:
        value = parts[label]
        out.append(_row("21", f"  less {label}", cpu(label),
                        "n/a" if value is None else f"part {value:.0f} us",
                        key=f"step_split.parts_cpu_us.{label}", value=value))
    wal = {k: f"{arms[k]['wal_bytes']:.0f} B" for k in ("statement", "shipped", "floor")}
    out.append(_row("21", "  the fenced update and insert as one statement", cpu("statement"),
                    f"WAL {wal['statement']}, shipped {wal['shipped']}, floor {wal['floor']}",
                    key="step_split.statement_cpu_us", value=arms["statement"]["server_cpu_us"]))
    return out
