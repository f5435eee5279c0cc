"""Traces through OpenTelemetry (the ``otel`` extra; docs/observability.md#traces).

Nothing of OpenTelemetry is imported unless it is installed and asked for: a file of
spans (``TICKETIQ_TRACES_FILE``, one JSON object per line, each span written as it
ends), an OTLP exporter configured the standard way (``OTEL_EXPORTER_OTLP_ENDPOINT``,
with ``opentelemetry-exporter-otlp`` installed), or a tracer provider the app set itself.

**One trace per run, across processes.**  A run whose entry came with a W3C
``traceparent`` (:mod:`ticketiq_pg.observe.incoming`) is a child of the caller's span:
every process that drives it reads that context (``ticketiq.run_trace_context``).
Otherwise the run's trace is its own: the run id's 128 bits are the trace id, the root
span id is drawn from the run id (:func:`run_context`), so every process that drives
the run, the one that started it and each one that resumed it, makes its spans in the
same trace.  The root span itself is never exported (no process owns a run from its
start to its end); every process makes, under it:

* ``run <entry point>``: its attempt at the run (started, claimed from an entry, or
  adopted), ended when the run ends, is released or suspended, or is lost;
* ``resume``: on an adopted run, naming the process that lost it
  (``ticketiq.resume.lost_process``), how the loss was detected, the loss count and,
  as events, each settlement of a call the lost attempt left;
* ``step N``: from the model's call for step N to the next one (or the run's end),
  with, under it, ``chat <model>`` (the GenAI conventions: ``gen_ai.system``,
  ``gen_ai.request.model``, token usage), ``execute_tool <tool>`` (classification, a
  digest of the step key, whether it was marked in doubt, whether it was a resume's)
  and ``checkpoint write`` (its group's size).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.util
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from ticketiq_pg.config import Environment

log = logging.getLogger(__name__)

ENV_FILE = Environment.TRACES_FILE
ENABLED = False
_tracer: Any = None
_db: list[Any] = []  # the worker's driver: the resume span's one read
#: The trace id of each run traced here lately (a caller's differs from the run id).
_trace_ids: dict[uuid.UUID, str] = {}
_runs: dict[uuid.UUID, _RunTrace] = {}
#: Attempts still open after this many runs are dropped (a run lost without notice).
MAX_OPEN = 100_000


def enabled() -> bool:
    """Whether this process makes spans."""
    return ENABLED


def wanted() -> bool:
    """Whether traces are asked for and OpenTelemetry is installed."""
    if importlib.util.find_spec("opentelemetry") is None:
        return False
    if Environment.current().traces_wanted:
        return True
    if "opentelemetry.trace" not in sys.modules:
        return False  # the app set no provider up: nothing of OpenTelemetry is imported
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def configure(process_id: str) -> bool:
    """Set the tracer up once per process (False: traces are off)."""
    global ENABLED, _tracer
    if ENABLED:
        return True
    if not wanted():
        return False
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    env = Environment.current()
    if isinstance(provider, trace.ProxyTracerProvider):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        provider = TracerProvider(resource=Resource.create({
            "service.name": env.service_name,
            "service.instance.id": process_id}))
        trace_file = env.get(ENV_FILE)
        if trace_file:
            # Each span written as it ends: a SIGKILL loses only the spans still open.
            provider.add_span_processor(SimpleSpanProcessor(FileExporter(trace_file)))
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer("ticketiq_pg")
    ENABLED = True
    return True


class FileExporter:
    """Spans as JSON lines in a file (appended; one process or several)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        lines = [json.dumps(span_json(s), default=str) for s in spans]
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in lines))
            out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def span_json(span: Any) -> dict[str, Any]:
    context, parent = span.get_span_context(), span.parent
    return {
        "name": span.name, "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": f"{parent.span_id:016x}" if parent is not None else None,
        "start": span.start_time, "end": span.end_time, "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})}
                   for e in span.events],
        "process": (span.resource.attributes or {}).get("service.instance.id"),
    }


def run_context(run_id: uuid.UUID) -> Any:
    """The run's root span context: its trace id is the run id, the same on every process."""
    from opentelemetry import trace

    span_id = int.from_bytes(hashlib.sha256(run_id.bytes).digest()[:8], "big") or 1
    root = trace.SpanContext(trace_id=run_id.int or 1, span_id=span_id, is_remote=True,
                             trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    return trace.set_span_in_context(trace.NonRecordingSpan(root))


@dataclasses.dataclass
class _RunTrace:
    attempt: Any = None  # made once the run's parent is known (``pending``)
    pending: Any = None
    ended: tuple[str, bool] | None = None  # the run ended before its spans were made
    settlements: list[dict[str, str]] = dataclasses.field(default_factory=list)
    step: Any = None
    resume: Any = None
    step_no: int | None = None
    marked: set[str] = dataclasses.field(default_factory=set)


def _child(parent: Any, name: str, attributes: dict[str, Any] | None = None,
           start: int | None = None) -> Any:
    from opentelemetry import trace

    return _tracer.start_span(name, context=trace.set_span_in_context(parent),
                              attributes=attributes, start_time=start)


def _attempt(run_id: uuid.UUID, entry_point: str, how: str, row: dict[str, Any] | None = None,
             lookup: bool = True) -> _RunTrace:
    """The run's trace here; its spans are made once its parent is read (``pending``)."""
    found = _runs.get(run_id)
    if found is not None:
        return found
    if len(_runs) >= MAX_OPEN:
        for stale in list(_runs)[: MAX_OPEN // 10]:
            _end(stale, "dropped")
    _runs[run_id] = found = _RunTrace()
    found.pending = asyncio.get_running_loop().create_task(
        _open(found, run_id, entry_point, how, row, lookup))
    return found


async def _open(found: _RunTrace, run_id: uuid.UUID, entry_point: str, how: str,
                row: dict[str, Any] | None, lookup: bool) -> None:
    traceparent = None
    if lookup and _db:
        try:
            traceparent = await _db[0].audit.run_trace_context(run_id)
        except Exception:  # noqa: BLE001 - then the run's own trace
            log.debug("the trace context of run %s could not be read", run_id, exc_info=True)
    attributes = {"ticketiq.run.id": str(run_id), "ticketiq.run.entry_point": entry_point,
                  "ticketiq.run.attempt": how}
    parent = _remote(traceparent) if traceparent else run_context(run_id)
    if row is not None:
        attributes["ticketiq.run.loss_count"] = row.get("loss_count") or 0
    found.attempt = _tracer.start_span(f"run {entry_point}", context=parent,
                                       attributes=attributes)
    if len(_trace_ids) >= MAX_OPEN:
        _trace_ids.clear()
    _trace_ids[run_id] = f"{found.attempt.get_span_context().trace_id:032x}"
    if row is not None:
        found.resume = _child(found.attempt, "resume", {
            "ticketiq.run.loss_count": row.get("loss_count") or 0,
            "ticketiq.resume.last_step": row.get("last_step") or 0})
        if row.get("loss_count") and _db:
            await name_the_loss(_db[0], run_id)
        for item in found.settlements:
            found.resume.add_event("settlement", item)
        found.settlements.clear()
    if found.ended is not None:
        _runs[run_id] = found
        _end(run_id, *found.ended)


def _remote(traceparent: str) -> Any:
    from opentelemetry import trace

    _, trace_id, span_id, flags = traceparent.split("-")
    context = trace.SpanContext(trace_id=int(trace_id, 16), span_id=int(span_id, 16),
                                is_remote=True, trace_flags=trace.TraceFlags(int(flags, 16)))
    return trace.set_span_in_context(trace.NonRecordingSpan(context))


async def ready(run_id: uuid.UUID) -> _RunTrace | None:
    """The run's trace here once its spans are made (None: not traced here)."""
    found = _runs.get(run_id)
    if found is not None and found.pending is not None and not found.pending.done():
        try:
            await asyncio.shield(found.pending)
        except Exception:  # noqa: BLE001 - a trace never fails a run
            log.debug("the spans of run %s could not be made", run_id, exc_info=True)
    return _runs.get(run_id)


def _end(run_id: Any, outcome: str, error: bool = False) -> None:
    found = _runs.pop(run_id, None) if isinstance(run_id, uuid.UUID) else None
    if found is None:
        return
    if found.attempt is None:  # its spans are not made yet: ended once they are
        found.ended = (outcome, error)
        return
    from opentelemetry.trace import Status, StatusCode

    for span in (found.resume, found.step):
        if span is not None:
            span.end()
    found.attempt.set_attribute("ticketiq.run.outcome", outcome)
    if error:
        found.attempt.set_status(Status(StatusCode.ERROR, outcome))
    found.attempt.end()


def current(run_id: uuid.UUID) -> Any:
    """The span the run's next child goes under (its step, else its attempt), or None."""
    found = _runs.get(run_id)
    if found is None:
        return None
    return found.step or found.resume or found.attempt  # None until its spans are made


def trace_id_of(run_id: Any) -> str | None:
    """The run's trace id as W3C writes it (its caller's, or its run id's hex)."""
    if not isinstance(run_id, uuid.UUID):
        return None
    return _trace_ids.get(run_id) or run_id.hex


def pending_of(run_id: Any) -> Any:
    """The task still making the run's spans (its trace id is known once it is done)."""
    found = _runs.get(run_id) if isinstance(run_id, uuid.UUID) else None
    if found is None or found.pending is None or found.pending.done():
        return None
    return found.pending


# -- the hooks ---------------------------------------------------------------------


ENDS = {"hand_on_answer": "completed", "fail_run": "failed", "stop_run": "stopped",
        "release_run": "released", "suspend_run": "suspended"}


def _dicts(value: Any) -> list[dict[str, Any]]:
    inner = getattr(value, "obj", value)  # psycopg's Jsonb wrapper
    return [v for v in inner if isinstance(v, dict)] if isinstance(inner, list) else []


def settlements_of(function: str, args: Sequence[Any],
                   rows: list[dict[str, Any]]) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The settlements a ``record_resume`` or ``record_resumes`` statement recorded, by
    run: a grouped one's only for the items it recorded (the others go alone after)."""
    if function == "record_resume":
        return [(args[0], _dicts(args[2]))]
    if function != "record_resumes":
        return []
    items = getattr(args[2], "obj", args[2])
    if not isinstance(items, list):
        return []
    return [(args[0][row["item"] - 1], _dicts(items[row["item"] - 1])) for row in rows
            if 0 < int(row.get("item") or 0) <= len(items)]


def on_statement(function: str, args: Sequence[Any], seconds: float,
                 rows: list[dict[str, Any]] | None, error: BaseException | None) -> None:
    """Spans from one driver statement (its run ids are in its arguments and rows)."""
    if not ENABLED:
        return
    try:
        _on_statement(function, args, seconds, rows or [], error)
    except Exception:  # noqa: BLE001 - a trace never fails a run
        log.debug("tracing %s failed", function, exc_info=True)


def _on_statement(function: str, args: Sequence[Any], seconds: float,
                  rows: list[dict[str, Any]], error: BaseException | None) -> None:
    if error is not None:
        return
    if function == "start_run":
        for row in rows:
            if row.get("created", True) and row.get("epoch") is not None:
                # A run started by the app's code (no entry): its own trace, no read.
                _attempt(row["run_id"], str(args[4]), "started", lookup=False)
    elif function == "claim_entries":
        for row in rows:
            _attempt(row["run_id"], str(row["kind"]), "claimed")
    elif function in ("adopt_run", "adopt_runs"):
        for row in rows:
            _attempt(row["run_id"], str(row["entry_point"]), "adopted", row)
    elif function in ("write_checkpoint", "write_checkpoints"):
        end = time.time_ns()
        start = end - int(seconds * 1e9)
        run_ids = args[0] if function == "write_checkpoints" else [args[0]]
        steps = args[2] if function == "write_checkpoints" else [args[2]]
        for run_id, step in zip(run_ids, steps, strict=False):
            parent = current(run_id)
            if parent is not None:
                _child(parent, "checkpoint write", {
                    "ticketiq.step": step, "ticketiq.checkpoint.group_size": len(run_ids)},
                    start).end(end_time=end)
    elif function == "mark_in_doubt":
        found = _runs.get(args[0])
        if found is not None:
            found.marked.add(str(args[3]))
    elif function in ("record_resume", "record_resumes"):
        for run_id, settlements in settlements_of(function, args, rows):
            found = _runs.get(run_id)
            for item in settlements if found is not None else []:
                event = {"ticketiq.call.id": str(item.get("call_id")),
                         "ticketiq.call.settlement": str(item.get("settlement"))}
                if found.resume is not None:
                    found.resume.add_event("settlement", event)
                elif found.attempt is None:
                    found.settlements.append(event)  # added once the resume span is made
    elif function == "renew_leases" and args[4] == "run":
        for row in rows:
            if not row.get("held"):
                _end(row["lease_id"], "lost", error=True)
    elif function in ENDS:
        _end(args[0], ENDS[function], error=function == "fail_run")


async def name_the_loss(db: Any, run_id: uuid.UUID) -> None:
    """Name, on the resume span, the process that lost the run and how (one read)."""
    found = _runs.get(run_id)
    if found is None or found.resume is None:
        return
    try:
        losses = await db.audit.run_losses(run_id)
    except Exception:  # noqa: BLE001 - the span goes without the name
        return
    if losses and found.resume is not None:
        last = losses[-1]
        found.resume.set_attribute("ticketiq.resume.lost_process", str(last["lapsed_holder"]))
        found.resume.set_attribute("ticketiq.resume.detected_by", str(last["detected_by"]))


# -- the model and the tools ---------------------------------------------------------


async def model_span(request: Any, provider: str, model_name: str | None) -> Any:
    """The span of one model call; its step's span begins here (the previous one ends)."""
    found = await ready(request.run_id)
    if found is None or found.attempt is None:
        return None
    if found.step_no != request.step:
        if found.step is not None:
            found.step.end()
        if found.resume is not None:
            found.resume.end()  # settled: the resume ends where the next step begins
            found.resume = None
        found.step = _child(found.attempt, f"step {request.step}", {"ticketiq.step": request.step})
        found.step_no = request.step
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": provider}
    if model_name:
        attributes["gen_ai.request.model"] = model_name
    return _child(found.step, f"chat {model_name or provider}", attributes)


def end_model_span(span: Any, answer: Any, error: BaseException | None) -> None:
    if span is None:
        return
    if error is not None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
    elif answer is not None:
        usage = answer.usage or {}
        for ours, theirs in (("input_tokens", "gen_ai.usage.input_tokens"),
                             ("output_tokens", "gen_ai.usage.output_tokens")):
            if isinstance(usage.get(ours), int):
                span.set_attribute(theirs, usage[ours])
        if answer.request_id:
            span.set_attribute("gen_ai.response.id", str(answer.request_id))
        span.set_attribute("ticketiq.tool_calls", len(answer.calls))
    span.end()


class TracedTools:
    """The app's tools, each call (and read-back) a span under its run's step."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._wrapped: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __contains__(self, name: str) -> bool:
        return name in self.inner

    def get(self, name: str) -> Any:
        tool = self.inner.get(name)
        if tool is None or tool.invoke is None:
            return tool
        cached = self._wrapped.get(name)
        if cached is None or cached[0] is not tool:
            replaced = dataclasses.replace(
                tool, invoke=_traced(tool.invoke, "execute_tool"),
                read_back=_traced(tool.read_back, "read_back") if tool.read_back else None)
            cached = self._wrapped[name] = (tool, replaced)
        return cached[1]


def _traced(invoke: Any, operation: str) -> Any:
    async def call(context: Any) -> Any:
        found = await ready(context.run.run_id)
        parent = current(context.run.run_id)
        if parent is None:
            return await invoke(context)
        key = context.step_key
        span = _child(parent, f"{operation} {context.tool}", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": context.tool,
            "gen_ai.tool.call.id": context.call_id,
            "ticketiq.call.classification": context.classification,
            "ticketiq.call.key_digest": hashlib.sha256(key.encode()).hexdigest()[:16]
            if key else "",
            "ticketiq.call.marked_in_doubt": bool(found and context.call_id in found.marked),
            "ticketiq.call.resumed": context.resumed})
        try:
            result = await invoke(context)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                from opentelemetry.trace import Status, StatusCode

                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            span.end()
            raise
        span.end()
        return result
    return call


def attach(worker: Any) -> None:
    """Trace a worker's runs (when traces are asked for): its tools and its model."""
    if not configure(worker.process_id):
        return
    _db[:] = [worker.db]  # the newest worker's driver (a test process starts several)
    runner = worker.runner
    if runner is not None and not isinstance(runner.tools, TracedTools):
        runner.tools = TracedTools(runner.tools)
