"""The outside calls a stalled process made after its runs were taken over (kill trials, stop).

A victim stopped (SIGSTOP) past its lease and continued after the survivor took its runs
over must call nobody more.  Every request the vendor service recorded from the victim
(its Basic-auth user) that reached it after the takeover is listed: vendor, method, path,
the run, step and call it belongs to (:func:`~harness.landed.origin`), when
its sending began in the process (the ``TicketIQ-Sent-At`` header its transport puts on
it, :mod:`ticketiq_pg.vendors.fencing`), when the vendor had it whole, what the vendor did
(``effect``: ``fenced`` is a 409 that applied nothing) and how the survivor settled that
call (its row in ``ticketiq.calls``).  Two counts, apart:

* *begun after the takeover*: its sending began after it; the lease check in the
  transport must refuse every one of those (target: 0);
* *applied after the takeover*: begun before (the process stopped between the check and
  the last byte) and applied after; each must be fenced by its vendor or settled by the
  survivor without a second copy (a duplicate is counted by what landed, apart).

:func:`counted` is what fails a trial: calls begun after the takeover, and calls applied
after it that the survivor did not settle; except a call of a run the continued victim
adopted afresh after the takeover (``adopted_afresh``: its new attempt's, listed only).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness import landed

SENT_AT = "ticketiq-sent-at"
FENCE = "ticketiq-fence"
APPLIED = ("created", "deduplicated")


def _header(request: Mapping[str, Any], name: str) -> str | None:
    return next((v for k, v in request["headers"].items() if k.lower() == name), None)


def sender(request: Mapping[str, Any]) -> str:
    """The process a request came from (its Basic-auth user)."""
    auth = _header(request, "authorization") or ""
    if not auth.startswith("Basic "):
        return ""
    return base64.b64decode(auth[6:]).decode().partition(":")[0]


def listed(requests: Iterable[Mapping[str, Any]], victim: str, takeover_at: float,
           query: Callable[..., list[tuple[Any, ...]]], round_index: int) -> list[dict[str, Any]]:
    """The victim's requests that reached a vendor, or began, after ``takeover_at``.

    Once continued, the victim is alive again and may adopt a run afresh (a workflow woken
    by its timer, at a new epoch with a lease of its own): a call for a run it adopted
    after the takeover, begun after that adoption, is its new attempt's (``adopted_afresh``),
    listed but not counted.  A read carries no mark in its content: its run is its fencing
    token's (``TicketIQ-Fence: <run>:<epoch>``); with vendor limits on, runs suspended for
    a token wake on timers and the continued victim adopts them afresh often."""
    adopted = dict(query(
        "select run_id::text, extract(epoch from min(at)) from ticketiq.audit"
        " where event = 'agent.run.adopted' and actor = %s and at > to_timestamp(%s)"
        " group by run_id", victim, takeover_at))
    out = []
    for request in requests:
        if sender(request) != victim:
            continue
        sent = _header(request, SENT_AT)
        began = float(sent) if sent else None
        if request["wall_at"] <= takeover_at and (began is None or began <= takeover_at):
            continue
        found = landed.origin(request.get("body"))
        token = _header(request, FENCE)
        run_id = found[0] if found else (token.rpartition(":")[0] if token else None)
        call: dict[str, Any] = {
            "round": round_index, "request": request["id"], "vendor": request["vendor"],
            "method": request["method"], "path": request["path"],
            "run_id": found[0] if found else None, "step": found[1] if found else None,
            "call_id": found[2] if found else None, "token": token,
            "began_at": began,
            "began_after_takeover_s": None if began is None else round(began - takeover_at, 3),
            "arrived_after_takeover_s": round(request["wall_at"] - takeover_at, 3),
            "effect": request["effect"], "status": request.get("status"),
            "survivor_settled": None,
            "adopted_afresh": run_id is not None and run_id in adopted
            and (began if began is not None else request["wall_at"]) >= float(adopted[run_id]),
        }
        if found and found[2] != landed.ANSWER_CALL:
            rows = query("select state, settlement, outcome ->> 'outcome' from ticketiq.calls"
                         " where run_id = %s and step = %s and call_id = %s", *found)
            if rows:
                state, settlement, outcome = rows[0]
                call["survivor_settled"] = {"state": state, "settlement": settlement,
                                            "outcome": outcome}
        out.append(call)
    return out


def begun_after(call: Mapping[str, Any]) -> bool:
    return call["began_after_takeover_s"] is None or call["began_after_takeover_s"] > 0


def applied_after(call: Mapping[str, Any]) -> bool:
    return not begun_after(call) and call["effect"] in APPLIED


def settled(call: Mapping[str, Any]) -> bool:
    """Applied after the takeover, and settled by the survivor (not left pending)."""
    row = call["survivor_settled"]
    return row is not None and row["state"] in ("done", "settled")


def counted(calls: Iterable[Mapping[str, Any]]) -> int:
    """The calls that fail the stop verdict."""
    return sum(1 for c in calls if not c.get("adopted_afresh")
               and (begun_after(c) or (applied_after(c) and not settled(c))))


def summary(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's counts and the list."""
    return {"stalled_calls": {
        "after_takeover": len(calls),
        "begun_after_takeover": sum(1 for c in calls if begun_after(c)),
        "applied_after_takeover": sum(1 for c in calls if applied_after(c)),
        "applied_after_and_settled": sum(1 for c in calls if applied_after(c) and settled(c)),
        "fenced": sum(1 for c in calls if c["effect"] == "fenced"),
        "adopted_afresh": sum(1 for c in calls if c.get("adopted_afresh")),
        "calls": calls,
    }}


def send_window(requests: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Seconds from a request's lease check in its process (``TicketIQ-Sent-At``) to the
    vendor having it whole, over every request that carries the stamp: the window a
    stall must hit for a call checked before it to land after it, at a vendor that
    cannot fence."""
    spans = sorted(r["wall_at"] - float(sent) for r in requests
                   if (sent := _header(r, SENT_AT)))
    if not spans:
        return {"requests": 0}

    def at(q: float) -> float:
        return round(spans[min(len(spans) - 1, round(q * (len(spans) - 1)))], 4)

    return {"requests": len(spans), "p50_s": at(0.5), "p99_s": at(0.99),
            "p999_s": at(0.999), "max_s": round(spans[-1], 4)}
