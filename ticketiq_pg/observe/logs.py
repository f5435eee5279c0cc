"""Structured logs: one line per event an operator searches for, as JSON when asked.

``TICKETIQ_LOG_FORMAT=json`` makes ``ticketiq-pg worker`` write one JSON object per
line (:class:`JsonFormatter`): ``time``, ``level``, ``logger``, ``message`` and, where
known, ``run_id`` and ``trace_id`` (the run's trace, as its spans carry it), with the
event's own fields.  The events (logger ``ticketiq_pg.events``, level INFO, field
``event``) come from the statements that record them, so each is logged by the process
that made it happen, once:

==================  ===============================================================
run.started         a run started here (``entry_point``)
run.lost            a run of a lost process claimed here (``lost_process`` or
                    ``detected_by``)
run.resumed         a run adopted here (``loss_count``, ``last_step``)
run.completed       its answer handed on here
run.failed          failed here (``reason``)
call.settled        a call a lost attempt left, settled (``call_id``, ``settlement``)
approval.decided    a person's decision (``approval_id``, ``state``, ``by``)
inspector.call      an operator's ad hoc call (``tool``, ``key``, ``outcome``, ``by``)
==================  ===============================================================

Every other log line written while a run's task runs carries its ``run_id`` too.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from ticketiq_pg.observe.tracing import enabled, pending_of, settlements_of, trace_id_of
from ticketiq_pg.printable import printable

ENV_FORMAT = "TICKETIQ_LOG_FORMAT"
events = logging.getLogger("ticketiq_pg.events")

#: The run whose task is running (set at its statements): every log line carries it.
current_run: contextvars.ContextVar[uuid.UUID | None] = contextvars.ContextVar(
    "ticketiq_run", default=None)

#: The statements a run's own task sends, its run id first.
RUN_STATEMENTS = frozenset({
    "write_checkpoint", "mark_in_doubt", "record_outcome", "record_resume", "seal_answer",
    "hand_on_answer", "fail_run", "stop_run", "release_run", "suspend_run", "record_attempt",
    "audit_once", "request_approval", "mark_delivery"})
_FIELDS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName"}


def _task_run() -> uuid.UUID | None:
    """The run whose task is logging, by the task's name (a worker names a run's task
    ``run:<run id>``): a resume's first lines come before any statement of its own task
    (its settlements are grouped with other resumes', sent from another task)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop in this thread
        return None
    name = task.get_name() if task is not None else ""
    if not name.startswith("run:"):
        return None
    try:
        return uuid.UUID(name[4:])
    except ValueError:
        return None


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object: its message, run id, trace id and extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        out.update({k: v for k, v in record.__dict__.items() if k not in _FIELDS})
        run_id = out.get("run_id") or current_run.get() or _task_run()
        if run_id is not None:
            out["run_id"] = str(run_id)
            if enabled():
                out.setdefault("trace_id", trace_id_of(uuid.UUID(str(run_id))))
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def handler(stream: Any) -> logging.Handler:
    """A stream handler writing JSON lines."""
    found = logging.StreamHandler(stream)
    found.setFormatter(JsonFormatter())
    return found


class TextFormatter(logging.Formatter):
    """The text log format, stored text's control characters neutralised (a reason, a
    tool's name: never an ESC that rewrites the operator's terminal)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def text_handler(stream: Any) -> logging.Handler:
    """A stream handler writing text lines: time, level, logger, message."""
    found = logging.StreamHandler(stream)
    found.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return found


def _event(name: str, message: str, run_id: Any = None, **fields: Any) -> None:
    extra = {"event": name, **fields}
    if run_id is not None:
        extra["run_id"] = str(run_id)
        pending = pending_of(run_id) if enabled() else None
        if pending is not None:
            # Its trace (a caller's?) is being read: logged once it is known.
            pending.add_done_callback(lambda _: _emit(message, extra, run_id))
            return
    _emit(message, extra, run_id)


def _emit(message: str, extra: dict[str, Any], run_id: Any) -> None:
    if run_id is not None and enabled():
        extra["trace_id"] = trace_id_of(run_id)
    events.info(message, extra=extra)


def on_statement(function: str, args: Sequence[Any], seconds: float,
                 rows: list[dict[str, Any]] | None, error: BaseException | None) -> None:
    """The events a statement records, one log line each."""
    if function in RUN_STATEMENTS and isinstance(args[0], uuid.UUID):
        current_run.set(args[0])  # in the run's own task: its later lines carry it
    if error is not None or not events.isEnabledFor(logging.INFO):
        return
    rows = rows or []
    if function == "start_run":
        for row in rows:
            if row.get("created", True) and row.get("epoch") is not None:
                _event("run.started", f"run {row['run_id']} started", row["run_id"],
                       entry_point=str(args[4]))
    elif function == "claim_entries":
        for row in rows:
            _event("run.started", f"run {row['run_id']} started from a {row['kind']} entry",
                   row["run_id"], entry_point=str(row["kind"]))
    elif function == "sweep_lapsed":
        for row in rows:
            _event("run.lost", f"run {row['run_id']} lost by {row['lapsed_holder']} (its "
                   "lease lapsed)", row["run_id"], lost_process=row["lapsed_holder"],
                   detected_by="lease_lapsed", loss_count=row["loss_count"])
    elif function == "watch_processes":
        for row in rows:
            if row.get("runs_claimed"):
                _event("run.lost", f"{row['runs_claimed']} runs lost by {row['process_id']} "
                       "(its session ended)", lost_process=row["process_id"],
                       detected_by="session_ended", runs=row["runs_claimed"])
    elif function in ("adopt_run", "adopt_runs"):
        for row in rows:
            _event("run.resumed", f"run {row['run_id']} resumed from step {row['last_step']}",
                   row["run_id"], loss_count=row["loss_count"], last_step=row["last_step"])
    elif function == "hand_on_answer":
        _event("run.completed", f"run {args[0]} completed", args[0])
    elif function == "fail_run":
        _event("run.failed", f"run {args[0]} failed: {args[2]}", args[0], reason=args[2])
    elif function in ("record_resume", "record_resumes"):
        for run_id, settlements in settlements_of(function, args, rows):
            for item in settlements:
                _event("call.settled", f"run {run_id}: call {item.get('call_id')} settled "
                       f"{item.get('settlement')}", run_id, call_id=item.get("call_id"),
                       settlement=item.get("settlement"))
    elif function == "decide_approval":
        for row in rows:
            _event("approval.decided", f"approval {row.get('approval_id')} "
                   f"{row.get('state')} by {row.get('decided_by')}", row.get("run_id"),
                   approval_id=str(row.get("approval_id")), state=row.get("state"),
                   by=row.get("decided_by"))
    elif function == "audit_inspector_call" and args[5] != "sent":
        _event("inspector.call", f"inspector call of {args[2]} by {args[0]}: {args[5]}",
               args[1], tool=args[2], key=args[4], outcome=args[5], by=args[0])
