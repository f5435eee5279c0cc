"""Stop mode's judge: the outside calls a stalled process made after the takeover."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ticketiq_pg.testing import landed


def stalled_calls(query: Callable[..., list[tuple[Any, ...]]],
                  requests: Iterable[Mapping[str, Any]], name: str, takeover_at: float,
                  out: list[dict[str, Any]]) -> int:
    """How many requests the vendor recorded from process ``name`` after ``takeover_at``.

    (Database writes after a takeover are refused by the fence; the worker tests count
    those separately.)  Once continued, the process is alive again and may adopt a run
    afresh (a workflow woken by its timer, at a new epoch with a lease of its own): a
    call for a run it adopted after the takeover, made after that adoption, is its new
    attempt's, listed in ``out`` but not counted.  Every request is listed in ``out``.
    """
    adopted = dict(query(
        "select run_id::text, extract(epoch from min(at)) from ticketiq.audit"
        " where event = 'agent.run.adopted' and actor = %s and at > to_timestamp(%s)"
        " group by run_id", name, takeover_at))
    calls = 0
    for request in requests:
        auth = next((v for k, v in request["headers"].items()
                     if k.lower() == "authorization"), "")
        who = base64.b64decode(auth[6:]).decode().partition(":")[0] if auth else ""
        if who != name or request["wall_at"] <= takeover_at:
            continue
        found = landed.origin(request.get("body"))
        run_id = found[0] if found else None
        afresh = run_id in adopted and request["wall_at"] >= float(adopted[run_id])
        calls += not afresh
        out.append({"victim": name, "method": request["method"], "path": request["path"],
                    "after_takeover_s": round(request["wall_at"] - takeover_at, 3),
                    "run_id": run_id, "call_id": found[2] if found else None,
                    "adopted_afresh": afresh})
    return calls
