"""The inspector: a person's ad hoc call of one of the app's tools (docs/operators.md).

An admin calls a tool with arguments they give, from a run's page in the console or
with ``ticketiq-pg inspect`` through a running front (``POST /inspector/calls``), so
the tools and gates are the running process's.  Each call

* passes the app's gates as that person: the :class:`~ticketiq_pg.agent.RunInfo` the
  gates see has ``channel`` and ``entry_point`` ``"inspector"`` (:data:`INSPECTOR`),
  the person as owner and run-as, and the run whose page it came from, if any: a gate
  tells an operator's ad hoc call by its channel;
* gets a fresh key (:func:`~ticketiq_pg.runtime.step_keys.adhoc_key`): two calls, two
  keys, however alike their arguments;
* is audited ``inspector.call`` (who, the tool, the SHA-256 of its arguments, the key,
  the outcome), a changing call also ``inspector.call_sent`` before it is sent, so a
  process that dies during the call leaves the key of a call whose outcome is unknown;
* is never written into a run: it is shown beside the run, not in its checkpoints.

The call is made by the step engine's own attempt
(:func:`~ticketiq_pg.runtime.calls.attempt`), without a run: a read that fails
transiently is tried again within the tool's retry policy; a write is sent once: a
failure that says it had no effect is ``not_applied``; otherwise its reader (if the
tool has one) is asked, and without a finding the outcome is ``unknown``, said so, and
the call is not sent again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from ticketiq_pg.agent import AllowAll, CallContext, Gates, RunInfo, Tool, ToolCall, Tools
from ticketiq_pg.agent import is_changing as changes
from ticketiq_pg.errors import TicketIQError
from ticketiq_pg.retries import TOOL_RETRY, RetryPolicy
from ticketiq_pg.runtime import step_keys
from ticketiq_pg.runtime.calls import attempt

log = logging.getLogger(__name__)

#: The channel and entry point a gate sees on an operator's ad hoc call.
INSPECTOR = "inspector"


class InspectorRefused(TicketIQError):
    """An inspector call not made: ``status`` 404 (no such tool), 422 (bad arguments) or
    403 (a gate refused it; ``audit_id`` is the ``inspector.call`` row that says so)."""

    def __init__(self, status: int, detail: str, audit_id: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.audit_id = audit_id


@dataclass(frozen=True)
class InspectorCall:
    """One call made: its fresh key, outcome and result, and its audit row."""

    actor: str
    tool: str
    classification: str
    step_key: str
    arguments_digest: str
    #: made, failed (a read), not_applied, read_back or unknown (a write)
    outcome: str
    result: Any
    #: the inspector.call row (None: the call was made but its audit failed)
    audit_id: int | None
    run_id: uuid.UUID | None = None

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["run_id"] = str(self.run_id) if self.run_id else None
        return found


def arguments_digest(arguments: Any) -> str:
    """SHA-256 of the arguments' canonical JSON: what the audit keeps of them."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Inspector:
    """Makes ad hoc calls of an app's tools through its gates (a worker has one)."""

    def __init__(self, db: Any, tools: Tools, gates: Gates | None = None,
                 tool_retry: RetryPolicy = TOOL_RETRY) -> None:
        self.db = db
        self._tools = tools
        self.gates = gates or AllowAll()
        self.tool_retry = tool_retry

    @classmethod
    def of(cls, worker: Any) -> Inspector | None:
        """The inspector of a started worker: its tools, gates and tool retry policy."""
        runner = getattr(worker, "runner", None)
        if worker.db is None or runner is None:
            return None
        return cls(worker.db, worker.app.tools, runner.gates, runner.tool_retry)

    def tools(self) -> list[Tool]:
        """The tools a person may call (a sub-agent starts a run: not here)."""
        found = (self._tools.get(name) for name in self._tools.names())
        return [tool for tool in found if tool is not None and not tool.subagent]

    async def call(self, actor: str, tool_name: str, arguments: Any, *,
                   run_id: uuid.UUID | str | None = None) -> InspectorCall:
        """Call ``tool_name`` as ``actor``; InspectorRefused when it is not made."""
        tool = self._tools.get(tool_name)
        if tool is None or tool.subagent:
            raise InspectorRefused(404, f"no tool {tool_name!r} to call")
        invalid = tool.validate(arguments)
        if invalid is not None:
            raise InspectorRefused(422, f"invalid arguments: {invalid}")
        run = uuid.UUID(str(run_id)) if run_id else None
        if run is not None:
            await self.db.get_run(run)  # UnknownRun before anything is called
        key = step_keys.adhoc_key()
        digest = arguments_digest(arguments)
        info = RunInfo(run_id=run or uuid.uuid4(), owner=actor, run_as=actor,
                       channel=INSPECTOR, entry_point=INSPECTOR, may_wait=False,
                       correlation_id=key)
        verdict = await self.gates.check_run(info)
        if verdict.allowed:
            verdict = await self.gates.check_call(info, ToolCall(key, tool.name, arguments),
                                                  tool.classification)
        if not verdict.allowed or verdict.needs_approval:
            reason = verdict.reason or "refused"
            if verdict.needs_approval:
                reason = f"an ad hoc call is never held for approval: {reason}"
            audit_id = await self.db.audit.audit_inspector_call(
                actor, run, tool.name, digest, key, "refused", {"reason": reason[:2000]})
            log.info("inspector call of %s by %s refused: %s", tool.name, actor, reason)
            raise InspectorRefused(403, f"refused by the gates: {reason}", audit_id)
        context = CallContext(run=info, step=0, call_id=key, tool=tool.name,
                              arguments=arguments, classification=tool.classification,
                              step_key=key)
        changing = changes(tool.classification)
        if changing:
            await self.db.audit.audit_inspector_call(actor, run, tool.name, digest, key, "sent")
        result, outcome = await self._make(tool, context)
        try:
            audit_id: int | None = await self.db.audit.audit_inspector_call(
                actor, run, tool.name, digest, key, outcome)
        except (psycopg.Error, TicketIQError) as exc:
            # The call was made: its outcome is shown, and that it is not audited.
            log.error("inspector call of %s by %s (key %s, %s) not audited: %s", tool.name,
                      actor, key, outcome, exc)
            audit_id = None
        log.info("inspector call of %s by %s: %s (key %s)", tool.name, actor, outcome, key)
        return InspectorCall(actor, tool.name, tool.classification, key, digest, outcome,
                             result, audit_id, run)

    async def _make(self, tool: Tool, context: CallContext) -> tuple[Any, str]:
        """The result and outcome: the engine's own attempt, without a run (a changing
        call is sent once, whatever happens)."""
        result, ended = await attempt(tool, context, tool.retry or self.tool_retry)
        return result, _OUTCOMES.get(ended, ended)


#: The inspector's outcome for each way :func:`~ticketiq_pg.runtime.calls.attempt` ends.
_OUTCOMES = {"skipped": "not_applied"}
