"""A fork of a run from one of its written steps: a new run whose history is the source's.

:func:`fork_run` reads the source's checkpoints 1 to ``step`` (``ticketiq.fork_source``),
verifies each under the seal keys, in order, as a resume verifies a chain (I9: a
checkpoint that does not verify forks nothing), and seals each anew for the fork's run
id, since a seal binds its run (:mod:`ticketiq_pg.seal`).  One statement
(``ticketiq.fork_run``) then writes the fork, claimed, for the one resume path every run
takes: a resume worker adopts it, verifies the new chain and makes step ``step``'s calls
through every gate as it stands now.

A fork is a new identity: its correlation id is its run id, so every key it derives is its
own.  Step ``step``'s calls were keyed by the source when it decided them; they are given
the keys the fork derives (:mod:`~ticketiq_pg.runtime.step_keys`, as the engine would for
the fork at that step), so no call the fork makes collides with the source's at a vendor.
The calls of the steps before are history: their results are in the copied conversation,
and the fork never sends them.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from ticketiq_pg.agent import is_changing
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import SealMismatch
from ticketiq_pg.runtime import call_rows
from ticketiq_pg.runtime import step_keys as keys
from ticketiq_pg.seal import Sealer

#: What a fork's key is derived from, beside the owner's own key (runs' idempotency keys
#: are one space: delegation keys too).
KEY_PREFIX = "fork:"


def fork_key(owner: str, key: str) -> str:
    """The fork's idempotency key in the runs' one space of keys, for an owner's key."""
    digest = hashlib.sha256(f"{owner}\x1f{key}".encode()).hexdigest()
    return f"{KEY_PREFIX}{digest}"


def verified(sealer: Sealer, run_id: uuid.UUID, checkpoints: list[dict[str, Any]]) -> None:
    """Raise SealMismatch unless the checkpoints verify in order, as a resume verifies them."""
    prev: str | None = None
    for expected, link in enumerate(checkpoints, start=1):
        body, step = link["body"], link["step"]
        if step != expected:
            raise SealMismatch(f"run {run_id} has no checkpoint of step {expected}")
        chain = body.get("chain") if isinstance(body, dict) else None
        if chain is None:
            sealer.verify("checkpoint", run_id, step, body, link["seal"], link["seal_key_id"])
            prev = None
            continue
        if chain == "base":
            prev = ""
        elif prev is None:
            raise SealMismatch(f"checkpoint of run {run_id} step {step} is a link of no chain")
        sealer.verify("link", run_id, step, body, link["seal"], link["seal_key_id"], prev=prev)
        prev = link["seal"]


def rekeyed(body: dict[str, Any], run_id: uuid.UUID, step: int) -> dict[str, Any]:
    """Step ``step``'s body with its calls keyed as the fork derives them."""
    counters = body.get("counters") or {}
    flow = counters.get("workflow")
    calls = []
    delegation_keys = dict(body.get("delegation_keys") or {})
    for call in body["calls"]:
        key = call.get("step_key")
        if key is not None:
            if isinstance(flow, dict) and flow.get("at"):
                key = keys.workflow_step_key(str(run_id), str(flow["at"]),
                                             int(flow.get("executed") or 0))
            else:
                key = keys.agent_call_key(str(run_id), str(counters.get("agent_loop") or "fork"),
                                          step, call["call_id"])
        if call["call_id"] in delegation_keys:
            delegation_keys[call["call_id"]] = key
        calls.append({**call, "step_key": key})
    return {**body, "calls": calls, "delegation_keys": delegation_keys}


def resealed(sealer: Sealer, run_id: uuid.UUID,
             checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checkpoints sealed for ``run_id``, the last one's calls keyed and their pending
    rows sealed (its ``call_seals``)."""
    out = []
    prev = ""
    last = len(checkpoints)
    for link in checkpoints:
        step = link["step"]
        body = rekeyed(link["body"], run_id, step) if step == last else link["body"]
        chain = body.get("chain")
        if chain is None:
            seal, key_id = sealer.seal("checkpoint", run_id, step, body)
        else:
            if chain == "base":
                prev = ""
            seal, key_id, _ = sealer.seal_encoded("link", run_id, step, body, prev=prev)
            prev = seal
        if step == last and any(is_changing(c["classification"]) for c in body["calls"]):
            body = call_rows.with_pending_seals(sealer, run_id, step, body["calls"], body)
        out.append({"step": step, "body": body, "seal": seal, "seal_key_id": key_id})
    return out


async def fork_run(
    db: TicketIQ, sealer: Sealer, source_run_id: uuid.UUID, step: int, actor: str, *,
    reason: str | None = None, input: Any = None, input_given: bool = False,
    idempotency_key: str | None = None, run_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Fork ``source_run_id`` from its step ``step``: verify, seal anew, write; the fork's
    row (``run_id``, ``created``, ``status``, ``step``, ``source_run_id``).

    Raises SealMismatch when a source checkpoint does not verify (nothing written), and
    the driver's typed errors (UnknownRun, InvalidPayload for a step the run did not
    write, StepConflict, KeyConflict).
    """
    source = await db.manage.fork_source(source_run_id, step)
    checkpoints = source["checkpoints"]
    verified(sealer, source_run_id, checkpoints)
    new_id = run_id or uuid.uuid4()
    return await db.manage.fork_run(
        source_run_id, step, new_id, actor, resealed(sealer, new_id, checkpoints),
        checkpoints[-1]["seal"], reason=reason, input=input, input_given=input_given,
        idempotency_key=idempotency_key)
