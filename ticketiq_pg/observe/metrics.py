"""Prometheus metrics through ``prometheus_client`` (docs/observability.md#metrics).

Two kinds of figure, and they must not be mixed up:

* **per process** (``ticketiq_*`` but ``ticketiq_database_*``): what this process did
  since it started: counters of the statements it sent (runs started, checkpoints and
  their group sizes, calls marked in doubt, settlements, lease renewals, losses it
  claimed, runs it adopted), its model calls, its inspector calls, its runs ended, the
  state of its liveness watch, its pool.  Sum them across processes.
* **from the database** (``ticketiq_database_*``): read from the ``ticketiq`` tables at
  each scrape, the same whichever process answers.  Never sum them across processes:
  take ``max`` or scrape one process for them (``TICKETIQ_METRICS_DATABASE=0`` turns
  them off on the others).

Labels are bounded: entry points (the app's kinds), statuses, settlements, SQL function
names, providers, HTTP statuses; never a run id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from ticketiq_pg.agent import CLASSIFICATIONS, ModelStep
from ticketiq_pg.config import Environment
from ticketiq_pg.observe.tracing import settlements_of

log = logging.getLogger(__name__)

#: Statements, process-wide (every driver of this process): registered in SHARED.
SHARED = CollectorRegistry(auto_describe=True)
FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
SLOW = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0)


def _counter(name: str, doc: str, *labels: str) -> Counter:
    return Counter(name, doc, list(labels), registry=SHARED)


def _histogram(name: str, doc: str, buckets: Sequence[float], *labels: str) -> Histogram:
    return Histogram(name, doc, list(labels), buckets=buckets, registry=SHARED)


STATEMENT_SECONDS = _histogram("ticketiq_db_statement_seconds",
                               "Time of one ticketiq.* statement, by SQL function.", FAST,
                               "function")
STATEMENT_ERRORS = _counter("ticketiq_db_statement_errors_total",
                            "Statements that raised, by SQL function.", "function")
RUNS_STARTED = _counter("ticketiq_runs_started_total",
                        "Runs this process started, by entry point.", "entry_point")
RUNS_ADOPTED = _counter("ticketiq_runs_adopted_total", "Runs this process adopted to resume "
                        "(after a loss, a wake or a hand-over).")
LOSSES = _counter("ticketiq_losses_claimed_total", "Runs of a lost process this process "
                  "claimed, by how the loss was detected.", "detected_by")
CHECKPOINT_SECONDS = _histogram("ticketiq_checkpoint_write_seconds", "Time of one checkpoint "
                                "statement (a group commit writes several).", FAST)
GROUP_SIZE = _histogram("ticketiq_checkpoint_group_size",
                        "Checkpoints written by one statement.", (1, 2, 4, 8, 16, 32, 64, 128))
MARKED = _counter("ticketiq_calls_marked_in_doubt_total", "Changing calls marked in doubt "
                  "before they were made, by classification.", "classification")
SETTLED = _counter("ticketiq_calls_settled_total", "Calls a lost attempt left, settled by a "
                   "resume here, by settlement.", "settlement")
RENEWALS = _counter("ticketiq_lease_renewals_total", "Run leases renewed (renewed), found no "
                    "longer held (lost), or in a statement that failed (failed).", "result")
MODEL_CALLS = _counter("ticketiq_model_calls_total",
                       "Model steps asked, by provider and outcome (ok, error).",
                       "provider", "outcome")
MODEL_ERRORS = _counter("ticketiq_model_errors_total",
                        "Model steps that failed, by provider and HTTP status.",
                        "provider", "status")
MODEL_RETRIES = _counter("ticketiq_model_retries_total",
                         "Model steps asked again after a failure, by provider.", "provider")
MODEL_SECONDS = _histogram("ticketiq_model_call_seconds", "Time of one model step, by "
                           "provider.", SLOW, "provider")
MODEL_TOKENS = _counter("ticketiq_model_tokens_total",
                        "Tokens the provider reported, by provider and kind.", "provider",
                        "kind")
INSPECTOR_CALLS = _counter("ticketiq_inspector_calls_total",
                           "Operators' ad hoc calls (the inspector), by outcome.", "outcome")

SETTLEMENTS = ("made", "redone", "coalesced", "read_decision", "resent_same_key",
               "asked_again", "read_back", "unknown", "skipped", "already_made")
DETECTED_BY = ("lease_lapsed", "session_ended")
INSPECTOR_OUTCOMES = ("made", "refused", "failed", "not_applied", "read_back", "unknown")
KNOWN_VALUES = {"losses": DETECTED_BY, "settlements": (*SETTLEMENTS, "other"),
                "inspector": INSPECTOR_OUTCOMES}

# Every child whose label values are known starts at 0, so the first event is an
# increase a rule sees (a series born at 1 has no increase()).
for _value in (*SETTLEMENTS, "other"):
    SETTLED.labels(_value)
for _value in ("renewed", "lost", "failed"):
    RENEWALS.labels(_value)
for _value in DETECTED_BY:
    LOSSES.labels(_value)
for _value in INSPECTOR_OUTCOMES:
    INSPECTOR_CALLS.labels(_value)
for _value in CLASSIFICATIONS:
    if _value != "read":
        MARKED.labels(_value)


def on_statement(function: str, args: Sequence[Any], seconds: float,
                 rows: list[dict[str, Any]] | None, error: BaseException | None) -> None:
    """Count one driver statement into the per-process figures."""
    STATEMENT_SECONDS.labels(function).observe(seconds)
    if error is not None:
        STATEMENT_ERRORS.labels(function).inc()
        if function == "renew_leases" and _of_runs(args):
            RENEWALS.labels("failed").inc(len(args[1] or ()))
        return
    rows = rows or []
    if function == "start_run":
        if rows and rows[0].get("created", True):
            RUNS_STARTED.labels(str(args[4])).inc()
    elif function == "claim_entries":
        # each entry claimed starts its run here, the entry's kind its entry point
        for row in rows:
            RUNS_STARTED.labels(str(row.get("kind"))).inc()
    elif function in ("write_checkpoint", "write_checkpoints"):
        CHECKPOINT_SECONDS.observe(seconds)
        GROUP_SIZE.observe(len(args[0]) if function == "write_checkpoints" else 1)
    elif function == "mark_in_doubt":
        if rows and not rows[0].get("already_marked"):
            MARKED.labels(str(rows[0].get("marked_classification") or args[4])).inc()
    elif function in ("record_resume", "record_resumes"):
        for _run_id, settlements in settlements_of(function, args, rows):
            for item in settlements:
                settlement = str(item.get("settlement"))
                SETTLED.labels(settlement if settlement in SETTLEMENTS else "other").inc()
    elif function == "renew_leases" and _of_runs(args):
        held = sum(1 for r in rows if r.get("held"))
        RENEWALS.labels("renewed").inc(held)
        RENEWALS.labels("lost").inc(len(rows) - held)
    elif function in ("adopt_run", "adopt_runs"):
        RUNS_ADOPTED.inc(len(rows))
    elif function == "sweep_lapsed":
        LOSSES.labels("lease_lapsed").inc(len(rows))
    elif function == "audit_inspector_call" and args[5] != "sent":
        INSPECTOR_CALLS.labels(str(args[5])).inc()
    elif function == "watch_processes":
        LOSSES.labels("session_ended").inc(sum(int(r.get("runs_claimed") or 0) for r in rows))


def _of_runs(args: Sequence[Any]) -> bool:
    """A renewal of run leases (the one renewal serves jobs too: kind, its fifth argument)."""
    return len(args) < 5 or args[4] in (None, "run")


# -- the model ------------------------------------------------------------------------


def observe_model(provider: str, seconds: float, answer: ModelStep | None,
                  error: BaseException | None, retry: bool) -> None:
    MODEL_SECONDS.labels(provider).observe(seconds)
    if retry:
        MODEL_RETRIES.labels(provider).inc()
    if error is not None:
        from ticketiq_pg.retries import status_of

        MODEL_CALLS.labels(provider, "error").inc()
        MODEL_ERRORS.labels(provider, str(status_of(error) or "none")).inc()
        return
    MODEL_CALLS.labels(provider, "ok").inc()
    for kind, count in ((answer.usage or {}) if answer is not None else {}).items():
        if kind in ("input_tokens", "output_tokens", "cached_tokens") and isinstance(count, int):
            MODEL_TOKENS.labels(provider, kind.removesuffix("_tokens")).inc(count)


# -- a worker's figures, read at each scrape ------------------------------------------


class WorkerCollector(Collector):
    """Figures of one worker read when scraped: runs ended, held, liveness, the pool."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def collect(self) -> Iterator[Any]:
        w = self.worker
        ended = CounterMetricFamily("ticketiq_runs_ended", "Runs this process ended, by "
                                    "status (released: handed over at shutdown).",
                                    labels=["status"])
        for status, count in sorted(dict(w.ended).items()):
            ended.add_metric([status], count)
        yield ended
        held = GaugeMetricFamily("ticketiq_runs_held", "Run leases this process holds now.")
        held.add_metric([], len(w.leases.held()) if w.leases is not None else 0)
        yield held
        leader = GaugeMetricFamily("ticketiq_sweep_leader", "1 while this process sweeps.")
        leader.add_metric([], 1 if w.is_leader else 0)
        yield leader
        liveness = GaugeMetricFamily(
            "ticketiq_liveness_state", "This process's liveness watch: 1 for its state now "
            "(ok: token held and confirmed; unconfirmed; down: not held; off).",
            labels=["state"])
        state = _liveness_state(w.liveness)
        for name in ("ok", "unconfirmed", "down", "off"):
            liveness.add_metric([name], 1 if name == state else 0)
        yield liveness
        single: list[tuple[type, str, str, float]] = []
        if w.liveness is not None:
            single += [
                (CounterMetricFamily, "ticketiq_liveness_drops",
                 "Times this process's liveness connection dropped.", w.liveness.drops),
                (CounterMetricFamily, "ticketiq_liveness_calls_held",
                 "Times an outside call waited for a fresher liveness confirmation.",
                 w.liveness.calls_held)]
        setup = getattr(getattr(w, "runner", None), "setup", None)
        if setup is not None:
            single += [
                (GaugeMetricFamily, "ticketiq_resumes_pending",
                 "Runs this process adopted whose first step here is not written yet.",
                 setup.resumes.pending),
                (CounterMetricFamily, "ticketiq_steps_waited_for_resumes",
                 "Steps that waited for a takeover's resumes to take their first step.",
                 setup.resumes.waited)]
        for family, name, what, value in single:
            metric = family(name, what)
            metric.add_metric([], value)
            yield metric
        pool = getattr(w.db, "pool", None)
        if pool is not None:
            stats = pool.get_stats()
            for name, key, what in (
                    ("ticketiq_db_pool_size", "pool_size", "Connections the pool has open."),
                    ("ticketiq_db_pool_available", "pool_available",
                     "Connections idle in the pool."),
                    ("ticketiq_db_pool_max", "pool_max", "The pool's maximum size."),
                    ("ticketiq_db_pool_waiting", "requests_waiting",
                     "Requests waiting for a connection now.")):
                gauge = GaugeMetricFamily(name, what)
                gauge.add_metric([], stats.get(key, 0))
                yield gauge
        yield from _refusals()


def _liveness_state(liveness: Any) -> str:
    if liveness is None:
        return "off"
    if liveness.may_call():
        return "ok"
    return "unconfirmed" if liveness.ok.is_set() else "down"


#: The front's refusals by reason (front/refusals.py), set by the front when it is made
#: (front/metrics_api.py): the front is a layer above, so it is handed down, not imported.
refusal_counts: Callable[[], Mapping[str, int]] | None = None


def _refusals() -> Iterator[Any]:
    """The front's refusals by reason, where a front in this process counts them."""
    if refusal_counts is None:
        return
    family = CounterMetricFamily("ticketiq_front_refusals",
                                 "Requests the front refused, by reason.", labels=["reason"])
    for reason, count in sorted(refusal_counts().items()):
        family.add_metric([str(reason)], count)
    yield family


class _Shared(Collector):
    def collect(self) -> Iterator[Any]:
        yield from SHARED.collect()


class DatabaseCollector(Collector):
    """Figures from the database, read at each scrape (the same on every process)."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo

    def collect(self) -> Iterator[Any]:
        from ticketiq_pg.db.figures import database_figures

        try:
            figures = database_figures(self.conninfo)
        except Exception as exc:  # noqa: BLE001 - a scrape still gets the process's figures
            log.warning("the database's figures could not be read: %s", exc)
            up = GaugeMetricFamily("ticketiq_database_up", "1 when the figures were read.")
            up.add_metric([], 0)
            yield up
            return
        up = GaugeMetricFamily("ticketiq_database_up", "1 when the figures were read.")
        up.add_metric([], 1)
        yield up
        runs = GaugeMetricFamily("ticketiq_database_runs", "Runs by status and entry point.",
                                 labels=["status", "entry_point"])
        for status, entry_point, count in figures["runs"]:
            runs.add_metric([status, entry_point], count)
        yield runs
        for name, key, what, label in (
                ("ticketiq_database_losses", "losses",
                 "Losses recorded (agent.run.lease_lapsed), by how they were detected.",
                 "detected_by"),
                ("ticketiq_database_settlements", "settlements",
                 "Settlements of calls a lost attempt left, by settlement.", "settlement"),
                ("ticketiq_database_inspector_calls", "inspector",
                 "Operators' ad hoc calls audited, by outcome.", "outcome")):
            family = CounterMetricFamily(name, what, labels=[label])
            found = dict(figures[key])
            for value in KNOWN_VALUES[key]:  # known values from 0: increase() sees the first
                found.setdefault(value, 0)
            for value, count in found.items():
                family.add_metric([value], count)
            yield family
        resumes = CounterMetricFamily(
            "ticketiq_database_resumes", "Resumes audited, by event (crash_resumed after a "
            "loss, resumed otherwise) and how the loss was detected.",
            labels=["event", "detected_by"])
        for event, detected_by, count in figures["resumes"]:
            resumes.add_metric([event, detected_by], count)
        yield resumes
        for name, key, what in (
                ("ticketiq_database_calls_in_doubt", "in_doubt",
                 "Calls marked in doubt and not settled yet."),
                ("ticketiq_database_approvals_waiting", "approvals_waiting",
                 "Writes held for a person's approval, not decided yet."),
                ("ticketiq_database_processes_alive", "processes_alive",
                 "Processes holding their liveness token (not stopped)."),
                ("ticketiq_database_runs_lost_twice", "lost_twice",
                 "Runs lost twice or more (the next loss fails them, by default)."),
                ("ticketiq_database_leases_lapsed", "leases_lapsed",
                 "Runs whose lease has lapsed and that nobody claimed yet.")):
            gauge = GaugeMetricFamily(name, what)
            gauge.add_metric([], figures[key])
            yield gauge
        vendor_labels = ["vendor", "scope"]
        for name, column, what, kind in (
                ("ticketiq_database_vendor_tokens_taken", 2,
                 "Vendor tokens taken (calls let through), by vendor and bucket.", "counter"),
                ("ticketiq_database_vendor_waits", 3,
                 "Takes that had to wait for a vendor's token.", "counter"),
                ("ticketiq_database_vendor_slowdowns", 4,
                 "429/503 with Retry-After that slowed every process's calls.", "counter"),
                ("ticketiq_database_vendor_calls_in_flight", 5,
                 "Calls in flight under a vendor's concurrency.", "gauge"),
                ("ticketiq_database_vendor_tokens", 6,
                 "Tokens in a vendor's bucket now.", "gauge"),
                ("ticketiq_database_vendor_suspensions", 7,
                 "Runs suspended to wait for a vendor's token (their lease given up).",
                 "counter"),
                ("ticketiq_database_vendor_runs_suspended", 8,
                 "Runs suspended for a vendor's token now, waiting for their turn.", "gauge")):
            family = (CounterMetricFamily(name, what, labels=vendor_labels) if kind == "counter"
                      else GaugeMetricFamily(name, what, labels=vendor_labels))
            for row in figures["vendors"]:
                family.add_metric([row[0], row[1]], row[column])
            yield family
        waiting = GaugeMetricFamily("ticketiq_database_runs_waiting_to_start",
                                    "Entries waiting to start, by owner and priority.",
                                    labels=["owner", "priority"])
        for owner, priority, count in figures["waiting_to_start"]:
            waiting.add_metric([owner, priority], count)
        yield waiting
        unrunnable = GaugeMetricFamily(
            "ticketiq_database_workflow_runs_unrunnable",
            "Waiting workflow runs whose version no live process can run, by workflow, "
            "version and status (claimed: woken; suspended: asleep).",
            labels=["workflow", "version", "status"])
        for workflow, version, status, count in figures["unrunnable"]:
            unrunnable.add_metric([workflow, version, status], count)
        yield unrunnable
        buckets, total, count = figures["resume_seconds"]
        histogram = HistogramMetricFamily(
            "ticketiq_database_resume_seconds",
            "From a lost process's last sign of life (its last lease renewal) to each of "
            "its runs' next step on the process that resumed it.")
        histogram.add_metric([], buckets, total)
        yield histogram


def registry_for(worker: Any, *, database: bool | None = None) -> CollectorRegistry:
    """The registry a scrape of ``worker`` reads: the process's figures, the worker's and
    (unless ``TICKETIQ_METRICS_DATABASE=0``) the database's."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Shared())
    registry.register(WorkerCollector(worker))
    if database is None:
        database = Environment.current().metrics_database
    url = worker.settings.database_url
    if database and url:
        registry.register(DatabaseCollector(url))
    return registry


async def exposition(registry: CollectorRegistry) -> bytes:
    """The text a scrape gets (read off the event loop: the database's figures block)."""
    return await asyncio.to_thread(generate_latest, registry)


class MetricsServer:
    """``/metrics`` on a port of its own, for a worker without a front (a service of the
    worker: ``Worker(..., services=[MetricsServer(9464)])``).  No credential: keep it on
    a private address (``host``, default 127.0.0.1) that only Prometheus reaches."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self.port, self.host = port, host
        self._server: Any = None

    async def start(self, worker: Any) -> None:
        from prometheus_client import start_http_server

        server, _ = await asyncio.to_thread(start_http_server, self.port, self.host,
                                            registry_for(worker))
        self._server = server
        self.port = int(server.server_port)
        log.info("worker %s serves /metrics on %s:%s", worker.process_id, self.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            await asyncio.to_thread(self._server.shutdown)
            self._server.server_close()
            self._server = None


def database_registry(url: str | None) -> CollectorRegistry:
    """A front without a worker: the process's statements and the database's figures."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Shared())
    if url:
        registry.register(DatabaseCollector(url))
    return registry
