"""What an operator's monitoring reads: metrics, traces and structured logs (docs/observability.md).

The runtime calls in here once: :func:`attach`, when a worker has its runner
(``runtime/worker.py``); it hooks every driver statement
(``db.transport.STATEMENT_HOOKS``) and wraps the app's model to count and trace its calls.
Everything else reads the worker and the database when scraped.  Without
``prometheus_client`` (the ``http`` extra) the metrics are off; without the
``otel`` extra no OpenTelemetry module is imported and no span is made.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ticketiq_pg.db.transport import BEFORE_STATEMENT, STATEMENT_HOOKS

#: Whether the metrics are kept (prometheus_client is installed).
METRICS = importlib.util.find_spec("prometheus_client") is not None

_installed: list[bool] = []


def attach(worker: Any) -> None:
    """Observe a worker that has just made its runner: its model's calls, its figures.

    The first worker of a process installs the statement hooks: a process that only
    uses the driver (the CLI, a script) imports neither prometheus_client nor OpenTelemetry.
    """
    if not _installed:
        _install()
    from ticketiq_pg.observe import tracing
    from ticketiq_pg.observe.model import ObservedModel

    tracing.attach(worker)
    runner = worker.runner
    if (METRICS or tracing.ENABLED) and not isinstance(runner.model, ObservedModel):
        runner.model = ObservedModel(runner.model, METRICS)


def _install() -> None:
    from ticketiq_pg.observe import incoming, logs, tracing

    _installed.append(True)
    BEFORE_STATEMENT.append(incoming.record_incoming)
    # Traces first: a run's trace is known (or being read) when its event is logged.
    STATEMENT_HOOKS.append(tracing.on_statement)  # a no-op while traces are off
    STATEMENT_HOOKS.append(logs.on_statement)
    if METRICS:
        from ticketiq_pg.observe import metrics

        STATEMENT_HOOKS.append(metrics.on_statement)
