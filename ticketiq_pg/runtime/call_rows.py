"""Sealed call rows: the in-doubt marks and outcomes a resume acts on (issue 21.6).

Each state of a changing call's row that a resume acts on is sealed by the
statement that writes it: pending with its checkpoint (the body's
``call_seals``), in doubt with ``mark_in_doubt``, finished with
``record_outcome``.  Before a resume settles anything it verifies every row
of the last step against the calls its sealed checkpoint lists; a row
changed, a state reset, a forged outcome or a row missing fails the run,
nothing executed (I9).  A checkpoint written before schema 12 does not say
``sealed_calls``: its rows have no seals and are taken as they are.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ticketiq_pg.agent import is_changing
from ticketiq_pg.db.rows import CallMark
from ticketiq_pg.errors import SealMismatch
from ticketiq_pg.runtime.run_state import RunState
from ticketiq_pg.runtime.store import RunStore
from ticketiq_pg.seal import JsonText, Sealer

#: The sealed checkpoint's word that its call rows are sealed.
SEALED_CALLS = "sealed_calls"


def with_pending_seals(
    sealer: Sealer, run_id: uuid.UUID, step: int, calls: list[dict[str, Any]], to_send: Any
) -> Any:
    """The checkpoint to send with the seals of its changing calls' pending rows.

    They ride in ``call_seals``, outside what the checkpoint's seal covers:
    ``write_checkpoint`` puts them on the rows it records and stores the
    checkpoint without them.  A step of reads sends the checkpoint as it is.
    """
    seals = {
        call["call_id"]: sealer.seal_call(run_id, step, call, "pending")[0]
        for call in calls if is_changing(call["classification"])
    }
    if not seals:
        return to_send
    if isinstance(to_send, JsonText):
        # the sealed text is an object: the seals are one more member at its end
        text = f'{to_send.text[:-1]},"call_seals":{json.dumps(seals)}}}'
        return JsonText(text, {**to_send.value, "call_seals": seals})
    return {**to_send, "call_seals": seals}


def marked_as(call: dict[str, Any], current: str | None) -> str:
    """The classification ``mark_in_doubt`` records: the tool's now unless that is a read (I7)."""
    return current if current is not None and current != "read" else call["classification"]


async def mark(
    db: RunStore, sealer: Sealer, state: RunState, step: int, call: dict[str, Any], current: str
) -> CallMark:
    """Mark a call in doubt, with the seal of the row the mark leaves."""
    seal, key_id = sealer.seal_call(state.run_id, step, call, "in_doubt",
                                    marked=marked_as(call, current))
    marked = await db.mark_in_doubt(state.run_id, state.epoch, step, call["call_id"], current,
                                    seal=seal, seal_key_id=key_id)
    state.marked.add(call["call_id"])
    return marked


async def mark_many(
    db: RunStore, sealer: Sealer, state: RunState, step: int,
    calls: list[tuple[dict[str, Any], str]],
) -> list[CallMark]:
    """Mark in doubt, in one statement, the changing calls a step makes at once (each with
    the tool's classification now), each with the seal of the row its mark leaves."""
    marks = []
    for call, current in calls:
        seal, key_id = sealer.seal_call(state.run_id, step, call, "in_doubt",
                                        marked=marked_as(call, current))
        marks.append({"call_id": call["call_id"], "classification": current, "seal": seal,
                      "seal_key_id": key_id})
    marked = await db.mark_calls_in_doubt(state.run_id, state.epoch, step, marks)
    state.marked.update(call["call_id"] for call, _ in calls)
    return marked


async def record(
    db: RunStore, sealer: Sealer, state: RunState, step: int, call: dict[str, Any],
    outcome: Any, settlement: str,
) -> None:
    """Record a call's outcome, with the seal of the finished row."""
    finished = "done" if settlement == "made" else "settled"
    seal, key_id = sealer.seal_call(state.run_id, step, call, finished,
                                    settlement=settlement, outcome=outcome)
    await db.record_outcome(state.run_id, state.epoch, step, call["call_id"], outcome,
                            settlement, seal=seal, seal_key_id=key_id)
    state.recorded.add(call["call_id"])


def verify_rows(
    sealer: Sealer, run_id: uuid.UUID, step: int, body: dict[str, Any],
    rows: list[dict[str, Any]],
) -> None:
    """Raise SealMismatch unless every call row of the step is one its runner sealed.

    A changing call of the checkpoint must have its row; a row must match
    its call's identity and carry the seal of its state; a row of no call
    of the checkpoint is foreign.  Reads have no row unless a mark made one
    (the tool had become a write), and then it is verified too.
    """
    if not body.get(SEALED_CALLS):
        return
    calls = {call["call_id"]: call for call in body["calls"]}
    by_id = {row["call_id"]: row for row in rows}
    for call_id in by_id.keys() - calls.keys():
        raise SealMismatch(f"call row {call_id!r} of run {run_id} step {step} is in no checkpoint")
    for call_id, call in calls.items():
        row = by_id.get(call_id)
        if row is None:
            if is_changing(call["classification"]):
                raise SealMismatch(
                    f"call {call_id!r} of run {run_id} step {step} has no row; its checkpoint "
                    "says it must"
                )
            continue
        if any(row.get(field) != call.get(field)
               for field in ("tool", "arguments", "classification", "step_key")):
            raise SealMismatch(
                f"call {call_id!r} of run {run_id} step {step}: its row is not the call its "
                "checkpoint lists"
            )
        sealer.verify_call(run_id, step, call, row)


def has_open_row(state: RunState, call: dict[str, Any]) -> bool:
    """A row this attempt has not finished: a changing call's, or one a mark gave a read."""
    if call["call_id"] in state.recorded:
        return False  # recorded as it returned
    return is_changing(call["classification"]) or call["call_id"] in state.marked


async def record_made(db: RunStore, sealer: Sealer, state: RunState, step: int) -> None:
    """Record, sealed, the outcome of each call of this step made so far that has a row.

    Before the run gives its lease up (a wait, a shutdown): the attempt that takes the
    run on finds those calls done instead of in doubt, and no row is left for a
    statement without a seal to close.  A call the checkpoint recorded as a read has no
    row (its result rides in the next checkpoint): nothing to send for it.
    """
    made, state.made = state.made, []
    for call, result, how in made:
        if state.durable and has_open_row(state, call):
            await record(db, sealer, state, step, call, result, how)
