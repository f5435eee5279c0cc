"""ticketiq_pg: durable agent runs on PostgreSQL that go on from their last step after a crash.

An app hands a :class:`Worker` an :class:`App` (a :class:`Model`, :class:`Tools`, and
optionally :class:`Gates`, answer deliveries, job handlers and hooks); every run's steps
are written ahead as sealed checkpoints, and a run whose process dies is taken over by
another process and resumed from its last step, its writes in flight settled, never
blindly sent again.  Start with docs/guide.md.

Everything an app needs is importable from here; the subpackages (``db``, ``runtime``,
``front``, ``ops``, ``testing``) are the library's rooms, and their other names are
internal.  ``create_front`` needs the ``http`` extra (FastAPI, PyJWT); it is imported on use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ticketiq_pg.adapters.anthropic_messages import AnthropicModel
    from ticketiq_pg.adapters.base import ModelSettings
    from ticketiq_pg.adapters.names import ToolNames
    from ticketiq_pg.adapters.openai_chat import OpenAIChatModel
    from ticketiq_pg.agent import (
        CLASSIFICATIONS,
        AllowAll,
        AnswerDelivery,
        CallContext,
        Delivery,
        Gates,
        Model,
        ModelStep,
        ReadBack,
        RunInfo,
        StepRequest,
        Tool,
        ToolCall,
        Tools,
        VendorLimit,
        Verdict,
    )
    from ticketiq_pg.config import Settings, new_seal_key, parse_seal_keys
    from ticketiq_pg.db.driver import TicketIQ
    from ticketiq_pg.db.events import EventFeed, RunEvent, RunText, watch_run
    from ticketiq_pg.db.keys import create_api_key
    from ticketiq_pg.db.manage import RunFilter
    from ticketiq_pg.db.migrate import install, install_sync
    from ticketiq_pg.errors import (
        AnswerSealed,
        ConfigError,
        Fenced,
        InvalidAction,
        InvalidPayload,
        KeyConflict,
        LeaseLapsed,
        LeaseLost,
        LimitReached,
        LivenessUnconfirmed,
        NotOwner,
        RunNotRunning,
        SchemaVersionMismatch,
        SealMismatch,
        StepConflict,
        TicketIQError,
        TransientError,
        UnknownApproval,
        UnknownCall,
        UnknownJob,
        UnknownProcess,
        UnknownRun,
        UnknownSignal,
    )
    from ticketiq_pg.front.app import create_app as create_front
    from ticketiq_pg.front.embed import worker_lifespan
    from ticketiq_pg.front.settings import FrontSettings
    from ticketiq_pg.front.signing import sign_webhook
    from ticketiq_pg.retries import RetryPolicy, is_transient
    from ticketiq_pg.runtime.app import App, AppFactory, Hook
    from ticketiq_pg.runtime.entries import EntryKind
    from ticketiq_pg.runtime.fork import fork_run
    from ticketiq_pg.runtime.inspector import INSPECTOR
    from ticketiq_pg.runtime.jobs import Handler as JobHandler
    from ticketiq_pg.runtime.jobs import JobContext
    from ticketiq_pg.runtime.runner import RunOutcome
    from ticketiq_pg.runtime.worker import RunHandle, Worker
    from ticketiq_pg.vendors.fenced_transport import FencedTransport
    from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

__all__ = [
    # the app
    "App", "AppFactory", "Hook", "Worker", "RunHandle", "RunOutcome",
    # workflows: steps of code, resumed like agent runs
    "Workflow", "WorkflowContext", "WorkflowNext",
    # the model and its tools
    "Model", "ModelStep", "ToolCall", "StepRequest", "Tool", "Tools", "CallContext",
    "ReadBack", "CLASSIFICATIONS", "VendorLimit",
    # provider adapters (the SDKs are extras: openai, anthropic)
    "OpenAIChatModel", "AnthropicModel", "ModelSettings", "ToolNames",
    # gates and answers
    "Gates", "Verdict", "AllowAll", "RunInfo", "AnswerDelivery", "Delivery", "INSPECTOR",
    # a run's event stream (GET /runs/{id}/events; in Python, watch_run)
    "RunEvent", "RunText", "EventFeed", "watch_run",
    # background jobs
    "JobContext", "JobHandler",
    # settings and set-up
    "Settings", "new_seal_key", "parse_seal_keys", "install", "install_sync",
    # failures and retries
    "RetryPolicy", "TransientError", "is_transient",
    # outside calls fenced by the lease and the run's epoch
    "FencedTransport",
    # the driver and the HTTP front
    "TicketIQ", "create_front", "FrontSettings", "worker_lifespan", "create_api_key",
    "sign_webhook", "EntryKind",
    # operating runs: the list's filter, a fork from a step
    "RunFilter", "fork_run",
    # errors
    "TicketIQError", "NotOwner", "Fenced", "LeaseLapsed", "LeaseLost", "RunNotRunning",
    "UnknownRun", "UnknownCall", "UnknownApproval", "UnknownJob", "UnknownProcess",
    "LimitReached", "KeyConflict", "InvalidPayload", "AnswerSealed", "StepConflict", "SealMismatch",
    "SchemaVersionMismatch", "ConfigError", "LivenessUnconfirmed", "UnknownSignal", "InvalidAction",
]


_EXPORTS: dict[str, tuple[str, str]] = {
    "RunEvent": ("ticketiq_pg.db.events", "RunEvent"),
    "RunText": ("ticketiq_pg.db.events", "RunText"),
    "EventFeed": ("ticketiq_pg.db.events", "EventFeed"),
    "watch_run": ("ticketiq_pg.db.events", "watch_run"),
    "AnthropicModel": ("ticketiq_pg.adapters.anthropic_messages", "AnthropicModel"),
    "ModelSettings": ("ticketiq_pg.adapters.base", "ModelSettings"),
    "OpenAIChatModel": ("ticketiq_pg.adapters.openai_chat", "OpenAIChatModel"),
    "ToolNames": ("ticketiq_pg.adapters.names", "ToolNames"),
    "RunFilter": ("ticketiq_pg.db.manage", "RunFilter"),
    "fork_run": ("ticketiq_pg.runtime.fork", "fork_run"),
    "CLASSIFICATIONS": ("ticketiq_pg.agent", "CLASSIFICATIONS"),
    "VendorLimit": ("ticketiq_pg.agent", "VendorLimit"),
    "AllowAll": ("ticketiq_pg.agent", "AllowAll"),
    "AnswerDelivery": ("ticketiq_pg.agent", "AnswerDelivery"),
    "CallContext": ("ticketiq_pg.agent", "CallContext"),
    "Delivery": ("ticketiq_pg.agent", "Delivery"),
    "Gates": ("ticketiq_pg.agent", "Gates"),
    "Model": ("ticketiq_pg.agent", "Model"),
    "ModelStep": ("ticketiq_pg.agent", "ModelStep"),
    "ReadBack": ("ticketiq_pg.agent", "ReadBack"),
    "RunInfo": ("ticketiq_pg.agent", "RunInfo"),
    "INSPECTOR": ("ticketiq_pg.runtime.inspector", "INSPECTOR"),
    "StepRequest": ("ticketiq_pg.agent", "StepRequest"),
    "Tool": ("ticketiq_pg.agent", "Tool"),
    "ToolCall": ("ticketiq_pg.agent", "ToolCall"),
    "Tools": ("ticketiq_pg.agent", "Tools"),
    "Verdict": ("ticketiq_pg.agent", "Verdict"),
    "Settings": ("ticketiq_pg.config", "Settings"),
    "new_seal_key": ("ticketiq_pg.config", "new_seal_key"),
    "parse_seal_keys": ("ticketiq_pg.config", "parse_seal_keys"),
    "TicketIQ": ("ticketiq_pg.db.driver", "TicketIQ"),
    "install": ("ticketiq_pg.db.migrate", "install"),
    "install_sync": ("ticketiq_pg.db.migrate", "install_sync"),
    "AnswerSealed": ("ticketiq_pg.errors", "AnswerSealed"),
    "ConfigError": ("ticketiq_pg.errors", "ConfigError"),
    "Fenced": ("ticketiq_pg.errors", "Fenced"),
    "InvalidAction": ("ticketiq_pg.errors", "InvalidAction"),
    "InvalidPayload": ("ticketiq_pg.errors", "InvalidPayload"),
    "LeaseLapsed": ("ticketiq_pg.errors", "LeaseLapsed"),
    "LeaseLost": ("ticketiq_pg.errors", "LeaseLost"),
    "LivenessUnconfirmed": ("ticketiq_pg.errors", "LivenessUnconfirmed"),
    "NotOwner": ("ticketiq_pg.errors", "NotOwner"),
    "RunNotRunning": ("ticketiq_pg.errors", "RunNotRunning"),
    "SchemaVersionMismatch": ("ticketiq_pg.errors", "SchemaVersionMismatch"),
    "SealMismatch": ("ticketiq_pg.errors", "SealMismatch"),
    "StepConflict": ("ticketiq_pg.errors", "StepConflict"),
    "TicketIQError": ("ticketiq_pg.errors", "TicketIQError"),
    "UnknownApproval": ("ticketiq_pg.errors", "UnknownApproval"),
    "UnknownCall": ("ticketiq_pg.errors", "UnknownCall"),
    "UnknownJob": ("ticketiq_pg.errors", "UnknownJob"),
    "UnknownProcess": ("ticketiq_pg.errors", "UnknownProcess"),
    "UnknownRun": ("ticketiq_pg.errors", "UnknownRun"),
    "LimitReached": ("ticketiq_pg.errors", "LimitReached"),
    "KeyConflict": ("ticketiq_pg.errors", "KeyConflict"),
    "UnknownSignal": ("ticketiq_pg.errors", "UnknownSignal"),
    "App": ("ticketiq_pg.runtime.app", "App"),
    "AppFactory": ("ticketiq_pg.runtime.app", "AppFactory"),
    "Hook": ("ticketiq_pg.runtime.app", "Hook"),
    "JobHandler": ("ticketiq_pg.runtime.jobs", "Handler"),
    "JobContext": ("ticketiq_pg.runtime.jobs", "JobContext"),
    "RunOutcome": ("ticketiq_pg.runtime.runner", "RunOutcome"),
    "RunHandle": ("ticketiq_pg.runtime.worker", "RunHandle"),
    "Worker": ("ticketiq_pg.runtime.worker", "Worker"),
    "create_front": ("ticketiq_pg.front.app", "create_app"),
    "FrontSettings": ("ticketiq_pg.front.settings", "FrontSettings"),
    "worker_lifespan": ("ticketiq_pg.front.embed", "worker_lifespan"),
    "sign_webhook": ("ticketiq_pg.front.signing", "sign_webhook"),
    "create_api_key": ("ticketiq_pg.db.keys", "create_api_key"),
    "EntryKind": ("ticketiq_pg.runtime.entries", "EntryKind"),
    "RetryPolicy": ("ticketiq_pg.retries", "RetryPolicy"),
    "TransientError": ("ticketiq_pg.errors", "TransientError"),
    "is_transient": ("ticketiq_pg.retries", "is_transient"),
    "FencedTransport": ("ticketiq_pg.vendors.fenced_transport", "FencedTransport"),
    "Workflow": ("ticketiq_pg.workflow", "Workflow"),
    "WorkflowContext": ("ticketiq_pg.workflow", "WorkflowContext"),
    "WorkflowNext": ("ticketiq_pg.workflow", "WorkflowNext"),
}


def __getattr__(name: str) -> Any:
    # Imported on first use, so that `import ticketiq_pg` stays cheap for child processes
    # and a driver-only install never imports the HTTP front.
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'ticketiq_pg' has no attribute {name!r}") from None
    try:
        value = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        if name == "create_front":
            raise ImportError(
                "ticketiq_pg.create_front needs the HTTP front: pip install 'ticketiq-pg[http]'"
            ) from exc
        raise
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
