"""Traces (ticketiq_pg/observe/tracing.py): one trace per run, across a SIGKILL.

Two workers of the triage example export their spans to files of their own
(``TICKETIQ_TRACES_FILE``).  Every other ticket event, and a ``POST /runs``, come with
a caller's W3C ``traceparent``: their runs' spans are children of the caller's span.
The victim takes every run and is SIGKILLed mid-run; the survivor resumes them.  From
the files alone: each resumed run's spans on both processes carry one trace id (the
caller's, or the run's own), the survivor's resume span names the victim, the loss
count and each settlement the database recorded for that resume, and the model calls
carry the GenAI conventions' attributes.  The same workers log JSON lines
(``TICKETIQ_LOG_FORMAT=json``): the runs started, lost, resumed and completed and each
call settled, with the run id and its trace id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from test_example_app import EXAMPLE, Example
from test_metrics import kill_round

from ticketiq_pg import new_seal_key
from ticketiq_pg.testing import WorkerProcess, fresh_database, make_api_key, runs, wait_for

pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'ticketiq-pg[otel]'")


CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_resumed_runs_spans_share_its_trace_across_a_kill(
        pg_server_url: str, tmp_path: Path) -> None:
    service = Example("", tmp_path)
    service.start_service()
    tickets = [f"T-{i}" for i in range(1, 5)]
    for ticket in tickets:
        httpx.post(f"{service.service_url}/tickets", json={
            "id": ticket, "title": "Export fails", "body": "An error."}).raise_for_status()
    keys = new_seal_key()
    # Every other ticket event comes with a caller's trace context.
    traceparents = {t: f"00-{i:032x}-{i + 0xABC:016x}-01"
                    for i, t in enumerate(tickets, start=1) if i % 2}
    files = {name: tmp_path / f"{name}.spans.jsonl" for name in ("victim", "survivor")}
    try:
        with fresh_database(pg_server_url) as db:
            client = make_api_key(db, "triage-client")

            def worker(name: str, **env: str) -> WorkerProcess:
                return WorkerProcess(
                    "app:app", db, seal_keys=keys, name=name, app_dir=EXAMPLE, http=True,
                    log_dir=tmp_path, env={"TRIAGE_SERVICE_URL": service.service_url,
                                           "TRIAGE_THINK_SECONDS": "1",
                                           "TICKETIQ_TRACES_FILE": str(files[name]),
                                           "TICKETIQ_LOG_FORMAT": "json", **env})

            with worker("victim") as victim, worker(
                    "survivor", TICKETIQ_ENTRY_CLAIM_DELAY="60") as survivor:
                # POST /runs with a traceparent (the triage gates refuse a run that is
                # no ticket event: it fails at once, in the caller's trace all the same).
                started = httpx.post(f"{victim.url}/runs", json={"input": {}}, headers={
                    "Authorization": f"Bearer {client}", "Idempotency-Key": "traced-1",
                    "traceparent": CALLER})
                assert started.status_code == 202, started.text
                posted = started.json()["run_id"]
                wait_for("the run to end", lambda: runs(db, statuses=["failed"]), 30)
                kill_round(victim, client, tickets, db, traceparents)
                survivor.stop()
                logs = {w.name: [json.loads(line) for line in w.log().splitlines()]
                        for w in (victim, survivor)}
            with psycopg.connect(db) as conn:
                resumed = conn.execute(
                    "select run_id, detail -> 'settlements', detail ->> 'loss_count' "
                    "from ticketiq.audit where event = 'agent.run.crash_resumed'").fetchall()
                # The runs the victim had written a step of before it was killed.
                entries = conn.execute("select run_id, sender_id from ticketiq.entries "
                                       "where kind = 'ticket_event'").fetchall()
                entries = [(r, s.removeprefix("created:")) for r, s in entries]
                stepped = dict(conn.execute(
                    "select k.run_id, count(*) from ticketiq.checkpoints as k inner join "
                    "ticketiq.audit as a on a.run_id = k.run_id and a.event = "
                    "'agent.run.crash_resumed' and k.epoch < a.epoch group by 1").fetchall())
    finally:
        service.close()

    before, after = spans(files["victim"]), spans(files["survivor"])
    assert resumed and before and after and len(stepped) >= 2
    ticket_of = {str(r): t for r, t in entries}
    checkpoint_spans = 0
    for run_id, settlements, _ in resumed:
        # A ticket event that came with a traceparent: the caller's trace; else the run's.
        sent = traceparents.get(ticket_of[str(run_id)])
        trace_id = sent.split("-")[1] if sent else run_id.hex
        mine = [s for s in before if s["trace_id"] == trace_id]
        theirs = [s for s in after if s["trace_id"] == trace_id]
        if run_id in stepped:
            # Steps the victim finished (a model call, a checkpoint) before the kill.  The
            # SIGKILL may fall between a checkpoint's commit and its span's end: the last
            # checkpoint's span may be missing, never an earlier one, nor a model call's.
            names_before = [s["name"] for s in mine]
            assert names_before.count("checkpoint write") >= stepped[run_id] - 1, run_id
            assert len([n for n in names_before if n.startswith("chat ")]) >= stepped[
                run_id], run_id
            checkpoint_spans += names_before.count("checkpoint write")
        # ...and the survivor's resume and later steps, in the same trace.
        names = {s["name"] for s in theirs}
        assert {"resume", "run ticket_event"} <= names, (run_id, names)
        (resume,) = [s for s in theirs if s["name"] == "resume"]
        assert resume["attributes"]["ticketiq.resume.lost_process"] == "victim"
        assert resume["attributes"]["ticketiq.resume.detected_by"] == "session_ended"
        assert resume["attributes"]["ticketiq.run.loss_count"] == 1
        assert [(e["attributes"]["ticketiq.call.id"], e["attributes"]["ticketiq.call.settlement"])
                for e in resume["events"] if e["name"] == "settlement"] == [
            (s["call_id"], s["settlement"]) for s in settlements]
        (attempt,) = [s for s in theirs if s["name"] == "run ticket_event"]
        assert resume["parent_id"] == attempt["span_id"]
        assert attempt["attributes"]["ticketiq.run.outcome"] == "completed"
        # Both attempts hang from the run's root span: the same parent on both processes.
        roots = {s["parent_id"] for s in before + after
                 if s["trace_id"] == trace_id and s["name"] == "run ticket_event"}
        assert len(roots) == 1
        if sent:
            assert roots == {sent.split("-")[2]}  # the caller's span is the parent
    # The kill came once a second run had written its first step: the first had had a
    # poll's time at least to end its checkpoint's span.
    assert checkpoint_spans >= 1
    assert any(settlements for _, settlements, _ in resumed)
    assert any(traceparents.get(ticket_of[str(r)]) for r, _, _ in resumed)
    (attempt,) = [s for s in before if s["name"] == "run run"]
    assert (attempt["trace_id"], attempt["parent_id"]) == tuple(CALLER.split("-")[1:3])
    assert attempt["attributes"]["ticketiq.run.id"] == posted

    # The logs: JSON lines, the events with the run id and its trace id.
    def logged(worker: str, event: str) -> list[dict[str, Any]]:
        return [line for line in logs[worker] if line.get("event") == event]
    assert {line["run_id"] for line in logged("victim", "run.started")} >= {
        str(r) for r, _, _ in resumed}
    trace_of = {str(r): (traceparents[t].split("-")[1] if t in traceparents else r.hex)
                for r, t in entries}
    assert {(line["run_id"], line["trace_id"]) for line in logged("survivor", "run.resumed")
            } == {(str(r), trace_of[str(r)]) for r, _, _ in resumed}
    assert all(line["trace_id"] == trace_of[line["run_id"]]
               for worker in logs for line in logs[worker] if line.get("run_id") in trace_of)
    assert [line["lost_process"] for line in logged("survivor", "run.lost")] == ["victim"]
    assert sorted((line["run_id"], line["call_id"], line["settlement"])
                  for line in logged("survivor", "call.settled")) == sorted(
        (str(r), s["call_id"], s["settlement"]) for r, settled, _ in resumed for s in settled)
    assert {line["run_id"] for line in logged("survivor", "run.completed")} >= {
        str(r) for r, _, _ in resumed}
    chats = [s for s in before + after if s["name"].startswith("chat ")]
    assert all(s["attributes"]["gen_ai.operation.name"] == "chat" and
               s["attributes"]["gen_ai.system"] for s in chats)
    tools = [s for s in after if s["name"].startswith("execute_tool ")]
    assert tools and all("ticketiq.call.classification" in s["attributes"] for s in tools)


@pytest.mark.parametrize("delay", [None, "500"])
def test_otlp_spans_wait_for_the_batch_and_the_documented_setting_shortens_the_wait(
        delay: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a SIGKILL takes with it over OTLP (docs/observability.md, *A killed process's
    last spans*): the batch processor the worker builds for OTLP holds an ended span until
    OTEL_BSP_SCHEDULE_DELAY passes (5 s by default: a kill within it loses the span);
    with the page's recommended 500 ms it has left within a second."""
    import re
    import time

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    page = (Path(__file__).resolve().parents[1] / "docs" / "observability.md").read_text()
    section = page.split("### A killed process's last spans, over OTLP", 1)[1]
    # It opens with the answer: the setting and its value, and what to believe.
    opening = section.strip().split("\n\n", 1)[0]
    recommended = re.search(r"`OTEL_BSP_SCHEDULE_DELAY=(\d+)`", opening)
    assert recommended is not None and "resume" in opening, opening
    assert "default 5000" in section
    if delay is None:
        monkeypatch.delenv("OTEL_BSP_SCHEDULE_DELAY", raising=False)
    else:
        assert delay == recommended.group(1)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", delay)
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exported))
    try:
        # A first span wakes the exporter's thread; the one measured ends after it.
        provider.get_tracer("t").start_span("first").end()
        time.sleep(0.1)
        ended = time.monotonic()
        provider.get_tracer("t").start_span("step 3").end()
        while time.monotonic() - ended < 1.5 and not any(
                s.name == "step 3" for s in exported.get_finished_spans()):
            time.sleep(0.02)
        left = any(s.name == "step 3" for s in exported.get_finished_spans())
        assert left == (delay is not None), (delay, time.monotonic() - ended)
    finally:
        provider.shutdown()
