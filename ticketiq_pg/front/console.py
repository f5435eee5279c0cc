"""The operator's console: ``ticketiq-pg status``, ``runs``, ``show`` and ``audit`` in a
browser, and the approvals waiting with a button each (docs/front.md, *Console*).

Mounted at ``/console`` by :func:`ticketiq_pg.front.app.create_app` (its links follow
the mount, under a prefix too).  Only a caller with the ``admin`` scope gets in: the
login form takes an API key or a JWT, verified like an ``Authorization`` header on
every request, and keeps it in an HttpOnly, SameSite=Strict cookie scoped to the
console; a form posted from another origin (its ``Origin`` or ``Referer`` naming
neither the ``Host`` nor the ``X-Forwarded-Host`` the request came by, which a
cross-site form cannot set) is refused (403), writing nothing.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg.conninfo import make_conninfo
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ticketiq_pg.db.inspect import approvals_waiting, audit, runs, snapshot, status
from ticketiq_pg.db.inspect_run import show
from ticketiq_pg.errors import TicketIQError, UnknownApproval, UnknownRun
from ticketiq_pg.front.auth import Authenticator, AuthError, Identity
from ticketiq_pg.ops.render import render_audit, render_show, render_status

COOKIE = "ticketiq_console"
READ_TIMEOUT = 5  # seconds to connect for a page's read
IN_FLIGHT = ("running", "claimed", "suspended")
ENDED = ("completed", "failed", "stopped")
EVENTS = ("agent.run.crash_resumed", "agent.run.lease_lapsed", "agent.run.stop_requested",
          "process.*", "approval.*")
STYLE = ("body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
         "pre{background:#f6f6f6;padding:.5em;overflow:auto}form{display:inline}")

Page = Callable[[Request, Identity], Awaitable[Response]]


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _base(request: Request) -> str:
    """Where the console is mounted (``/console``, or under the app's own prefix)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _page(request: Request, title: str, body: str, status_code: int = 200,
          who: Identity | None = None) -> HTMLResponse:
    bar, base = "", _e(_base(request))
    if who is not None:
        bar = (f'<p>Signed in as <b>{_e(who.subject)}</b> · <a href="{base}/">overview</a> · '
               f'<form method="post" action="{base}/logout"><button>Sign out</button></form></p>')
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)} · ticketiq-pg"
        f"</title><style>{STYLE}</style></head><body><h1>{_e(title)}</h1>{bar}{body}"
        "</body></html>", status_code=status_code,
        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})


def _table(base: str, rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(base, r, c)}</td>" for c in columns) + "</tr>"
        for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(base: str, row: dict[str, Any], column: str) -> str:
    if column == "run_id":
        return f'<a href="{_e(base)}/runs/{_e(row["run_id"])}">{_e(row["run_id"])}</a>'
    if column == "decide":
        form = ('<form method="post" action="{base}/approvals/{id}">'
                '<button name="decision" value="{v}">{label}</button></form>')
        return "".join(form.format(base=_e(base), id=_e(row["approval_id"]), v=v, label=label)
                       for v, label in (("approve", "Approve"), ("reject", "Reject")))
    return _e(row.get(column))


def console_app(auth: Authenticator, store: Any, conninfo: Callable[[], str | None]) -> Starlette:
    """The console's ASGI app, over the front's authenticator and driver."""

    async def read(query: Callable[[Any], Any]) -> Any:
        url = conninfo()
        if not url:
            raise TicketIQError("the front's database URL is not known (is the worker started?)")

        def run() -> Any:
            with snapshot(make_conninfo(url, connect_timeout=READ_TIMEOUT)) as conn:
                return query(conn)
        return await asyncio.to_thread(run)

    def admin_only(page: Page) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if request.method == "POST" and not _same_origin(request):
                return _page(request, "Refused", "<p>A form from another origin.</p>", 403)
            token = request.cookies.get(COOKIE)
            if not token:
                return RedirectResponse(f"{_base(request)}/login", 303)
            try:
                who = await auth.caller({"authorization": f"Bearer {token}"})
            except AuthError:
                response = RedirectResponse(f"{_base(request)}/login", 303)
                response.delete_cookie(COOKIE, path=_base(request) or "/")
                return response
            if not who.admin:
                return _page(request, "Forbidden", "<p>The console needs the admin scope.</p>",
                             403)
            try:
                return await page(request, who)
            except (TicketIQError, psycopg.Error) as exc:
                return _page(request, "Unavailable",
                             f"<p>The database cannot be read now: {_e(exc)}</p>", 503, who)
        return endpoint

    async def overview(request: Request, who: Identity) -> Response:
        def query(conn: Any) -> tuple[Any, ...]:
            return (approvals_waiting(conn), runs(conn, statuses=IN_FLIGHT)["runs"],
                    runs(conn, statuses=ENDED, limit=20)["runs"], status(conn),
                    audit(conn, events=EVENTS, limit=20))
        waiting, in_flight, ended, report, events = await read(query)
        base = _base(request)
        body = (
            f"<h2>Approvals waiting ({len(waiting)})</h2>"
            + _table(base, waiting, ["approval_id", "run_id", "step", "tool", "requested_at",
                                     "decide"])
            + f"<h2>Runs in flight ({len(in_flight)})</h2>"
            + _table(base, in_flight, ["run_id", "status", "entry_point", "owner",
                                       "lease_holder", "last_step", "loss_count"])
            + "<h2>Runs ended lately</h2>"
            + _table(base, ended, ["run_id", "status", "entry_point", "owner", "last_step",
                                   "loss_count", "finished_at", "failure_reason"])
            + f"<h2>Status</h2><pre>{_e(render_status(report))}</pre>"
            + f"<h2>Resumes, lapses and processes</h2><pre>{_e(render_audit(events))}</pre>")
        return _page(request, "ticketiq-pg console", body, who=who)

    async def run_page(request: Request, who: Identity) -> Response:
        run_id = request.path_params["run_id"]
        try:
            report = await read(lambda conn: show(conn, run_id))
        except UnknownRun:
            return _page(request, "Unknown run", "<p>No run has that id.</p>", 404, who)
        stop = ""
        if report["run"]["status"] not in ENDED:
            stop = (f'<form method="post" action="{_e(_base(request))}/runs/{run_id}/stop">'
                    '<button name="stop" value="1">Stop this run</button></form>')
        return _page(request, f"Run {run_id}",
                     f"{stop}<pre>{_e(render_show(report))}</pre>", who=who)

    async def act(request: Request, who: Identity, call: Awaitable[Any], then: str) -> Response:
        """A person's act (a stop, a decision) as ``who``; back to ``then`` once done."""
        try:
            await call
        except (UnknownRun, UnknownApproval):
            return _page(request, "Not found", "<p>No such run or approval.</p>", 404, who)
        except TicketIQError as exc:
            return _page(request, "Not done", f"<p>{_e(exc)}</p>", 409, who)
        return RedirectResponse(f"{_base(request)}{then}", 303)

    async def stop_run(request: Request, who: Identity) -> Response:
        run_id = request.path_params["run_id"]
        return await act(request, who, store.request_stop(run_id, who.subject,
                                                          "from the console"), f"/runs/{run_id}")

    async def decide(request: Request, who: Identity) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        decision = form.get("decision", [""])[0]
        if decision not in ("approve", "reject"):
            return _page(request, "Bad request", "<p>decision must be approve or reject</p>",
                         422, who)
        return await act(request, who, store.decide_approval(
            request.path_params["approval_id"], decision == "approve", who.subject,
            "from the console"), "/")

    async def login(request: Request) -> Response:
        base = _base(request)
        form = (f'<form method="post" action="{_e(base)}/login"><label>API key or JWT of an '
                'admin: <input type="password" name="token" size="60" autofocus></label> '
                '<button>Sign in</button></form>')
        if request.method == "GET":
            return _page(request, "Sign in", form)
        if not _same_origin(request):
            return _page(request, "Refused", "<p>A form from another origin.</p>", 403)
        token = parse_qs((await request.body()).decode("utf-8", "replace")).get("token", [""])[0]
        try:
            who = await auth.caller({"authorization": f"Bearer {token.strip()}"})
        except AuthError as exc:
            return _page(request, "Sign in", f"<p>{_e(exc.detail)}</p>{form}", 401)
        if not who.admin:
            return _page(request, "Sign in",
                         f"<p>{_e(who.subject)} has no admin scope.</p>{form}", 403)
        https = "https" in (request.url.scheme, request.headers.get("x-forwarded-proto"))
        response = RedirectResponse(f"{base}/", 303)
        response.set_cookie(COOKIE, token.strip(), path=base or "/", httponly=True,
                            samesite="strict", secure=https)
        return response

    async def logout(request: Request) -> Response:
        response = RedirectResponse(f"{_base(request)}/login", 303)
        if _same_origin(request):
            response.delete_cookie(COOKIE, path=_base(request) or "/")
        return response

    return Starlette(routes=[
        Route("/", admin_only(overview)),
        # A path that is no UUID matches nothing: 404 before any credential is looked at.
        Route("/runs/{run_id:uuid}", admin_only(run_page)),
        Route("/runs/{run_id:uuid}/stop", admin_only(stop_run), methods=["POST"]),
        Route("/approvals/{approval_id:uuid}", admin_only(decide), methods=["POST"]),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
    ])


def _same_origin(request: Request) -> bool:
    """A browser's form post names its origin: it must be the host the request came to."""
    origin = request.headers.get("origin") or request.headers.get("referer") or ""
    hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")} - {None}
    return bool(origin) and urlsplit(origin).netloc in hosts

