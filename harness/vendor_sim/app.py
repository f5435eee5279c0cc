"""The vendors behind one dispatcher: each request applied and recorded in one transaction.

:class:`VendorApp` matches a request to a route of :mod:`~.incidentio`, :mod:`~.jira`,
:mod:`~.chat` (Teams, Discord), :mod:`~.sqs` or :mod:`~.sns`, runs it inside a savepoint
(a 4xx or a bug in the imitation rolls its effect back) and records it.  Standard library
only.
"""

from __future__ import annotations

import collections
import sqlite3
import threading
from dataclasses import dataclass, field

from harness.vendor_sim import chat, incidentio, jira, sns, sqs
from harness.vendor_sim.store import VENDORS, Options, Store, dumps
from harness.vendor_sim.wire import (
    Call,
    Incoming,
    Outcome,
    Reject,
    Route,
    error_body,
    peek_key,
)

#: The fencing token a request carries, and the header of a 409 refusing it (the same
#: names as :mod:`ticketiq_pg.vendors.fencing`; this service is standard library only).
FENCE_HEADER = "TicketIQ-Fence"
REFUSED_HEADER = "TicketIQ-Fence-Refused"


@dataclass
class VendorApp:
    store: Store
    options: Options = field(default_factory=Options)
    routes: list[Route] = field(default_factory=list)
    #: A vendor's rate limit, as the real ones have: requests past ``per_second`` in the
    #: last second answered 429 with Retry-After (set by ``POST /_control/rate_limits``).
    rate_limits: dict[str, float] = field(default_factory=dict)
    _recent: dict[str, collections.deque[float]] = field(default_factory=dict)
    _rate_lock: threading.Lock = field(default_factory=threading.Lock)

    def over_rate(self, vendor: str, now: float) -> float | None:
        """Seconds until the vendor takes another request, when this one is past its rate
        (None: it is taken, and counted)."""
        limit = self.rate_limits.get(vendor)
        if limit is None:
            return None
        with self._rate_lock:
            recent = self._recent.setdefault(vendor, collections.deque())
            while recent and recent[0] <= now - 1.0:
                recent.popleft()
            if len(recent) >= limit:
                return max(recent[0] + 1.0 - now, 0.001)
            recent.append(now)
            return None

    def __post_init__(self) -> None:
        for module in (incidentio, jira, chat, sqs, sns):
            self.routes.extend(module.ROUTES)

    def handle(self, req: Incoming, fault: str | None) -> Outcome:
        """Apply one vendor request and record it, in one committed transaction."""
        with self.store.transaction() as conn:
            call = Call(self.options, conn, req, self.store.now())
            refused = _fence(conn, req)
            if refused is not None:
                self._record(conn, req, refused, *peek_key(req), fault)
                return refused
            conn.execute("SAVEPOINT handler")
            try:
                outcome = self._dispatch(call)
            except Reject as rej:
                conn.execute("ROLLBACK TO handler")
                call.created.clear()
                outcome = Outcome(
                    rej.status,
                    error_body(req.vendor, rej.status, rej.message, rej.field, rej.code),
                    "rejected",
                    error=rej.message,
                )
            except Exception as exc:  # a bug in the imitation: no effect, 500
                conn.execute("ROLLBACK TO handler")
                call.created.clear()
                message = f"internal error in the vendor service: {exc!r}"
                outcome = Outcome(500, {"error": message}, "failed", error=message)
            conn.execute("RELEASE handler")
            request_id = self._record(conn, req, outcome, call.key, call.key_kind, fault)
            if call.created:
                conn.executemany(
                    "UPDATE objects SET request_id = ? WHERE seq = ?",
                    [(request_id, seq) for seq in call.created],
                )
        return outcome

    def record_only(self, req: Incoming, outcome: Outcome, fault: str) -> None:
        """Record a request a fault stopped before any effect."""
        with self.store.transaction() as conn:
            key, kind = peek_key(req)
            self._record(conn, req, outcome, key, kind, fault)

    def _dispatch(self, call: Call) -> Outcome:
        req = call.req
        if req.vendor not in VENDORS:
            raise Reject(404, f"no vendor is imitated at {req.path!r}")
        allowed: list[str] = []
        for route in self.routes:
            if route.vendor != req.vendor:
                continue
            params = route.match(req.segments)
            if params is None:
                continue
            if route.method != req.method:
                allowed.append(route.method)
                continue
            return route.handler(call, params)
        if allowed:
            raise Reject(
                405,
                f"method {req.method} is not allowed on {req.path} "
                f"(allowed: {', '.join(sorted(set(allowed)))})",
            )
        raise Reject(404, f"no {req.vendor} endpoint at {req.path}")

    @staticmethod
    def _record(
        conn: sqlite3.Connection,
        req: Incoming,
        outcome: Outcome,
        key: str | None,
        key_kind: str | None,
        fault: str | None,
    ) -> int:
        cur = conn.execute(
            "INSERT INTO requests (at, wall_at, vendor, method, path, query, headers, body, key,"
            " key_kind, status, effect, fault, object_kind, object_id, response, error)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                req.at,
                req.wall_at,
                req.vendor,
                req.method,
                req.path,
                req.raw_query,
                dumps(req.headers),
                req.body.decode("utf-8", errors="replace"),
                key,
                key_kind,
                None if fault in ("drop_after_accept", "drop_before_accept") else outcome.status,
                outcome.effect,
                fault,
                outcome.object_kind,
                outcome.object_id,
                None if outcome.body is None else dumps(outcome.body),
                outcome.error,
            ),
        )
        return int(cur.lastrowid)


def _fence(conn: sqlite3.Connection, req: Incoming) -> Outcome | None:
    """Keep the newest fencing token per run; refuse a changing request with an older one.

    The token is ``TicketIQ-Fence: <run id>:<epoch>`` (:mod:`ticketiq_pg.vendors.fencing`);
    any request carrying one (a read too) raises the run's newest, so a write of an attempt
    taken over is refused once its successor has called any vendor here for the run.
    """
    header = next((v for k, v in req.headers.items() if k.lower() == FENCE_HEADER.lower()),
                  None)
    run_id, _, raw_epoch = (header or "").rpartition(":")
    if not run_id or not raw_epoch.isdigit():
        return None
    epoch = int(raw_epoch)
    row = conn.execute("SELECT epoch FROM fences WHERE run_id = ?", (run_id,)).fetchone()
    newest = int(row[0]) if row is not None else None
    if newest is not None and epoch < newest and req.method not in ("GET", "HEAD"):
        message = (f"fencing token {epoch} of run {run_id} is older than {newest}: "
                   "refused, nothing applied")
        return Outcome(409, error_body(req.vendor, 409, message, code="fenced"), "fenced",
                       error=message, headers={REFUSED_HEADER: "1"})
    if newest is None or epoch > newest:
        conn.execute("INSERT INTO fences (run_id, epoch) VALUES (?, ?) ON CONFLICT (run_id)"
                     " DO UPDATE SET epoch = excluded.epoch", (run_id, epoch))
    return None
