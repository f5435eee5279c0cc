"""Step idempotency keys, derived from what identifies a step.

Never from the clock or a random number, except for a call outside every
scope (an ad hoc call from an inspector), which gets a fresh key per call.

==================  =====================================================
scope               key derived from
==================  =====================================================
agent run call      correlation id, agent loop, model steps taken so far,
                    the provider's tool-call id (all restored from the
                    checkpoint, so a resume sends the same key)
workflow step       workflow run id, step id, steps the run had executed
                    (a retry sends the same key, a loop back a new one)
approved call       the approval id, however often it is sent
==================  =====================================================

A provider tool-call id that is only a position (``call_0``, ``0``,
``toolu_1``) is not an identity: no stable key is derived from it and the call
is treated as unkeyed (``agent_call_key`` returns None).
"""

from __future__ import annotations

import hashlib
import re
import uuid

PREFIX = "tiq1"

# A letter prefix, an optional separator and a small number: a position.
_POSITIONAL = re.compile(r"^[A-Za-z]*[_\-.:]?\d{1,9}$")


def is_positional(provider_call_id: str | None) -> bool:
    """True when the provider's call id is a position number, not an identity."""
    return provider_call_id is None or bool(_POSITIONAL.match(provider_call_id.strip()))


def _derive(scope: str, *parts: object) -> str:
    material = "\x1f".join([scope, *(str(p) for p in parts)]).encode("utf-8")
    return f"{PREFIX}-{scope}-{hashlib.sha256(material).hexdigest()[:40]}"


def agent_call_key(
    correlation_id: str, agent_loop: str, steps_taken: int, provider_call_id: str | None
) -> str | None:
    """The key of one tool call of an agent run, or None for a positional call id."""
    if not correlation_id or not agent_loop:
        raise ValueError("correlation_id and agent_loop are required")
    if steps_taken < 0:
        raise ValueError("steps_taken must be >= 0")
    if is_positional(provider_call_id):
        return None
    return _derive("call", correlation_id, agent_loop, steps_taken, provider_call_id)


def workflow_step_key(workflow_run_id: str, step_id: str, steps_executed: int) -> str:
    """The key of one execution of a workflow step."""
    if not workflow_run_id or not step_id:
        raise ValueError("workflow_run_id and step_id are required")
    if steps_executed < 0:
        raise ValueError("steps_executed must be >= 0")
    return _derive("wf", workflow_run_id, step_id, steps_executed)


def approval_key(approval_id: str) -> str:
    """The key of an approved call: the same however often it is sent."""
    if not approval_id:
        raise ValueError("approval_id is required")
    return _derive("approval", approval_id)


def adhoc_key() -> str:
    """A fresh key for a call outside every scope (an inspector's ad hoc call)."""
    return f"{PREFIX}-adhoc-{uuid.uuid4().hex}"
