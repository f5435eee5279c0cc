"""How the operator reports read: ``--json`` and aligned tables for people.

:func:`to_json` writes a report of :mod:`ticketiq_pg.db.inspect` as JSON (ISO 8601
timestamps, UUIDs as strings); the ``render_*`` functions write it as text: times in
UTC to the second, numbers right-aligned, long cells cut at :data:`CELL_WIDTH`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from ticketiq_pg.db.inspect import seconds_until
from ticketiq_pg.printable import printable

#: Widest cell of a human table (JSON and long text are cut to it).
CELL_WIDTH = 60


# -- JSON -------------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, default=_json_default, ensure_ascii=False)


# -- human tables -----------------------------------------------------------------------------


def fmt_time(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def fmt_seconds(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
    return f"{int(seconds // 86400)}d{int(seconds % 86400 // 3600):02d}h"


def fmt_expiry(seconds: float | None) -> str:
    """``in 4.2s`` for a lease still held, ``LAPSED 3.0s ago`` for one past its expiry."""
    if seconds is None:
        return "-"
    if seconds > 0:
        return f"in {fmt_seconds(seconds)}"
    return f"LAPSED {fmt_seconds(seconds)} ago"


def fmt_ago(seconds: float | None) -> str:
    return "-" if seconds is None else f"{fmt_seconds(seconds)} ago"


def cell(value: Any, width: int = CELL_WIDTH) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, datetime):
        text = fmt_time(value)
    elif isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"), default=_json_default,
                          ensure_ascii=False)
    else:
        text = str(value)
    text = printable(" ".join(text.split()), keep_lines=False)  # one line, no controls
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ",
          wide: Sequence[int] = ()) -> str:
    """An aligned text table; numbers are right-aligned; the ``wide`` columns are cut at 200."""
    if not rows:
        return f"{indent}(none)"
    cells = [[cell(v, 200 if i in wide else CELL_WIDTH) for i, v in enumerate(row)]
             for row in rows]
    numeric = []
    for i in range(len(headers)):
        values = [row[i] for row in rows if row[i] is not None]
        numeric.append(bool(values) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values))
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if numeric[i] else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return (indent + "  ".join(parts)).rstrip()

    out = [line([h.rjust(w) if numeric[i] else h for i, (h, w) in
                 enumerate(zip(headers, widths, strict=True))])]
    out.append(indent + "  ".join("-" * w for w in widths))
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def pairs(items: Sequence[tuple[str, Any]], indent: str = "  ") -> str:
    width = max(len(k) for k, _ in items)
    return "\n".join(f"{indent}{k.ljust(width)}  {cell(v, 200)}" for k, v in items)


def _more(shown: int, total: int) -> str:
    return f"  ({total - shown} more: raise --limit)" if total > shown else ""


def render_status(report: dict[str, Any]) -> str:
    out: list[str] = [
        f"database clock {fmt_time(report['now'])} UTC, schema version "
        f"{report['schema_version']}",
        "",
    ]
    procs = report["processes"]
    hidden = (f", {procs['hidden']} more not seen for {fmt_seconds(procs['seen_within_s'])}"
              if procs["hidden"] else "")
    out.append(f"processes: {procs['count']}{hidden}")
    out.append(table(
        ["process", "host", "pid", "started", "last seen", "session", "liveness", "runs", "jobs",
         "leader"],
        [[p["process_id"], p["host"], p["os_pid"], p["started_at"],
          fmt_ago(p["last_seen_ago_s"]), "connected" if p["session_connected"] else "gone",
          {True: "held", False: "gone", None: "-"}[p["liveness_held"]],
          p["runs_held"], p["jobs_held"], p["is_leader"]] for p in procs["rows"]],
    ) + _more(len(procs["rows"]), procs["count"]))
    out.append("")
    ended = procs["ended"]
    window = f" within {fmt_seconds(procs['seen_within_s'])}" if procs["seen_within_s"] else ""
    out.append(f"processes ended{window}: {ended['count']}")
    out.append(table(
        ["process", "host", "pid", "started", "last seen", "ended", "how", "noticed by", "runs",
         "jobs"],
        [[p["process_id"], p["host"], p["os_pid"], p["started_at"],
          fmt_ago(p["last_seen_ago_s"]), fmt_ago(p["ended_ago_s"]), p["ended_how"],
          p["noticed_by"], p["runs_held"], p["jobs_held"]] for p in ended["rows"]],
    ) + _more(len(ended["rows"]), ended["count"]))
    out.append("")
    out.append("sweep leader:")
    out.append(table(
        ["lease", "holder", "epoch", "acquired", "expires", ""],
        [[lease["name"], lease["holder"], lease["epoch"], lease["acquired_at"],
          lease["expires_at"],
          f"no leader: free for {fmt_seconds(lease['expires_in_s'])}" if lease["lapsed"]
          else fmt_expiry(lease["expires_in_s"])] for lease in report["leaders"]],
    ))
    out.append("")
    lapsing = report["leases_lapsing"]
    out.append(f"leases about to lapse (within {lapsing['within_s']:g}s): {lapsing['count']}")
    out.append(table(
        ["kind", "id", "holder", "epoch", "expires", ""],
        [[lease["kind"], lease["id"], lease["holder"], lease["epoch"], lease["expires_at"],
          fmt_expiry(lease["expires_in_s"])] for lease in lapsing["rows"]],
    ) + _more(len(lapsing["rows"]), lapsing["count"]))
    out.append("")
    flight = report["runs_in_flight"]
    by_status = ", ".join(f"{k} {v}" for k, v in flight["by_status"].items())
    out.append(f"runs in flight: {flight['count']} ({by_status}); "
               f"suspended {report['runs_suspended']}")
    out.append("")
    unrunnable = report.get("workflow_runs_unrunnable") or {"count": 0, "rows": []}
    out.append(f"workflow runs no live worker can run: {unrunnable['count']}")
    out.append(table(
        ["run", "workflow", "version", "status", "waiting since", "wait key"],
        [[u["run_id"], u["workflow"], u["workflow_version"], u["status"], u["waiting_since"],
          u["wait_key"] or "-"] for u in unrunnable["rows"]],
    ) + _more(len(unrunnable["rows"]), unrunnable["count"]))
    out.append("")
    starting = report.get("waiting_to_start") or []
    out.append(f"runs waiting to start, by priority and owner: "
               f"{sum(w['runs'] for w in starting)}")
    out.append(table(["priority", "owner", "runs", "oldest"],
                     [[w["priority"], w["owner"], w["runs"], w["oldest"]] for w in starting]))
    out.append("")
    vendors = report.get("vendors") or []
    out.append(f"vendor limits: {len(vendors)} (ticketiq-pg limits for their settings)")
    out.append(table(
        ["vendor", "scope", "taken", "waited", "429s met", "in flight", "suspended now"],
        [[v["vendor"], v["scope"] or "-", v["taken"], v["waited"], v["slowed"], v["in_flight"],
          v["waiting"]] for v in vendors]))
    out.append("")
    retrying = report.get("runs_retrying") or {"count": 0, "rows": []}
    out.append(f"runs retrying the model: {retrying['count']}")
    out.append(table(
        ["run", "holder", "step", "tries", "last status", "for", "last try"],
        [[r["run_id"], r["lease_holder"], r["step"], r["tries"], r["last_status"] or "-",
          fmt_seconds(r["retrying_for_s"]), fmt_ago(r["last_try_ago_s"])]
         for r in retrying["rows"]],
    ) + _more(len(retrying["rows"]), retrying["count"]))
    out.append("")
    doubt = report["calls_in_doubt"]
    out.append(f"calls in doubt: {doubt['count']}")
    out.append(table(
        ["run", "step", "call", "tool", "as", "marked", "epoch", "run status", "holder"],
        [[d["run_id"], d["step"], d["call_id"], d["tool"], d["marked_classification"],
          d["marked_at"], d["marked_epoch"], d["run_status"], d["lease_holder"]]
         for d in doubt["rows"]],
    ) + _more(len(doubt["rows"]), doubt["count"]))
    out.append("")
    waiting = report["approvals_waiting"]
    out.append(f"approvals waiting: {waiting['count']}")
    out.append(table(
        ["approval", "run", "step", "call", "tool", "requested", "summary"],
        [[a["approval_id"], a["run_id"], a["step"], a["call_id"], a["tool"], a["requested_at"],
          a["summary"]] for a in waiting["rows"]],
    ) + _more(len(waiting["rows"]), waiting["count"]))
    out.append("")
    entries = report["entries_open"]
    by_state = ", ".join(f"{k} {v}" for k, v in entries["by_state"].items())
    out.append(f"entries open: {entries['count']} ({by_state})")
    out.append(table(
        ["entry", "kind", "sender", "state", "run", "run status", "holder", "received"],
        [[e["entry_id"], e["kind"], e["sender_id"], e["state"], e["run_id"], e["run_status"],
          e["lease_holder"], e["received_at"]] for e in entries["rows"]],
    ) + _more(len(entries["rows"]), entries["count"]))
    out.append("")
    jobs = report["jobs_open"]
    by_state = ", ".join(f"{k} {v}" for k, v in jobs["by_state"].items())
    out.append(f"jobs open: {jobs['count']} ({by_state})")
    out.append(table(
        ["job", "kind", "state", "epoch", "holder", "expires", "attempts", "progress"],
        [[j["job_id"], j["kind"], j["state"], j["epoch"], j["holder"],
          fmt_expiry(seconds_until(j["lease_expires_at"], report["now"])), j["attempts"],
          j["progress"]]
         for j in jobs["rows"]],
    ) + _more(len(jobs["rows"]), jobs["count"]))
    return "\n".join(out)


def render_runs(report: dict[str, Any]) -> str:
    rows = report["runs"]
    head = f"{len(rows)} runs, newest first (limit {report['filters']['limit']})"
    return head + "\n" + table(
        ["run", "status", "entry point", "owner", "holder", "lease", "epoch", "losses", "step",
         "created", "finished", "note"],
        [[r["run_id"], r["status"], r["entry_point"], r["owner"], r["lease_holder"],
          fmt_expiry(r["lease_expires_in_s"]), r["epoch"], r["loss_count"], r["last_step"],
          r["created_at"], r["finished_at"],
          r["failure_reason"] or (f"waits on {r['wait_key']}" if r["wait_key"] else None)]
         for r in rows],
        indent="",
    )


def transcript_line(kind: str, body: Any) -> str:
    """What a person reads of one transcript line (``--json`` keeps the whole body)."""
    if not isinstance(body, dict):
        return cell(body, 200)
    if kind == "step":
        calls = ", ".join(
            f"{c.get('tool')} ({c.get('settlement') or c.get('state') or c.get('classification')})"
            for c in body.get("calls") or [] if isinstance(c, dict)
        )
        text = cell(body.get("text"), 80)
        return f"{text} -> {calls}" if calls else text
    if kind == "answer":
        answer = body.get("answer")
        if isinstance(answer, dict) and "text" in answer:
            answer = answer["text"]
        return cell(answer, 120)
    if kind == "resumed":
        settled = ", ".join(
            f"{s.get('call_id')} {s.get('settlement')}"
            for s in body.get("settlements") or [] if isinstance(s, dict)
        )
        lost = body.get("loss_count") or 0
        return (f"resumed from step {body.get('step')}"
                + (f" (run lost {lost} times)" if lost else "")
                + (f": {settled}" if settled else ""))
    if kind in ("failed", "stopped") and "reason" in body:
        return cell(body["reason"], 200)
    return cell(body, 200)


def _usage_lines(usage: dict[str, Any] | None) -> list[str]:
    """The run's token usage, per step and summed; nothing when no step reported any."""
    if not usage or not usage["steps"]:
        return []
    keys = sorted({k for row in usage["steps"] for k in row} - {"step", "request_id"})
    total = usage["total"]
    summary = ", ".join(f"{k} {total[k]}" for k in keys if k in total)
    return ["", f"usage: {summary} over {total['steps']} model steps", table(
        ["step", "request id", *keys],
        [[row["step"], row["request_id"], *[row.get(k) for k in keys]]
         for row in usage["steps"]],
    )]


def _workflow_lines(flow: dict[str, Any] | None) -> list[str]:
    """A workflow run's steps (each action's key and how it was settled) and waits."""
    if not flow:
        return []
    out = ["", f"workflow {flow['name']} (version {flow['version']}): "
               f"{len(flow['steps'])} actions", table(
        ["ckpt", "step id", "executed", "tool", "class", "state", "settlement", "resumed as",
         "then", "step key"],
        [[s["step"], s["step_id"], s["steps_executed"], s["tool"], s["classification"],
          s["state"] or "no row", s["settlement"], ", ".join(s["resumes"]) or None, s["then"],
          s["step_key"]] for s in flow["steps"]],
    )]
    if flow["timers"]:
        out += ["", f"timers: {len(flow['timers'])}", table(
            ["timer (step key)", "set", "due", "state", "fired"],
            [[t["timer_key"], t["set_at"], t["due_at"], t["state"], t["fired_at"]]
             for t in flow["timers"]])]
    if flow["signals"]:
        out += ["", f"signals: {len(flow['signals'])}", table(
            ["id", "name", "sender key", "sent", "by", "consumed", "by step", "payload"],
            [[g["signal_id"], g["name"], g["sender_key"], g["sent_at"], g["sent_by"],
              g["consumed_at"], g["consumed_by"], g["payload"]] for g in flow["signals"]])]
    return out


def _loss_lines(audit: list[dict[str, Any]]) -> list[str]:
    """Each loss of the run: when, at which epoch, which process lost it and how it was
    noticed (its agent.run.lease_lapsed rows, whole: a process id is not cut)."""
    losses = [a for a in audit if a["event"] == "agent.run.lease_lapsed"]
    if not losses:
        return []
    rows = []
    for a in sorted(losses, key=lambda a: a["audit_id"]):
        detail = a["detail"] if isinstance(a["detail"], dict) else {}
        rows.append([a["at"], a["epoch"], detail.get("reason") or "lease_lapsed",
                     detail.get("outcome"), detail.get("lapsed_holder")])
    return ["", f"lost: {len(losses)}", table(
        ["at", "epoch", "noticed by", "then", "lost by (process)"], rows, wide=(4,))]


def _unknown_lines(calls: list[dict[str, Any]]) -> list[str]:
    """What on-call must look up: each call settled unknown, its vendor's tool and key."""
    unknown = [c for c in calls if c["settlement"] == "unknown"]
    if not unknown:
        return []
    return ["", f"outcome unknown: {len(unknown)} (not sent again; look each key up at the "
            "vendor of its tool before anyone sends it again)",
            *(f"  step {cell(c['step'])} call {cell(c['call_id'])}: tool {cell(c['tool'])}, "
              f"key {cell(c['step_key'], 200)}" for c in unknown)]


def render_show(report: dict[str, Any]) -> str:
    r = report["run"]
    lease = (f"{r['lease_holder']}, expires {fmt_time(r['lease_expires_at'])} "
             f"({fmt_expiry(r['lease_expires_in_s'])})" if r["lease_holder"] else None)
    stop = (f"{fmt_time(r['stop_requested_at'])} by {r['stop_requested_by']}"
            if r["stop_requested_at"] else None)
    out = [
        f"run {r['run_id']}: {r['status']}",
        pairs([
            ("entry point", r["entry_point"]),
            ("owner / run as", f"{r['owner']} / {r['run_as']} (channel {r['channel']})"),
            ("epoch", r["epoch"]),
            ("lease", lease),
            ("losses", r["loss_count"]),
            ("last step", r["last_step"]),
            ("durable / may wait", f"{cell(r['durable'])} / {cell(r['may_wait'])}"),
            ("correlation id", r["correlation_id"]),
            ("idempotency key", r["idempotency_key"]),
            ("parent run", r["parent_run_id"]),
            ("waits on", r["wait_key"]),
            ("claimed because", r["claim_reason"]),
            ("stop requested", stop),
            ("failure", r["failure_reason"]),
            ("created", r["created_at"]),
            ("updated", r["updated_at"]),
            ("finished", r["finished_at"]),
            ("input", r["input"]),
        ]),
        *_loss_lines(report["audit"]),
        "",
        f"checkpoints: {len(report['checkpoints'])}",
        table(
            ["step", "epoch", "written", "bytes", "seal key", "calls", "model text"],
            [[c["step"], c["epoch"], c["written_at"], c["size_bytes"], c["seal_key_id"],
              c["calls"], c["model_text"]] for c in report["checkpoints"]],
        ),
        *_usage_lines(r.get("usage")),
        "",
        f"calls: {len(report['calls'])}",
        table(
            ["step", "#", "call", "tool", "class", "state", "marked", "as", "mark epoch",
             "settlement", "finished", "step key"],
            [[c["step"], c["ordinal"], c["call_id"], c["tool"], c["classification"],
              c["state"] if c["recorded"] else "no row", c["marked_at"],
              c["marked_classification"], c["marked_epoch"], c["settlement"], c["finished_at"],
              c["step_key"]] for c in report["calls"]],
        ),
    ]
    out += _unknown_lines(report["calls"])
    out += _workflow_lines(report.get("workflow"))
    if report["approvals"]:
        out += ["", f"approvals: {len(report['approvals'])}", table(
            ["approval", "step", "call", "tool", "state", "requested", "decided", "by", "reason"],
            [[a["approval_id"], a["step"], a["call_id"], a["tool"], a["state"], a["requested_at"],
              a["decided_at"], a["decided_by"], a["reason"]] for a in report["approvals"]],
        )]
    answer = report["answer"]
    out += ["", "answer:" if answer else "answer: (none sealed)"]
    if answer:
        handed = (f"{fmt_time(answer['handed_on_at'])} (epoch {answer['handed_on_epoch']})"
                  if answer["handed_on_at"] else "not yet")
        out.append(pairs([
            ("step / epoch", f"{answer['step']} / {answer['epoch']}"),
            ("sealed", answer["sealed_at"]),
            ("seal key", answer["seal_key_id"]),
            ("handed on", handed),
            ("delivery started", answer["delivery_started_at"]),
            ("kept until", answer["retain_until"]),
            ("body", answer["body"]),
        ]))
    if report["entries"]:
        out += ["", f"entries: {len(report['entries'])}", table(
            ["entry", "kind", "sender", "state", "received", "finished"],
            [[e["entry_id"], e["kind"], e["sender_id"], e["state"], e["received_at"],
              e["finished_at"]] for e in report["entries"]],
        )]
    if report["children"]:
        out += ["", f"child runs: {len(report['children'])}", table(
            ["run", "status", "entry point", "epoch", "holder", "created", "finished"],
            [[c["run_id"], c["status"], c["entry_point"], c["epoch"], c["lease_holder"],
              c["created_at"], c["finished_at"]] for c in report["children"]],
        )]
    out += ["", f"transcript: {len(report['transcript'])}", table(
        ["at", "kind", "step", "what"],
        [[t["at"], t["kind"], t["step"], transcript_line(t["kind"], t["body"])]
         for t in report["transcript"]],
        wide=(3,),
    )]
    out += ["", f"audit: {len(report['audit'])}", table(
        ["id", "at", "event", "epoch", "actor", "detail"],
        [[a["audit_id"], a["at"], a["event"], a["epoch"], a["actor"], a["detail"]]
         for a in report["audit"]],
    )]
    return "\n".join(out)


def render_audit(report: dict[str, Any]) -> str:
    rows = report["audit"]
    head = f"{len(rows)} audit rows, newest first (limit {report['filters']['limit']})"
    return head + "\n" + table(
        ["id", "at", "event", "run", "epoch", "actor", "detail"],
        [[a["audit_id"], a["at"], a["event"], a["run_id"], a["epoch"], a["actor"], a["detail"]]
         for a in rows],
        indent="",
    )
