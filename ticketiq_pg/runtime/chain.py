"""A run's checkpoints as a chain: verified in order, folded into the conversation so far.

Since schema 12 each checkpoint holds only what its step added (see
:func:`~ticketiq_pg.runtime.run_state.checkpoint_body`) and is sealed as a
link: its seal covers its body and the previous link's seal, under the key
it names.  ``adopt_run`` returns the links from the run's last base to its
last step in one statement; a resume verifies each, in order, before it acts
on any: a link removed, reordered, altered or taken from another run fails
the run, nothing executed (I9).  A last checkpoint written before schema 12
(a full body, sealed alone) is verified and adopted as before; the next
checkpoint starts a chain from it.
"""

from __future__ import annotations

import uuid
from typing import Any

from ticketiq_pg.errors import SealMismatch
from ticketiq_pg.runtime.run_state import RunState, adopt_body
from ticketiq_pg.seal import Sealer


def restore(
    sealer: Sealer,
    state: RunState,
    run_id: uuid.UUID,
    last_step: int,
    last: dict[str, Any] | None,
    seal: str | None,
    key_id: str | None,
    links: list[dict[str, Any]] | None,
) -> None:
    """Verify the run's checkpoints and carry them into ``state`` (raises SealMismatch)."""
    if last is None:
        raise SealMismatch(f"run {run_id} has no checkpoint of its step {last_step}")
    if "chain" not in last:
        sealer.verify("checkpoint", run_id, last_step, last, seal, key_id)
        adopt_body(state, last_step, last)
        return  # written before schema 12: the next checkpoint is a base
    links = links or []
    if not links or links[0]["body"].get("chain") != "base":
        raise SealMismatch(f"the checkpoint chain of run {run_id} has no base")
    if [link["step"] for link in links] != list(range(links[0]["step"], last_step + 1)):
        raise SealMismatch(
            f"the checkpoint chain of run {run_id} is not steps {links[0]['step']} to {last_step}"
        )
    prev = ""
    for link in links:
        body = link["body"]
        if link["step"] > links[0]["step"] and body.get("chain") != "link":
            raise SealMismatch(f"checkpoint of run {run_id} step {link['step']} is not a link")
        sealer.verify("link", run_id, link["step"], body, link["seal"], link["seal_key_id"],
                      prev=prev)
        adopt_body(state, link["step"], body)
        prev = link["seal"]
    if (links[-1]["seal"], links[-1]["seal_key_id"]) != (seal, key_id):
        raise SealMismatch(f"the checkpoint chain of run {run_id} does not end at its last step")
    state.chain_seal = prev
