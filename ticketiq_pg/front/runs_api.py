"""The generic runs API: ``POST /runs``, ``GET /runs/{id}`` (long poll), ``GET /runs?key=``,
``POST /runs/{id}/stop``, ``POST /runs/{id}/signals/{name}`` (a workflow's signal).

``POST /runs`` writes an entry of kind ``run`` (or an app kind registered with
:meth:`ticketiq_pg.App.entry_kind`) keyed by the ``Idempotency-Key`` header, which is
unique in the database: the same key again, on either process, answers the same run
(200, ``created: false``), and two processes racing on it start one.  The run id is
answered at once (202); an entry pump starts the run under that id.  The body's ``input``
is the run's input as it is (``StepRequest.input``), not wrapped.

Keys are the caller's own: ``GET /runs?key=`` finds only the caller's run of a key (an
admin names the owner with ``owner=``), so no answer names another owner's run; without
``kind`` it looks at every kind the app has (``run`` first), and a key that two kinds hold
is a 409 that names them.  ``GET /runs`` without ``key`` lists the caller's runs, and the
acts on runs as a whole (a Stop by filter, restart, fork) are :mod:`.manage_api`'s.  One
identity holds at most ``TICKETIQ_HTTP_MAX_WAITS`` long polls at once on one front
(429 past it).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.events import EventFeed
from ticketiq_pg.db.manage import MAX_PAGE
from ticketiq_pg.errors import (
    InvalidPayload,
    KeyConflict,
    LimitReached,
    RunNotRunning,
    UnknownRun,
    UnknownSignal,
)
from ticketiq_pg.front import manage_api
from ticketiq_pg.front.auth import Identity
from ticketiq_pg.front.refusals import note_refusal
from ticketiq_pg.front.waiter import RunWaiter
from ticketiq_pg.runtime.entries import EntryKind
from ticketiq_pg.seal import Sealer

RUN_KIND = "run"
ENDED = frozenset({"completed", "failed", "stopped"})
MAX_WAIT = 60.0
#: The largest event id (a bigint).
MAX_EVENT_ID = 2**63 - 1


class RunRequest(BaseModel):
    input: dict[str, Any] = Field(default_factory=dict, description="the run's input")
    kind: str = Field(default=RUN_KIND, min_length=1, max_length=64,
                      pattern=r"^[a-z][a-z0-9_.-]{0,63}$",
                      description="an entry kind the app registered (default: run)")
    priority: int = Field(default=0, ge=-1000, le=1000,
                          description="higher starts first (above 0: admins only); "
                          "between equals, each owner's oldest before any owner's second")


class RunStarted(BaseModel):
    run_id: uuid.UUID
    entry_id: int
    state: str
    created: bool


class TranscriptItem(BaseModel):
    at: str
    kind: str
    step: int | None
    body: dict[str, Any]


class RunStatus(BaseModel):
    run_id: uuid.UUID
    status: str = Field(description="pending (not started yet), running, suspended, "
                        "claimed, completed, failed or stopped")
    ended: bool
    kind: str
    owner: str
    entry_state: str | None = None
    loss_count: int = 0
    last_step: int = 0
    answer: Any | None = None
    failure_reason: str | None = None
    transcript: list[TranscriptItem] = Field(default_factory=list)


class StopAnswer(BaseModel):
    run_id: uuid.UUID
    status: str


class SignalRequest(BaseModel):
    payload: Any = Field(default=None, description="the signal's payload: any JSON value")


class SignalAnswer(BaseModel):
    run_id: uuid.UUID
    name: str
    signal_id: int
    created: bool = Field(description="false: this Idempotency-Key's signal was sent before")
    woken: int = Field(description="1 when the run was waiting for it and was woken")


def runs_router(db: TicketIQ, kinds: dict[str, EntryKind], caller: Any,
                waiter: RunWaiter, crash_resume_entries: bool = True,
                route_class: type = APIRoute, max_waits: int = 8,
                feed: EventFeed | None = None, keepalive: float = 15.0,
                sealer: Callable[[], Sealer | None] = lambda: None) -> APIRouter:
    """The routes, over the driver, the app's kinds and the caller dependency (and the
    seal keys a fork is sealed with, when this front has them)."""
    router = APIRouter(tags=["runs"], route_class=route_class)
    waits: dict[str, int] = {}  # long polls and event streams held, by identity
    feed = feed or EventFeed(db, waiter.conninfo)

    def hold(who: Identity) -> None:
        held = waits.get(who.subject, 0)
        if held >= max_waits:
            note_refusal("too_many_waits", who.subject)
            raise HTTPException(status_code=429, headers={"Retry-After": "1"}, detail=(
                f"{max_waits} long polls or event streams of this caller are open already "
                "(TICKETIQ_HTTP_MAX_WAITS)"))
        waits[who.subject] = held + 1

    def release(who: Identity) -> None:
        waits[who.subject] -= 1
        if not waits[who.subject]:
            del waits[who.subject]

    async def status_of(run_id: uuid.UUID, transcript: bool = False) -> RunStatus | None:
        entry = await db.entries.get_entry_by_run(run_id)
        try:
            run = await db.get_run(run_id)
        except UnknownRun:
            run = None
        if run is None and entry is None:
            return None
        status = run.status if run is not None else "pending"
        lines = []
        if transcript and run is not None:
            lines = [TranscriptItem(at=line.at.isoformat(), kind=line.kind, step=line.step,
                                    body=line.body)
                     for line in await db.run_transcript(run_id)]
        return RunStatus(
            run_id=run_id, status=status, ended=status in ENDED,
            kind=entry.kind if entry is not None else run.entry_point,  # type: ignore[union-attr]
            owner=entry.owner if entry is not None else run.owner,  # type: ignore[union-attr]
            entry_state=entry.state if entry is not None else None,
            loss_count=run.loss_count if run is not None else 0,
            last_step=run.last_step if run is not None else 0,
            answer=run.answer if run is not None else None,
            failure_reason=run.failure_reason if run is not None else None,
            transcript=lines,
        )

    async def visible(run_id: uuid.UUID, who: Identity) -> RunStatus:
        found = await status_of(run_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no run {run_id}")
        if not who.may_see(found.owner):
            # The caller named this id; the answer says nothing more about it.
            note_refusal("not_yours", f"{who.subject} asked for run {run_id}")
            raise HTTPException(status_code=403, detail=f"run {run_id} is not yours")
        return found

    @router.post("/runs", response_model=RunStarted, status_code=202,
                 responses={200: {"model": RunStarted, "description": "the key's run"},
                            409: {"description": "the key is another caller's"}})
    async def start(
        body: RunRequest,
        who: Identity = Depends(caller),
        idempotency_key: str = Header(min_length=1, max_length=200),
        x_run_as: str | None = Header(default=None, max_length=512),
    ) -> JSONResponse:
        """Start a run; the same ``Idempotency-Key`` again answers the same run."""
        kind = kinds.get(body.kind)
        if kind is None or not kind.via_runs_api:
            raise HTTPException(status_code=422, detail=[{
                "loc": ["body", "kind"], "msg": f"{body.kind!r} is not a kind POST /runs starts",
                "type": "value_error"}])
        run_as = who.resolve_run_as(x_run_as)
        if body.priority > 0 and not who.admin:
            note_refusal("not_yours", f"{who.subject} asked for priority {body.priority}")
            raise HTTPException(status_code=403, detail="a priority above 0 is for admins")
        try:
            entry = await db.entries.accept_entry(
                body.kind, idempotency_key, body.input, owner=who.subject,
                run_as=run_as, channel=body.kind, may_wait=kind.may_wait,
                durable=kind.durable(crash_resume_entries), priority=body.priority,
            )
        except InvalidPayload as exc:
            note_refusal("invalid_request", str(exc))
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        if not entry.created:
            # The key's run, if it is the caller's (another caller's key: 409).
            return await _again(entry.run_id, who)
        return JSONResponse(RunStarted(run_id=entry.run_id, entry_id=entry.entry_id,  # type: ignore[arg-type]
                                       state=entry.state, created=True).model_dump(mode="json"),
                            status_code=202)

    async def _again(run_id: uuid.UUID | None, who: Identity) -> JSONResponse:
        entry = await db.entries.get_entry_by_run(run_id) if run_id else None
        if entry is None or not who.may_see(entry.owner):
            note_refusal("key_in_use", who.subject)
            raise HTTPException(status_code=409, detail="the idempotency key is in use")
        return JSONResponse(RunStarted(run_id=entry.run_id, entry_id=entry.entry_id,
                                       state=entry.state, created=False).model_dump(mode="json"))

    @router.get("/runs", response_model=RunStatus | manage_api.RunPage,
                responses={409: {"description": "the key is held by runs of two kinds: "
                                 "name one with kind="}})
    async def find(key: str | None = Query(default=None, min_length=1, max_length=200,
                                           description="an idempotency key: its run (else "
                                           "a page of runs)"),
                   kind: str | None = Query(default=None, min_length=1, max_length=64,
                                            description="the key's kind, or the listed "
                                            "runs' kind (default: any)"),
                   owner: str | None = Query(default=None, min_length=1, max_length=512,
                                             description="whose key or runs (admins only; "
                                             "default: the caller's; for an admin's list, "
                                             "everyone's)"),
                   status: list[str] | None = Query(default=None, max_length=6),
                   workflow: str | None = Query(default=None, min_length=1, max_length=200),
                   created_from: datetime | None = Query(default=None),
                   created_to: datetime | None = Query(default=None),
                   ended_from: datetime | None = Query(default=None),
                   ended_to: datetime | None = Query(default=None),
                   failure: str | None = Query(default=None, min_length=1, max_length=200,
                                               description="text the failure reason holds"),
                   cursor: str | None = Query(default=None, min_length=1, max_length=200),
                   limit: int = Query(default=50, ge=1, le=MAX_PAGE),
                   who: Identity = Depends(caller)) -> Any:
        """The caller's run of an idempotency key (of any kind, or of ``kind``); without
        ``key``, a page of the caller's runs, newest first, filtered."""
        if key is None:
            return await manage_api.list_page(
                db, who, status=status, kind=kind, owner=owner, workflow=workflow,
                created_from=created_from, created_to=created_to, ended_from=ended_from,
                ended_to=ended_to, failure=failure, cursor=cursor, limit=limit)
        if owner is not None and owner != who.subject and not who.admin:
            note_refusal("not_yours", f"{who.subject} asked for a key of another owner")
            raise HTTPException(status_code=403, detail="owner= is for admins")
        # Keys are per owner: another owner's same key is not looked at, so a 404 is all
        # a caller learns of it.
        looked = [kind] if kind is not None else [RUN_KIND, *sorted(set(kinds) - {RUN_KIND})]
        found = []
        for name in looked:
            entry = await db.entries.get_entry(name, key, owner=owner or who.subject)
            if entry is not None and entry.run_id is not None:
                found.append(entry)
        if not found:
            hint = (f"of kind {kind!r}" if kind is not None
                    else f"of any kind (looked at: {', '.join(looked)})")
            raise HTTPException(status_code=404, detail=f"no run for key {key!r} {hint}")
        if len(found) > 1:
            raise HTTPException(status_code=409, detail=(
                f"key {key!r} names runs of kinds {', '.join(e.kind for e in found)}: name "
                "one with kind="))
        return await visible(found[0].run_id, who)

    @router.get("/runs/{run_id}", response_model=RunStatus,
                responses={429: {"description": "too many long polls of this caller"}})
    async def get(run_id: uuid.UUID,
                  wait: float = Query(default=0, ge=0, le=MAX_WAIT,
                                      description="seconds to wait for the run to end"),
                  who: Identity = Depends(caller)) -> RunStatus:
        """A run's status, answer and transcript; with ``wait``, once it ended or the wait
        passed."""
        await visible(run_id, who)

        async def read() -> RunStatus | None:
            return await status_of(run_id)

        if wait > 0:
            hold(who)
            try:
                await waiter.wait(str(run_id), wait, read, lambda s: s is None or s.ended)
            finally:
                release(who)
        found = await status_of(run_id, transcript=True)
        assert found is not None
        return found

    @router.get("/runs/{run_id}/events", response_class=StreamingResponse,
                responses={200: {"content": {"text/event-stream": {}},
                                 "description": "the run's events as Server-Sent Events"},
                           429: {"description": "too many long polls and streams of this "
                                 "caller"}})
    async def events(run_id: uuid.UUID,
                     after: int | None = Query(default=None, ge=0, le=MAX_EVENT_ID,
                                               description="resume after this event id "
                                               "(as Last-Event-ID)"),
                     last_event_id: str | None = Header(
                         default=None, min_length=1, max_length=19, pattern=r"^[0-9]+$",
                         description="the id of the last event received: the stream goes "
                         "on after it"),
                     who: Identity = Depends(caller)) -> StreamingResponse:
        """The run's events as Server-Sent Events: every durable event after
        ``Last-Event-ID`` (or ``after``; none: from the start), each with its id, then the
        live ones (the model's text as it is generated) as they come, until the run
        answers, fails or is stopped.  A client that reconnects with the last id it got
        misses none and gets none twice, on either process."""
        await visible(run_id, who)
        start = after if after is not None else int(last_event_id or 0)
        if start > MAX_EVENT_ID:
            raise HTTPException(status_code=422, detail="Last-Event-ID is past any event id")
        hold(who)
        # Visible is enough: a run accepted but not started yet has its events to come.
        stream = feed.subscribe(run_id, start, pending=True)

        async def body() -> Any:
            # The next event is awaited across keepalives: a wait_for that timed out
            # would cancel the subscription itself, ending the stream at its first
            # quiet spell.
            pending: asyncio.Future[Any] | None = None
            try:
                yield "retry: 1000\n\n"
                while True:
                    if pending is None:
                        pending = asyncio.ensure_future(anext(stream))
                    done, _ = await asyncio.wait({pending}, timeout=keepalive)
                    if not done:
                        yield ": keepalive\n\n"  # an edge keeps an idle stream open
                        continue
                    got, pending = pending, None
                    try:
                        event = got.result()
                    except StopAsyncIteration:
                        return
                    yield event.sse()
            finally:
                if pending is not None:
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pending
                await stream.aclose()
                release(who)

        return StreamingResponse(body(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store",
                                          "X-Accel-Buffering": "no"})

    @router.post("/runs/{run_id}/stop", response_model=StopAnswer,
                 responses={409: {"description": "the run ended or has not started"}})
    async def stop(run_id: uuid.UUID, who: Identity = Depends(caller)) -> StopAnswer:
        """Ask a run to stop at its next step boundary."""
        await visible(run_id, who)
        try:
            asked = await db.request_stop(run_id, who.subject, "POST /runs/{id}/stop")
        except (UnknownRun, RunNotRunning) as exc:
            note_refusal("run_not_running", str(run_id))
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        return StopAnswer(run_id=asked.run_id, status=asked.status)

    @router.post("/runs/{run_id}/signals/{name}", response_model=SignalAnswer,
                 status_code=202,
                 responses={200: {"model": SignalAnswer, "description": "the key's signal "
                                  "(its first delivery, also once the run ended)"},
                            409: {"description": "the run ended: not delivered; or the key "
                                  "was used with another payload"},
                            422: {"description": "the run's workflow does not wait for a "
                                  "signal of that name (it declares the ones it waits for)"},
                            429: {"description": "the run holds 64 signals (or 1 MiB) "
                                  "not yet consumed"}})
    async def signal(run_id: uuid.UUID, body: SignalRequest,
                     name: str = Path(min_length=1, max_length=200),
                     idempotency_key: str = Header(min_length=1, max_length=200),
                     who: Identity = Depends(caller)) -> JSONResponse:
        """Send the signal ``name`` to a workflow run, once per ``Idempotency-Key``; a run
        waiting for it is woken, one not waiting yet finds it when it waits.  The same key
        again answers the first delivery (also once the run ended); with another payload,
        409."""
        await visible(run_id, who)
        try:
            sent = await db.waits.send_signal(run_id, name, body.payload, idempotency_key,
                                              who.subject)
        except (UnknownRun, RunNotRunning) as exc:
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        except KeyConflict as exc:
            note_refusal("key_in_use", who.subject)
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        except LimitReached as exc:
            note_refusal("too_many_signals", str(run_id))
            raise HTTPException(status_code=429, detail=str(exc)) from exc
        except UnknownSignal as exc:
            # Never stored: a name no step of its workflow waits for would wait for ever.
            note_refusal("unknown_signal", str(run_id))
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        except InvalidPayload as exc:
            note_refusal("invalid_request", str(exc))
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        answer = SignalAnswer(run_id=run_id, name=name, signal_id=sent.signal_id,
                              created=sent.created, woken=sent.woken)
        return JSONResponse(answer.model_dump(mode="json"), status_code=202 if sent.created
                            else 200)

    router.include_router(manage_api.manage_router(db, caller, visible, sealer,
                                                   route_class=route_class))
    return router
