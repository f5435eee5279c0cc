"""The operator's console: ``ticketiq-pg status``, ``runs``, ``show`` and ``audit`` in a
browser, the approvals waiting with a button each, and on a run's page the inspector (an
admin's ad hoc call of one of the app's tools, :mod:`ticketiq_pg.runtime.inspector`)
(docs/front.md, *Console*).  Pages are Jinja2 templates (``templates/``), autoescaped.

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
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import psycopg
from jinja2 import Environment, PackageLoader, StrictUndefined
from psycopg.conninfo import make_conninfo
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ticketiq_pg.db.inspect import (
    approvals_waiting,
    audit,
    runs,
    snapshot,
    status,
    vendor_limits,
)
from ticketiq_pg.db.inspect_run import show
from ticketiq_pg.errors import TicketIQError, UnknownApproval, UnknownRun
from ticketiq_pg.front import door
from ticketiq_pg.front.auth import Authenticator, AuthError, Identity
from ticketiq_pg.ops.render import render_audit, render_show, render_status
from ticketiq_pg.runtime.inspector import InspectorRefused

if TYPE_CHECKING:
    from ticketiq_pg.runtime.inspector import Inspector

COOKIE = "ticketiq_console"
READ_TIMEOUT = 5  # seconds to connect for a page's read
IN_FLIGHT = ("running", "claimed", "suspended")
ENDED = ("completed", "failed", "stopped")
EVENTS = ("agent.run.crash_resumed", "agent.run.lease_lapsed", "agent.run.stop_requested",
          "agent.run.call_fenced", "process.*", "approval.*", "inspector.*")

def _style_hash() -> str:
    """The CSP source of base.html's one inline stylesheet (its SHA-256)."""
    import base64
    import hashlib
    import re
    from importlib.resources import files

    text = files("ticketiq_pg.front").joinpath("templates", "base.html").read_text("utf-8")
    found = re.search(r"<style>(.*?)</style>", text, re.S)
    assert found is not None, "base.html has its stylesheet"
    digest = hashlib.sha256(found.group(1).encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


#: What a page of the front (the console, the schema page) may load: its own stylesheet
#: and nothing else: no script, no frame, no other origin; forms post to the front only.
PAGE_CSP = (f"default-src 'none'; style-src {_style_hash()}; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
           "Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff"}

Page = Callable[[Request, Identity], Awaitable[Response]]

# Every value a page shows is escaped by Jinja2's autoescaping, never by hand.
_templates = Environment(loader=PackageLoader("ticketiq_pg.front", "templates"),
                         autoescape=True, undefined=StrictUndefined)


def _base(request: Request) -> str:
    """Where the console is mounted (``/console``, or under the app's own prefix)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _render(request: Request, template: str, title: str, status_code: int = 200,
            who: Identity | None = None, **values: Any) -> HTMLResponse:
    values.setdefault("message", "")
    html = _templates.get_template(template).render(
        title=title, who=who, base=_base(request), **values)
    return HTMLResponse(html, status_code=status_code, headers=HEADERS)


def schema_page(request: Request, spec: dict[str, Any], spec_url: str) -> HTMLResponse:
    """The OpenAPI document as a page (``/docs``, ``/redoc``): rendered here, no script,
    nothing loaded from another origin (docs/front.md)."""
    operations = []
    for path, item in spec.get("paths", {}).items():
        for method, op in item.items():
            params = [{"name": p.get("name"), "where": p.get("in"),
                       "required": p.get("required", False),
                       "schema": json.dumps(p.get("schema", {}), sort_keys=True)}
                      for p in op.get("parameters", [])]
            body = op.get("requestBody", {}).get("content", {})
            operations.append({
                "id": op.get("operationId", f"{method}-{path}"), "method": method.upper(),
                "path": path, "summary": op.get("summary", ""),
                "description": op.get("description", ""), "parameters": params,
                "body": ", ".join(f"{kind}: {json.dumps(v.get('schema', {}), sort_keys=True)}"
                                  for kind, v in body.items()),
                "responses": [(status, r.get("description", ""))
                              for status, r in op.get("responses", {}).items()]})
    schemas = [(name, json.dumps(schema, indent=2, sort_keys=True)) for name, schema in
               spec.get("components", {}).get("schemas", {}).items()]
    info = spec.get("info", {})
    return _render(request, "schema.html", f"{info.get('title', 'API')} {info.get('version', '')}",
                   description=info.get("description", ""), spec_url=spec_url,
                   operations=operations, schemas=schemas)


def _page(request: Request, title: str, message: str, status_code: int = 200,
          who: Identity | None = None) -> HTMLResponse:
    """A page that only says something (refused, not found, unavailable)."""
    return _render(request, "base.html", title, status_code, who, message=message)


def _refused(request: Request, exc: door.Refused, who: Identity | None = None) -> HTMLResponse:
    """The door's refusal (422) as a page."""
    return _page(request, "Refused", f"{exc.message} ({'.'.join(map(str, exc.loc))})",
                 exc.status_code, who)


def console_app(auth: Authenticator, store: Any, conninfo: Callable[[], str | None],
                inspector: Callable[[], Inspector | None] | None = None,
                sealer: Callable[[], Any] | None = None) -> Starlette:
    """The console's ASGI app, over the front's authenticator and driver (and the
    worker's :class:`~ticketiq_pg.runtime.inspector.Inspector`, for a run's page, and its
    seal keys, to fork a run)."""

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
                return _page(request, "Refused", "A form from another origin.", 403)
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
                return _page(request, "Forbidden", "The console needs the admin scope.", 403)
            try:
                # The admin first, then the door: every value the request carries.
                await door.check_request(request)
            except door.Refused as exc:
                return _refused(request, exc, who)
            try:
                return await page(request, who)
            except (TicketIQError, psycopg.Error) as exc:
                return _page(request, "Unavailable",
                             f"The database cannot be read now: {exc}", 503, who)
        endpoint.door = True  # type: ignore[attr-defined]
        return endpoint

    async def overview(request: Request, who: Identity) -> Response:
        def query(conn: Any) -> tuple[Any, ...]:
            return (approvals_waiting(conn), runs(conn, statuses=IN_FLIGHT)["runs"],
                    runs(conn, statuses=ENDED, limit=20)["runs"], status(conn),
                    audit(conn, events=EVENTS, limit=20))
        waiting, in_flight, ended, report, events = await read(query)
        return _render(request, "overview.html", "ticketiq-pg console", who=who,
                       waiting=waiting, in_flight=in_flight, ended=ended,
                       status_text=render_status(report), audit_text=render_audit(events))

    async def limits(request: Request, who: Identity) -> Response:
        found = await read(vendor_limits)
        return _render(request, "limits.html", "Vendor limits and runs waiting", who=who,
                       vendors=found["vendors"], waiting=found["waiting_to_start"])

    async def run_page(request: Request, who: Identity, call: dict[str, Any] | None = None,
                       form: dict[str, str] | None = None, status_code: int = 200,
                       message: str = "") -> Response:
        run_id = request.path_params["run_id"]
        try:
            report = await read(lambda conn: show(conn, run_id))
        except UnknownRun:
            return _page(request, "Unknown run", "No run has that id.", 404, who)
        found = inspector() if inspector is not None else None
        tools = found.tools() if found is not None else []
        form = form or {}
        run = report["run"]
        keys = sealer() if sealer is not None else None
        return _render(request, "run.html", f"Run {run_id}", status_code, who,
                       run_id=run_id, ended=run["status"] in ENDED,
                       restartable=run["status"] in ("failed", "stopped"),
                       last_step=int(run.get("last_step") or 0),
                       forkable=keys is not None and int(run.get("last_step") or 0) >= 1,
                       fork_key=uuid.uuid4().hex,
                       report_text=render_show(report), tools=tools, call=call,
                       chosen=form.get("tool", ""), arguments=form.get("arguments", "{}"),
                       message=message)

    async def inspect(request: Request, who: Identity) -> Response:
        """An operator's ad hoc call of one tool, shown on the run's page (never in it)."""
        found = inspector() if inspector is not None else None
        if found is None:
            return _page(request, "Not here", "This front has no worker's tools to call.",
                         404, who)
        form = door.form(await request.body())
        try:
            # The door's parser: what PostgreSQL refuses is a 422 here too.
            arguments = door.loads(form.get("arguments") or "{}", "body", "arguments")
        except door.Refused as exc:
            return await run_page(request, who, form=form, status_code=422,
                                  message=f"{exc.message} (arguments)")
        except ValueError as exc:
            return await run_page(request, who, form=form, status_code=422,
                                  message=f"The arguments are not JSON: {exc}")
        try:
            made = await found.call(who.subject, form.get("tool", ""), arguments,
                                    run_id=request.path_params["run_id"])
        except InspectorRefused as exc:
            return await run_page(request, who, form=form, status_code=exc.status,
                                  message=str(exc))
        except UnknownRun:
            return _page(request, "Unknown run", "No run has that id.", 404, who)
        call = {**made.as_dict(), "result_text": json.dumps(made.result, indent=2,
                                                            default=str)}
        return await run_page(request, who, call=call, form=form)

    async def act(request: Request, who: Identity, call: Awaitable[Any], then: str) -> Response:
        """A person's act (a stop, a decision) as ``who``; back to ``then`` once done."""
        try:
            await call
        except (UnknownRun, UnknownApproval):
            return _page(request, "Not found", "No such run or approval.", 404, who)
        except TicketIQError as exc:
            return _page(request, "Not done", str(exc), 409, who)
        return RedirectResponse(f"{_base(request)}{then}", 303)

    async def stop_run(request: Request, who: Identity) -> Response:
        run_id = request.path_params["run_id"]
        return await act(request, who, store.request_stop(run_id, who.subject,
                                                          "from the console"), f"/runs/{run_id}")

    async def restart_run(request: Request, who: Identity) -> Response:
        run_id = request.path_params["run_id"]
        reason = door.form(await request.body()).get("reason") or "from the console"
        return await act(request, who, store.manage.restart_run(run_id, who.subject,
                                                                reason[:2000]),
                         f"/runs/{run_id}")

    async def fork(request: Request, who: Identity) -> Response:
        """A fork of the run from a step it wrote; on to the fork's page."""
        from ticketiq_pg.errors import SealMismatch
        from ticketiq_pg.runtime.fork import fork_key, fork_run

        run_id = request.path_params["run_id"]
        keys = sealer() if sealer is not None else None
        if keys is None:
            return _page(request, "Not here", "This front has no seal keys to fork with.",
                         503, who)
        form = door.form(await request.body())
        try:
            step = int(form.get("step", ""))
            raw = (form.get("input") or "").strip()
            value = door.loads(raw, "body", "input") if raw else None
        except door.Refused as exc:
            return _refused(request, exc, who)
        except ValueError as exc:
            return _page(request, "Bad request", f"step is a number, input a JSON object: "
                         f"{exc}", 422, who)
        if step < 1 or (value is not None and not isinstance(value, dict)):
            return _page(request, "Bad request", "step is 1 or more, input a JSON object",
                         422, who)
        key = (form.get("key") or "")[:200] or uuid.uuid4().hex
        try:
            made = await fork_run(store, keys, run_id, step, who.subject,
                                  reason=(form.get("reason") or "from the console")[:2000],
                                  input=value, input_given=value is not None,
                                  idempotency_key=fork_key(who.subject, key))
        except UnknownRun:
            return _page(request, "Not found", "No such run.", 404, who)
        except SealMismatch as exc:
            return _page(request, "Not forked", str(exc), 409, who)
        except TicketIQError as exc:
            return _page(request, "Not forked", str(exc), 422, who)
        return RedirectResponse(f"{_base(request)}/runs/{made['run_id']}", 303)

    async def decide(request: Request, who: Identity) -> Response:
        decision = door.form(await request.body()).get("decision", "")
        if decision not in ("approve", "reject"):
            return _page(request, "Bad request", "decision must be approve or reject", 422, who)
        return await act(request, who, store.waits.decide_approval(
            request.path_params["approval_id"], decision == "approve", who.subject,
            "from the console"), "/")

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return _render(request, "login.html", "Sign in")
        if not _same_origin(request):
            return _page(request, "Refused", "A form from another origin.", 403)
        token = door.form(await request.body()).get("token", "")
        try:
            who = await auth.caller({"authorization": f"Bearer {token.strip()}"})
        except AuthError as exc:
            return _render(request, "login.html", "Sign in", 401, message=exc.detail)
        if not who.admin:
            return _render(request, "login.html", "Sign in", 403,
                           message=f"{who.subject} has no admin scope.")
        https = "https" in (request.url.scheme, request.headers.get("x-forwarded-proto"))
        base = _base(request)
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
        Route("/limits", admin_only(limits)),
        # A path that is no UUID matches nothing: 404 before any credential is looked at.
        Route("/runs/{run_id:uuid}", admin_only(run_page)),
        Route("/runs/{run_id:uuid}/stop", admin_only(stop_run), methods=["POST"]),
        Route("/runs/{run_id:uuid}/restart", admin_only(restart_run), methods=["POST"]),
        Route("/runs/{run_id:uuid}/fork", admin_only(fork), methods=["POST"]),
        Route("/runs/{run_id:uuid}/inspect", admin_only(inspect), methods=["POST"]),
        Route("/approvals/{approval_id:uuid}", admin_only(decide), methods=["POST"]),
        Route("/login", door.guarded(login, _refused), methods=["GET", "POST"]),
        Route("/logout", door.guarded(logout, _refused), methods=["POST"]),
    ])


def _same_origin(request: Request) -> bool:
    """A browser's form post names its origin: it must be the host the request came to."""
    origin = request.headers.get("origin") or request.headers.get("referer") or ""
    hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")} - {None}
    return bool(origin) and urlsplit(origin).netloc in hosts

