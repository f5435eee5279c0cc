"""What an app hands a worker: its model, tools, gates, deliveries, jobs and hooks.

An app module exposes an :class:`App` (or a function that returns one); ``ticketiq-pg
worker --app module:name`` loads it, and :class:`~ticketiq_pg.runtime.worker.Worker`
runs it.  Start-up hooks run before the worker takes any work, shut-down hooks after
it has released every run, so an app's async clients live inside the event loop.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ticketiq_pg.agent import AnswerDelivery, Delivery, Gates, Model, Tools, VendorLimit
from ticketiq_pg.retries import RetryPolicy
from ticketiq_pg.runtime.entries import EntryKind, builtin_kinds
from ticketiq_pg.runtime.jobs import Handler
from ticketiq_pg.workflow import Workflow

log = logging.getLogger(__name__)

#: A start-up or shut-down hook: a function of no arguments, sync or async.
Hook = Callable[[], Awaitable[None] | None]
H = TypeVar("H", bound=Callable[..., object])


@dataclass
class App:
    """An agent app: the model and tools every run uses, and what else the process runs.

    ``gates`` default to allowing everything; ``deliver`` receives each carried run's
    answer; ``deliveries`` deliver an entry point's answer (``teams``: the reply, posted
    once); ``jobs`` are background job handlers by kind (see :meth:`job`).
    """

    model: Model
    tools: Tools
    gates: Gates | None = None
    deliver: Delivery | None = None
    agent_loop: str = "main"
    deliveries: dict[str, AnswerDelivery] = field(default_factory=dict)
    jobs: dict[str, Handler] = field(default_factory=dict)
    on_startup: list[Hook] = field(default_factory=list)
    on_shutdown: list[Hook] = field(default_factory=list)
    #: Retry policies and limits for this app's runs (None: from the Settings).
    model_retry: RetryPolicy | None = None
    tool_retry: RetryPolicy | None = None
    max_steps: int | None = None
    deadline: float | None = None
    #: Entry kinds by name: the built-in ones and those :meth:`entry_kind` registers.
    kinds: dict[str, EntryKind] = field(default_factory=builtin_kinds)
    #: The app's workflows (:meth:`workflow` registers one and its entry kind).
    workflows: list[Workflow] = field(default_factory=list)
    #: Limits by vendor (``Tool.vendor``), written to the database when a worker starts.
    vendor_limits: dict[str, VendorLimit] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, kind in self.kinds.items():
            if kind.delivery is not None:
                self.deliveries.setdefault(name, kind.delivery)
        flows, self.workflows = self.workflows, []
        for flow in flows:
            self.workflow(flow)

    def workflow(self, flow: Workflow) -> Workflow:
        """Register a workflow and its entry kind (``flow.kind``: ``POST /runs`` with that
        ``"kind"`` starts it); its runs are written ahead and may wait.  A cron schedule
        starts it with ``{"workflow": flow.name}`` in its payload.  Returns ``flow``.
        """
        if any(known.name == flow.name for known in self.workflows):
            raise ValueError(f"workflow {flow.name!r} is registered already")
        self.entry_kind(flow.kind, may_wait=True, written_ahead=True)
        self.workflows.append(flow)
        return flow

    def entry_kind(self, name: str, *, may_wait: bool = False,
                   written_ahead: bool | None = None,
                   delivery: AnswerDelivery | None = None) -> EntryKind:
        """Register an entry kind of this app (``POST /runs`` with ``"kind": name``).

        ``may_wait``: its runs may suspend; ``written_ahead``: checkpointed always (True),
        never (False) or as ``TICKETIQ_CRASH_RESUME_ENTRIES`` says (None); ``delivery``
        delivers its answers (once).
        """
        if name in self.kinds:
            raise ValueError(f"entry kind {name!r} is registered already")
        kind = EntryKind(name, may_wait=may_wait, written_ahead=written_ahead,
                         delivery=delivery)
        self.kinds[name] = kind
        if delivery is not None:
            self.deliveries[name] = delivery
        return kind

    def startup(self, hook: H) -> H:
        """Decorator: run ``hook`` when the worker starts, before it takes any work."""
        self.on_startup.append(hook)  # type: ignore[arg-type]
        return hook

    def shutdown(self, hook: H) -> H:
        """Decorator: run ``hook`` when the worker has stopped (hooks run in reverse order)."""
        self.on_shutdown.append(hook)  # type: ignore[arg-type]
        return hook

    def job(self, kind: str) -> Callable[[H], H]:
        """Decorator: ``async def handler(ctx: JobContext)`` runs the jobs of ``kind``."""

        def register(handler: H) -> H:
            if kind in self.jobs:
                raise ValueError(f"a handler for job kind {kind!r} is registered already")
            self.jobs[kind] = handler  # type: ignore[assignment]
            return handler

        return register

    async def run_startup(self) -> None:
        """Run the start-up hooks in order; the first that raises stops the worker's start."""
        for hook in self.on_startup:
            await _call(hook)

    async def run_shutdown(self) -> None:
        """Run the shut-down hooks in reverse order; one that raises is logged, not fatal."""
        for hook in reversed(self.on_shutdown):
            try:
                await _call(hook)
            except Exception:  # noqa: BLE001 - the other hooks still close their clients
                log.exception("shut-down hook %r failed", hook)


AppFactory = Callable[[], App]


async def _call(hook: Hook) -> None:
    result = hook()
    if inspect.isawaitable(result):
        await result
