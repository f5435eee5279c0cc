"""How the stop trials judge a stalled process's calls after the takeover
(harness.stalled_calls): begun after it, and applied after it, counted apart."""

from __future__ import annotations

import base64
from typing import Any

from harness import stalled_calls
from harness.landed import mark

TAKEOVER = 1000.0
RUN = "11111111-2222-4333-8444-555555555555"


def request(n: int, who: str, *, sent: float | None, arrived: float, effect: str,
            method: str = "POST") -> dict[str, Any]:
    headers = {"Authorization": "Basic " + base64.b64encode(f"{who}:".encode()).decode()}
    if sent is not None:
        headers["TicketIQ-Sent-At"] = f"{sent:.6f}"
    return {"id": n, "vendor": "jira", "method": method, "path": "/jira/x/comment",
            "headers": headers, "wall_at": arrived, "effect": effect, "status": 201,
            "body": {"body": mark("hi", RUN, 2, f"call_{n}")}}


def settled_rows(state: str | None) -> Any:
    def query(sql: str, *_params: Any) -> list[tuple[Any, ...]]:
        if "ticketiq.audit" in sql:  # runs the victim adopted afresh: none here
            return []
        return [(state, "read_back", "not_found")] if state else []
    return query


def test_begun_and_applied_after_the_takeover_are_told_apart() -> None:
    requests = [
        request(1, "victim-0", sent=990.0, arrived=995.0, effect="created"),  # before: not listed
        request(2, "survivor", sent=1001.0, arrived=1001.1, effect="created"),  # not the victim
        request(3, "victim-0", sent=990.0, arrived=1000.5, effect="fenced"),  # stopped mid-send
        request(4, "victim-0", sent=991.0, arrived=1000.6, effect="created"),  # applied after
        request(5, "victim-0", sent=1000.4, arrived=1000.7, effect="created"),  # begun after
        request(6, "victim-0", sent=None, arrived=1000.8, effect="read", method="GET"),
    ]
    calls = stalled_calls.listed(requests, "victim-0", TAKEOVER, settled_rows("settled"), 3)
    assert [c["request"] for c in calls] == [3, 4, 5, 6]
    assert calls[0]["run_id"] == RUN and calls[0]["step"] == 2 and calls[0]["round"] == 3
    assert calls[0]["began_after_takeover_s"] == -10.0
    summary = stalled_calls.summary(calls)["stalled_calls"]
    # 5 and 6 (no stamp: taken as begun after) began after; 4 was applied after, settled.
    assert (summary["begun_after_takeover"], summary["applied_after_takeover"],
            summary["applied_after_and_settled"], summary["fenced"]) == (2, 1, 1, 1)
    assert stalled_calls.counted(calls) == 2
    # Unsettled by the survivor, an applied-after write fails the verdict too.
    unsettled = stalled_calls.listed(requests, "victim-0", TAKEOVER, settled_rows(None), 3)
    assert stalled_calls.counted(unsettled) == 3


def test_the_send_window_is_from_the_lease_check_to_the_vendor() -> None:
    requests = [request(n, "p", sent=100.0, arrived=100.0 + n / 1000, effect="created")
                for n in range(1, 101)]
    window = stalled_calls.send_window([*requests, request(0, "p", sent=None, arrived=1.0,
                                                           effect="read")])
    assert window["requests"] == 100
    assert window["max_s"] == 0.1 and 0.049 <= window["p50_s"] <= 0.052
    assert stalled_calls.send_window([]) == {"requests": 0}


def test_a_stalled_process_is_excused_only_for_runs_it_adopted_afresh() -> None:
    """Stop mode: a call after the takeover counts against the stalled process, unless it
    is for a run that process adopted again afterwards (a new attempt), made after that."""
    auth = {"Authorization": "Basic " + base64.b64encode(b"victim-1:x").decode()}

    def made(at: float, run: str | None) -> dict:
        body = {"text": mark("hi", run, 2, "c1")} if run else {}
        return {"id": int(at * 10), "vendor": "jira", "effect": "created", "status": 201,
                "headers": {**auth, "TicketIQ-Sent-At": str(at - 0.001)}, "wall_at": at,
                "method": "POST", "path": "/x", "body": body}

    def query(sql: str, *_: object) -> list[tuple]:
        return [("r-new", 12.0)] if "ticketiq.audit" in sql else []

    requests = [made(9.0, "r-old"), made(11.0, "r-old"), made(11.0, "r-new"),
                made(13.0, "r-new"), made(12.0, None)]
    out = stalled_calls.listed(requests, "victim-1", 10.0, query, 0)
    # r-old after the takeover, r-new before its adoption, the unmarked one
    assert stalled_calls.counted(out) == 3
    assert [o["adopted_afresh"] for o in out] == [False, False, True, False]


def test_a_read_of_a_run_adopted_afresh_is_known_by_its_fencing_token() -> None:
    """A read carries no mark in its content: its run is its fencing token's.  Runs
    suspended for a vendor's token wake on timers, and the continued victim may adopt one
    afresh: its reads then are its new attempt's, as its writes are."""
    auth = {"Authorization": "Basic " + base64.b64encode(b"victim-1:x").decode()}

    def read(at: float, token: str | None) -> dict:
        headers = {**auth, "TicketIQ-Sent-At": str(at - 0.001)}
        if token:
            headers["TicketIQ-Fence"] = token
        return {"id": int(at * 10), "vendor": "jira", "effect": "read", "status": 200,
                "headers": headers, "wall_at": at, "method": "GET", "path": "/x",
                "body": None}

    def query(sql: str, *_: object) -> list[tuple]:
        return [("r-new", 12.0)] if "ticketiq.audit" in sql else []

    out = stalled_calls.listed([read(13.0, "r-new:9"), read(11.0, "r-new:8"),
                                read(13.0, "r-old:4"), read(13.0, None)], "victim-1", 10.0,
                               query, 0)
    assert [o["adopted_afresh"] for o in out] == [True, False, False, False]
    assert stalled_calls.counted(out) == 3
