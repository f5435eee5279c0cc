"""Drive the triage example: submit tickets, queue a backlog job, check what landed.

::

    python client.py tickets --count 20 --front http://127.0.0.1:8081 --front http://127.0.0.1:8082
    python client.py tickets --count 3 --prefix B --no-runs   # tickets only, no ticket event
    python client.py backlog B-1 B-2 B-3                      # a job (TICKETIQ_DATABASE_URL)
    python client.py check                                    # exit 1 unless one comment each
    python client.py failed --front http://127.0.0.1:8081    # the failed runs, page by page
    python client.py restart RUN_ID --front ...               # give a failed run another go
    python client.py fork RUN_ID --step 2 --front ...         # a new run from its step 2

``tickets`` creates sample tickets at the ticket service (``TRIAGE_SERVICE_URL``) and
sends one ticket event per ticket to the workers' HTTP fronts in turn; each event
becomes a run.  ``check`` counts, from the service's own record of requests, the
comments and triage notes that landed on each ticket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import Counter
from typing import Any

import httpx

from ticketiq_pg import TicketIQ

SERVICE_URL = os.environ.get("TRIAGE_SERVICE_URL", "http://127.0.0.1:8700")

SAMPLES = (
    ("Checkout page down", "Customers get a 502 on /checkout since 09:12."),
    ("Invoice shows the wrong VAT", "The March invoice charges 25% VAT instead of 19%."),
    ("Password reset mail never arrives", "Requested the reset link three times."),
    ("Export to CSV fails", "Exporting the monthly report ends with an error page."),
    ("Dark mode", "Please add a dark mode to the dashboard."),
    ("Login loop after the update", "Since the update I cannot log in: the page reloads."),
    ("Refund not received", "The refund for order 1182 was approved two weeks ago."),
    ("Typo on the pricing page", "'Anual' should read 'Annual'."),
)


def cmd_tickets(opts: argparse.Namespace) -> int:
    fronts = opts.front or ["http://127.0.0.1:8081"]
    # The fronts take no request without a credential: an API key made with
    # `ticketiq-pg api-key create` (README, step 2).
    key = opts.api_key or os.environ.get("TRIAGE_API_KEY")
    if not key and not opts.no_runs:
        raise SystemExit("client.py tickets: pass --api-key or set TRIAGE_API_KEY")
    with httpx.Client(timeout=10.0) as http:
        for n in range(1, opts.count + 1):
            ticket_id = f"{opts.prefix}-{n}"
            title, body = SAMPLES[(n - 1) % len(SAMPLES)]
            made = http.post(f"{opts.service}/tickets",
                             json={"id": ticket_id, "title": title, "body": body})
            made.raise_for_status()
            line: dict[str, Any] = {"ticket_id": ticket_id}
            if not opts.no_runs:
                front = fronts[(n - 1) % len(fronts)]
                # The event id keys the inbox entry: the same event sent again starts no
                # second run.
                accepted = http.post(f"{front}/ticket-events", json={
                    "event_id": f"created:{ticket_id}", "ticket_id": ticket_id,
                    "type": "ticket.created",
                }, headers={"Authorization": f"Bearer {key}"})
                accepted.raise_for_status()
                line.update(front=front, **accepted.json())
            print(json.dumps(line), flush=True)
    return 0


def cmd_backlog(opts: argparse.Namespace) -> int:
    # resumable: a lost attempt's job is queued again with its progress; the key makes
    # a second queueing of the same backlog a no-op (created: false).
    async def enqueue() -> Any:
        tq = await TicketIQ.connect(opts.database_url, max_size=1)
        try:
            return await tq.jobs.enqueue("backlog", {"tickets": opts.tickets},
                                         resumable=True, idempotency_key=opts.key)
        finally:
            await tq.close()

    job = asyncio.run(enqueue())
    print(json.dumps({"job_id": str(job.job_id), "created": job.created}), flush=True)
    return 0


def landed(requests: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    """What landed on each ticket, from the service's record: comments, triage notes."""
    per_ticket: dict[str, Counter[str]] = {}
    for r in requests:
        parts = r["path"].strip("/").split("/")
        if r["method"] != "POST" or len(parts) != 3 or parts[0] != "tickets":
            continue
        counts = per_ticket.setdefault(parts[1], Counter())
        counts[f"{parts[2]} requests"] += 1
        if r["effect"] == "created":
            counts[f"{parts[2]} landed"] += 1
    return per_ticket


def natural(ticket_id: str) -> tuple[str, int]:
    prefix, _, number = ticket_id.rpartition("-")
    return (prefix, int(number)) if number.isdigit() else (ticket_id, 0)


def cmd_check(opts: argparse.Namespace) -> int:
    requests = httpx.get(f"{opts.service}/requests", timeout=10.0).json()["requests"]
    per_ticket = landed(requests)
    bad = 0
    for ticket_id, counts in sorted(per_ticket.items(), key=lambda item: natural(item[0])):
        comments = counts["comments landed"]
        bad += comments != 1
        print(f"{ticket_id:8} comments landed {comments} (requests {counts['comments requests']})"
              f"  triage notes landed {counts['triage landed']}"
              f" (requests {counts['triage requests']})")
    print(f"{len(per_ticket)} tickets, {bad} without exactly one comment")
    return 1 if bad else 0


def _front(opts: argparse.Namespace) -> tuple[str, dict[str, str]]:
    key = opts.api_key or os.environ.get("TRIAGE_API_KEY")
    if not key:
        raise SystemExit(f"client.py {opts.command}: pass --api-key or set TRIAGE_API_KEY")
    return (opts.front or ["http://127.0.0.1:8081"])[0], {"Authorization": f"Bearer {key}"}


def cmd_failed(opts: argparse.Namespace) -> int:
    """The caller's failed runs, newest first, following the cursor page by page."""
    front, auth = _front(opts)
    params: dict[str, Any] = {"status": "failed", "limit": 50}
    with httpx.Client(base_url=front, headers=auth) as http:
        while True:
            page = http.get("/runs", params=params).raise_for_status().json()
            for run in page["runs"]:
                print(f"{run['run_id']}  {run['kind']}  step {run['last_step']}  "
                      f"{run['failure_reason']}")
            if not page["next_cursor"]:
                return 0
            params["cursor"] = page["next_cursor"]


def cmd_restart(opts: argparse.Namespace) -> int:
    front, auth = _front(opts)
    got = httpx.post(f"{front}/runs/{opts.run_id}/restart", headers=auth,
                     json={"reason": opts.reason})
    print(got.status_code, got.json())
    return 0 if got.status_code == 200 else 1


def cmd_fork(opts: argparse.Namespace) -> int:
    front, auth = _front(opts)
    body: dict[str, Any] = {"step": opts.step, "reason": opts.reason}
    if opts.input:
        body["input"] = json.loads(opts.input)
    # the same key again answers the same fork: a retried click makes one
    got = httpx.post(f"{front}/runs/{opts.run_id}/fork", json=body, headers={
        **auth, "Idempotency-Key": opts.key or f"fork-{opts.run_id}-{opts.step}"})
    print(got.status_code, got.json())
    return 0 if got.status_code in (200, 202) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--service", default=SERVICE_URL, help="the ticket service")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("tickets", help="create tickets and send a ticket event for each")
    p.add_argument("--count", type=int, default=8)
    p.add_argument("--prefix", default="T")
    p.add_argument("--front", action="append", help="a worker's HTTP front (repeat)")
    p.add_argument("--api-key", help="the fronts' API key (default: $TRIAGE_API_KEY)")
    p.add_argument("--no-runs", action="store_true", help="create the tickets only")
    p.set_defaults(func=cmd_tickets)
    p = sub.add_parser("backlog", help="queue a backlog job for these tickets")
    p.add_argument("tickets", nargs="+")
    p.add_argument("--key", help="the job's idempotency key (the same key queues it once)")
    p.add_argument("--database-url", default=os.environ.get("TICKETIQ_DATABASE_URL"))
    p.set_defaults(func=cmd_backlog)
    p = sub.add_parser("check", help="what landed on each ticket, from the service's record")
    p.set_defaults(func=cmd_check)
    for name, what, func in (("failed", "the failed runs, page by page", cmd_failed),
                             ("restart", "restart a failed or stopped run", cmd_restart),
                             ("fork", "fork a run from a step into a new run", cmd_fork)):
        p = sub.add_parser(name, help=what)
        p.add_argument("--front", action="append", help="a worker's HTTP front")
        p.add_argument("--api-key", help="the fronts' API key (default: $TRIAGE_API_KEY)")
        if name != "failed":
            p.add_argument("run_id")
            p.add_argument("--reason", help="why (audited)")
        if name == "fork":
            p.add_argument("--step", type=int, required=True)
            p.add_argument("--input", help="the fork's input, a JSON object")
            p.add_argument("--key", help="the fork's idempotency key")
        p.set_defaults(func=func)
    opts = parser.parse_args(argv)
    if opts.command == "backlog" and not opts.database_url:
        parser.error("backlog needs TICKETIQ_DATABASE_URL or --database-url")
    return int(opts.func(opts))


if __name__ == "__main__":
    sys.exit(main())
