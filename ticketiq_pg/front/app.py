"""The app process's HTTP front: entry points that write to the durable inbox first.

Every request that starts work is written to ``ticketiq.entries`` (one
statement, ``ticketiq.accept_entry``) before it is answered, keyed by the
sender's id: a request the edge retries on the other process — the same
webhook delivery id, Teams activity id, A2A task id or idempotency key —
finds the entry already there and starts no second run.  An entry pump in
every process claims the entry and runs it, under the run id answered here.

Every route but ``/healthz`` needs a verified caller (:mod:`.auth`; the console at
``/console`` signs its admins in with the same credentials, :mod:`.console`); bodies over
the limit get 413 (:mod:`.limits`).  The routes, the credentials and how to embed
the front are in docs/front.md.  The OpenAPI description (``/openapi.json``, ``/docs``,
``/redoc``) is off unless ``TICKETIQ_HTTP_DOCS`` turns it on, and then needs a credential
too.  Every refusal is counted and logged by its reason (:mod:`.refusals`); a value
PostgreSQL cannot store is refused with 422 before anything is written (:mod:`.inputs`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Path, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.events import EventFeed
from ticketiq_pg.errors import InvalidPayload
from ticketiq_pg.front import door
from ticketiq_pg.front.auth import Authenticator, AuthError, Identity
from ticketiq_pg.front.console import console_app, schema_page
from ticketiq_pg.front.inputs import require_storable
from ticketiq_pg.front.inspector_api import inspector_router
from ticketiq_pg.front.limits import BodyLimit
from ticketiq_pg.front.metrics_api import metrics_router
from ticketiq_pg.front.refusals import note_refusal
from ticketiq_pg.front.runs_api import runs_router
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.front.trace_header import TraceHeader
from ticketiq_pg.front.waiter import RunWaiter
from ticketiq_pg.runtime.entries import EntryKind, builtin_kinds
from ticketiq_pg.runtime.inspector import Inspector

if TYPE_CHECKING:
    from ticketiq_pg.runtime.worker import Worker

A2A_STATES = {
    "pending": "submitted",
    "running": "working",
    "answered": "completed",
    "failed": "failed",
    "stopped": "canceled",
}
SOURCE = r"^[A-Za-z0-9_.-]{1,100}$"


class Accepted(BaseModel):
    entry_id: int
    run_id: uuid.UUID
    state: str
    created: bool


class TicketEvent(BaseModel):
    model_config = ConfigDict(extra="allow")
    event_id: str = Field(min_length=1, max_length=200)
    ticket_id: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=100)


class TeamsAccount(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=200)
    name: str | None = None


class TeamsConversation(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=400)


class TeamsActivity(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    type: str = Field(pattern="^message$")
    id: str = Field(min_length=1, max_length=200)
    conversation: TeamsConversation
    from_: TeamsAccount = Field(alias="from")
    text: str = Field(default="", max_length=28000)


class CopilotTurn(BaseModel):
    turn_id: str = Field(min_length=1, max_length=200)
    conversation_id: str = Field(min_length=1, max_length=200)
    user: str = Field(min_length=1, max_length=200, description="the run-as (checked)")
    text: str = Field(min_length=1, max_length=28000)


class PlaygroundRun(BaseModel):
    run_key: str = Field(min_length=1, max_length=200)
    user: str = Field(min_length=1, max_length=200, description="the run-as (checked)")
    input: dict[str, Any] = Field(default_factory=dict)


class _WorkerDb:
    """The driver of a worker that starts later (an embedded front): looked up on use."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker

    def __getattr__(self, name: str) -> Any:
        if self._worker.db is None:
            raise HTTPException(status_code=503, detail="the worker is not started")
        return getattr(self._worker.db, name)


def _dumped(model: BaseModel) -> dict[str, Any]:
    """A body model as JSON (its values passed the door: nothing NaN or NUL)."""
    return model.model_dump(mode="json", by_alias=True)


def _rpc_error(rpc_id: Any, code: int, message: str, status: int = 400) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}},
        status_code=status,
    )


def create_app(db: TicketIQ | None = None, *, worker: Worker | None = None,
               settings: FrontSettings | None = None,
               kinds: dict[str, EntryKind] | None = None,
               crash_resume_entries: bool | None = None) -> FastAPI:
    """The ASGI app of one app process, over its driver (or a worker started later:
    mount it and start the worker with :func:`ticketiq_pg.front.embed.worker_lifespan`)."""
    if db is None and worker is None:
        raise ValueError("create_app needs a driver or a worker")
    store: Any = db if db is not None else _WorkerDb(worker)  # type: ignore[arg-type]
    settings = settings or FrontSettings()
    if worker is not None:
        kinds = kinds or worker.app.kinds
        if crash_resume_entries is None:
            crash_resume_entries = worker.settings.crash_resume_entries
    kinds = kinds or builtin_kinds()
    resume_entries = True if crash_resume_entries is None else crash_resume_entries
    auth = Authenticator(store, settings)
    waiter = RunWaiter(lambda: getattr(getattr(store, "pool", None), "conninfo", None))
    app = FastAPI(
        title="ticketiq-pg app process",
        version="2",
        description="Entry points that write to the durable inbox before they answer. "
        "Every route but /healthz needs Authorization: Bearer <API key or JWT> (or a "
        "webhook signature, or a Bot Framework token).",
        # Served below, behind a credential, when the settings ask for them.
        openapi_url=None, docs_url=None, redoc_url=None,
    )
    app.state.auth, app.state.waiter, app.state.kinds = auth, waiter, kinds
    #: Set when the process drains (SIGTERM): /healthz answers 503 so an edge stops
    #: sending here while the process still serves what it was sent.
    app.state.draining = False
    app.add_middleware(BodyLimit, max_body=settings.max_body)
    app.add_middleware(_SecurityHeaders)
    app.add_middleware(TraceHeader)
    app.router.on_shutdown.append(waiter.stop)
    #: The run event streams' reader (GET /runs/{id}/events), one for the front.
    feed = EventFeed(store, waiter.conninfo)
    app.state.feed = feed
    app.router.on_shutdown.append(feed.close)
    scheme = HTTPBearer(auto_error=False, description="an API key (tiq_...) or a JWT")

    @app.exception_handler(AuthError)
    async def refused(request: Request, exc: AuthError) -> JSONResponse:
        exc.note()
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own handler fails (500) on a body that is not UTF-8, and on an input
        # it echoes that JSON cannot carry (NaN, a lone surrogate).
        detail = jsonable_encoder(exc.errors(), custom_encoder={
            bytes: lambda b: b.decode("utf-8", "replace"),
            str: lambda t: t.encode("utf-8", "replace").decode(),
            float: lambda f: f if math.isfinite(f) else repr(f)})
        where = [".".join(map(str, e.get("loc", ()))) for e in exc.errors()[:3]]
        note_refusal("invalid_request", f"{request.url.path}: {', '.join(where)}")
        return JSONResponse({"detail": detail}, status_code=422)

    async def verify(path: str, request: Request) -> Identity | None:
        # The caller first; then the door checks every value the request carries.
        return None if path == "/healthz" else await identify(path, request)

    async def identify(path: str, request: Request) -> Identity:
        if path == "/webhooks/{source}":
            source = str(request.path_params.get("source", ""))
            if auth.signs(source):
                return auth.verify_webhook(source, request.headers.get("x-delivery-id", ""),
                                           await request.body(), request.headers)
        if path == "/teams/messages" and auth.verifies_teams:
            return await auth.verify_teams(request.headers)
        return await auth.caller(request.headers)

    # Every API route is the door's: verified, then every value checked (docs/front.md).
    app.router.route_class = door.door_route_class(verify, auth.note_use)

    async def caller(request: Request, _: Any = Depends(scheme)) -> Identity:
        # Verified by the route class before the body was read.
        return request.state.identity  # type: ignore[no-any-return]

    async def accept(kind: str, sender_id: str, payload: dict[str, Any], who: Identity, *,
                     run_as: str | None = None) -> Accepted:
        spec = kinds.get(kind) or EntryKind(kind)
        require_storable("body", sender_id=sender_id, payload=payload, run_as=run_as)
        try:
            entry = await store.entries.accept_entry(
                kind, sender_id, payload, owner=who.subject,
                run_as=who.resolve_run_as(run_as), channel=kind, may_wait=spec.may_wait,
                durable=spec.durable(resume_entries),
            )
        except InvalidPayload as exc:
            note_refusal("invalid_request", str(exc))
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        return Accepted(entry_id=entry.entry_id, run_id=entry.run_id, state=entry.state,
                        created=entry.created)

    def answer(accepted: Accepted) -> JSONResponse:
        return JSONResponse(accepted.model_dump(mode="json"),
                            status_code=202 if accepted.created else 200)

    async def seen(kind: str, sender_id: str, who: Identity) -> Accepted:
        # Sender ids are the owner's own: another owner's same id is not even looked at.
        entry = await store.entries.get_entry(kind, sender_id, owner=who.subject)
        if entry is None:
            raise HTTPException(status_code=404, detail=f"no {kind} entry {sender_id!r}")
        return Accepted(entry_id=entry.entry_id, run_id=entry.run_id, state=entry.state,
                        created=False)

    @app.get("/healthz", responses={503: {"description": "draining: send elsewhere"}})
    async def healthz(request: Request) -> Any:
        """Readiness for an edge's health check; the one route without a credential."""
        if request.app.state.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        return {"status": "ok"}

    @app.post("/webhooks/{source}", response_model=Accepted, status_code=202,
              responses={409: {"description": "a signed delivery received already"}})
    async def webhook(
        request: Request,
        source: str = Path(pattern=SOURCE),
        x_delivery_id: str = Header(min_length=1, max_length=200),
        who: Identity = Depends(caller),
    ) -> JSONResponse:
        """A webhook delivery, keyed by its X-Delivery-Id; signed sources by their HMAC."""
        signed = auth.signs(source)
        raw = await request.body()
        try:
            body = door.loads(raw or b"null")
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise HTTPException(status_code=422, detail="body must be a JSON object")
        accepted = await accept("webhook", f"{source}:{x_delivery_id}",
                                {"source": source, "body": body}, who)
        if signed and not accepted.created:
            note_refusal("webhook_replayed", f"{source}:{x_delivery_id}")
            raise HTTPException(status_code=409, detail="this delivery was received already")
        return answer(accepted)

    @app.post("/ticket-events", response_model=Accepted, status_code=202)
    async def ticket_event(event: TicketEvent, who: Identity = Depends(caller),
                           x_run_as: str | None = Header(default=None, max_length=512),
                           ) -> JSONResponse:
        """A ticket event, keyed by its event id; answers the run id."""
        return answer(await accept("ticket_event", event.event_id, _dumped(event), who,
                                   run_as=x_run_as))

    @app.get("/ticket-events/{event_id}", response_model=Accepted)
    async def ticket_event_run(event_id: str = Path(min_length=1, max_length=200),
                               who: Identity = Depends(caller)) -> Accepted:
        """The run of a ticket event, by its event id."""
        return await seen("ticket_event", event_id, who)

    @app.post("/teams/messages")
    async def teams_message(activity: TeamsActivity,
                            who: Identity = Depends(caller)) -> JSONResponse:
        """A Teams activity: written to the durable inbox, then answered 200."""
        payload = _dumped(activity)
        auth.check_teams_activity(who, payload)
        await accept("teams", activity.id, payload, who, run_as=activity.from_.id)
        return JSONResponse({}, status_code=200)

    @app.post("/copilot/turns", response_model=Accepted, status_code=202)
    async def copilot_turn(turn: CopilotTurn, who: Identity = Depends(caller)) -> JSONResponse:
        """A co-pilot turn, keyed by its turn id, run as its user (if the caller may)."""
        return answer(await accept("copilot", turn.turn_id, _dumped(turn), who,
                                   run_as=turn.user))

    @app.post("/playground/runs", response_model=Accepted, status_code=202)
    async def playground_run(run: PlaygroundRun,
                             who: Identity = Depends(caller)) -> JSONResponse:
        """A managed run that may wait, keyed by the client's idempotency key."""
        return answer(await accept("playground", run.run_key,
                                   {"user": run.user, "input": run.input}, who,
                                   run_as=run.user))

    app.include_router(runs_router(store, kinds, caller, waiter, resume_entries,
                                   route_class=app.router.route_class,
                                   max_waits=settings.max_waits, feed=feed,
                                   sealer=_sealer_of(worker)))
    app.include_router(metrics_router(worker, waiter.conninfo, caller,
                                      route_class=app.router.route_class))
    inspector = _inspector_of(worker)
    app.include_router(inspector_router(inspector, caller,
                                        route_class=app.router.route_class))
    # Its own login and cookie (admins only): outside the API's credential check.
    app.mount("/console", _CountForbidden(console_app(auth, store, waiter.conninfo, inspector,
                                                      _sealer_of(worker))))
    if settings.docs:
        _serve_docs(app)
    door.require_door(app.routes)

    @app.post("/a2a")
    @door.refuses_as(lambda exc: _rpc_error(None, -32600, f"invalid request: {exc.message} "
                                            f"({'.'.join(map(str, exc.loc))})"))
    async def a2a(request: Request, who: Identity = Depends(caller)) -> JSONResponse:
        """A2A over JSON-RPC 2.0: message/send, tasks/send, tasks/get."""
        return await _a2a(request, who, accept, store)

    return app


def _serve_docs(app: FastAPI) -> None:
    """``/openapi.json``, ``/docs`` and ``/redoc`` for a verified caller (401 otherwise):
    the description names every route and field an attacker would probe."""

    # Routes of the app's own route class: verified and through the door before they answer.
    @app.get("/openapi.json", include_in_schema=False)
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    # Rendered here from the document: no script, nothing from a CDN (a script loaded from
    # elsewhere would run with the front's origin, next to the console's cookie).
    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        return schema_page(request, app.openapi(), "openapi.json")

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return schema_page(request, app.openapi(), "openapi.json")


#: Every answer of the front that sets no policy of its own (the API's JSON): load nothing.
API_CSP = b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'"


class _SecurityHeaders:
    """A Content-Security-Policy (and ``nosniff``) on every answer: the pages set their
    own (:data:`~ticketiq_pg.front.console.PAGE_CSP`), everything else loads nothing."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_policy(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", API_CSP))
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_policy)


class _CountForbidden:
    """Counts the console's 403s (a cross-site form, a caller without ``admin``) as
    refusals; its failed sign-ins are counted by the authenticator."""

    def __init__(self, app: Any) -> None:
        self.app = app

    @property
    def routes(self) -> list[Any]:
        """The console's routes (the door's route table lists them)."""
        return list(getattr(self.app, "routes", []))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 403:
                note_refusal("console_forbidden", str(scope.get("path", "")))
            await send(message)

        await self.app(scope, receive, counted)


def _sealer_of(worker: Worker | None) -> Callable[[], Any]:
    """The worker's seal keys once it is started (None without a worker): a fork is
    sealed with them."""

    def sealer() -> Any:
        setup = getattr(getattr(worker, "runner", None), "setup", None)
        return getattr(setup, "sealer", None)
    return sealer


def _inspector_of(worker: Worker | None) -> Callable[[], Inspector | None]:
    """The worker's inspector once it is started (None without a worker)."""
    made: list[Inspector] = []

    def inspector() -> Inspector | None:
        if not made and worker is not None:
            found = Inspector.of(worker)
            if found is not None:
                made.append(found)
        return made[0] if made else None
    return inspector


async def _a2a(request: Request, who: Identity, accept: Any, store: Any) -> JSONResponse:
    try:
        rpc = door.loads(await request.body() or b"null")
    except door.Refused as exc:
        return _rpc_error(None, -32600, f"invalid request: {exc.message}")
    except ValueError:
        return _rpc_error(None, -32700, "parse error: the body is not JSON")
    if not isinstance(rpc, dict) or rpc.get("jsonrpc") != "2.0" or not isinstance(
        rpc.get("method"), str
    ):
        return _rpc_error(None, -32600, "invalid request: expected a JSON-RPC 2.0 object")
    rpc_id = rpc.get("id")
    params = rpc.get("params")
    if not isinstance(params, dict):
        return _rpc_error(rpc_id, -32602, "invalid params: params must be an object")
    method = rpc["method"]
    if method in ("message/send", "tasks/send"):
        message = params.get("message")
        if not isinstance(message, dict):
            return _rpc_error(rpc_id, -32602, "invalid params: message is required")
        task_id = params.get("id") if method == "tasks/send" else message.get("messageId")
        if not isinstance(task_id, str) or not task_id or len(task_id) > 200:
            return _rpc_error(rpc_id, -32602, "invalid params: a task id (tasks/send "
                              "params.id, message/send message.messageId) is required")
        parts = message.get("parts")
        if not isinstance(parts, list) or not parts:
            return _rpc_error(rpc_id, -32602, "invalid params: message.parts is required")
        metadata = params.get("metadata") if isinstance(params.get("metadata"), dict) else {}
        # metadata.user asks for a run-as; the caller's identity decides whether it may.
        requested = metadata.get("user")
        try:
            await accept("a2a", task_id, {"message": message, "metadata": metadata}, who,
                         run_as=str(requested) if requested else None)
        except HTTPException as exc:
            return _rpc_error(rpc_id, -32602, f"invalid params: {exc.detail}")
    elif method == "tasks/get":
        task_id = params.get("id")
        if not isinstance(task_id, str) or not task_id:
            return _rpc_error(rpc_id, -32602, "invalid params: params.id is required")
    else:
        return _rpc_error(rpc_id, -32601, f"method not found: {method}", status=404)
    entry = await store.entries.get_entry("a2a", task_id, owner=who.subject)
    if entry is None:
        return _rpc_error(rpc_id, -32001, f"task not found: {task_id}", status=404)
    task: dict[str, Any] = {
        "kind": "task",
        "id": task_id,
        "contextId": str(entry.run_id),
        "status": {"state": A2A_STATES.get(entry.state, "unknown")},
    }
    if entry.answer is not None:
        text = entry.answer.get("text") if isinstance(entry.answer, dict) else entry.answer
        task["artifacts"] = [{"parts": [{"kind": "text", "text": str(text)}]}]
    if entry.state == "failed" and entry.failure_reason:
        task["status"]["message"] = entry.failure_reason
    return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": task})
