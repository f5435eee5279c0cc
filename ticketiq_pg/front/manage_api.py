"""Operating runs over HTTP (issue 42): the list of runs (``GET /runs`` without ``key``),
a Stop by filter (``POST /runs/stop``), a restart (``POST /runs/{id}/restart``) and a fork
from a step (``POST /runs/{id}/fork``).

Owner-scoped as every runs route: a caller lists, stops, restarts and forks its own runs
only (``owner=`` of another is for admins: 403); an admin acts on any.  A page is at most
500 runs, newest first, and its ``next_cursor`` (opaque: the keyset of its last row) asks
for the next; a Stop by filter asks at most 1,000 runs and needs at least one filter.  A
bad filter is a 422 whose ``detail`` names the field and a code (``bad_status``,
``bad_range``, ``bad_cursor``, ``no_filter``, ``bad_filter``); a run that cannot be
restarted, or a fork whose source does not verify, a 409.  Each act is one SQL
function's statement (docs/sql-api.md); the fork is sealed anew here first
(:mod:`ticketiq_pg.runtime.fork`).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Header, HTTPException
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.manage import MAX_STOPS, RunFilter
from ticketiq_pg.errors import (
    AnswerSealed,
    InvalidPayload,
    KeyConflict,
    RunNotRunning,
    SealMismatch,
    StepConflict,
    UnknownRun,
)
from ticketiq_pg.front.auth import Identity
from ticketiq_pg.front.refusals import note_refusal
from ticketiq_pg.runtime import fork as forks
from ticketiq_pg.seal import Sealer

STATUSES = ("running", "claimed", "suspended", "completed", "failed", "stopped")
UNFINISHED = ("running", "claimed", "suspended")


class RunSummary(BaseModel):
    run_id: uuid.UUID
    owner: str
    kind: str = Field(description="the entry point (the entry's kind) that started it")
    status: str
    workflow: str | None = Field(default=None, description="the workflow its first step names")
    workflow_version: str | None = None
    loss_count: int
    last_step: int
    failure_reason: str | None = None
    parent_run_id: uuid.UUID | None = None
    forked_from: uuid.UUID | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None


class RunPage(BaseModel):
    runs: list[RunSummary]
    next_cursor: str | None = Field(description="pass as cursor= for the next page (given "
                                    "for every full page); null: no more")


class StopFilter(BaseModel):
    status: list[str] | None = Field(default=None, max_length=3,
                                     description="running, claimed, suspended")
    kind: str | None = Field(default=None, min_length=1, max_length=512)
    owner: str | None = Field(default=None, min_length=1, max_length=512,
                              description="admins only (default: the caller's runs)")
    workflow: str | None = Field(default=None, min_length=1, max_length=200)
    created_from: datetime | None = None
    created_to: datetime | None = None
    reason: str | None = Field(default=None, max_length=2000)
    limit: int = Field(default=100, ge=1, le=MAX_STOPS)


class Stopped(BaseModel):
    run_id: uuid.UUID
    status: str


class StopsAnswer(BaseModel):
    count: int
    runs: list[Stopped]


class RestartRequest(BaseModel):
    reason: str | None = Field(default=None, max_length=2000, description="why (audited)")


class Restarted(BaseModel):
    run_id: uuid.UUID
    status: str
    step: int = Field(description="the last written step it goes on from")
    previous_status: str
    previous_reason: str | None = None
    losses_reset: int


class ForkRequest(BaseModel):
    step: int = Field(ge=1, le=2**31 - 1, description="a step the source wrote")
    input: dict[str, Any] | None = Field(default=None, description="the fork's input "
                                         "(default: the source's)")
    reason: str | None = Field(default=None, max_length=2000, description="why (audited)")


class Forked(BaseModel):
    run_id: uuid.UUID
    created: bool
    status: str
    step: int
    source_run_id: uuid.UUID


def bad(field: str, message: str, code: str) -> HTTPException:
    """A 422 naming the field and a code, in FastAPI's own shape."""
    note_refusal("invalid_request", f"{field}: {code}")
    return HTTPException(status_code=422, detail=[{"loc": ["query", field], "msg": message,
                                                   "type": code}])


def _utc(when: datetime | None) -> datetime | None:
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def encode_cursor(created_at: datetime, run_id: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{run_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        when, _, run_id = raw.partition("|")
        at = datetime.fromisoformat(when)
        if at.tzinfo is None:
            raise ValueError("no time zone")
        return at, uuid.UUID(run_id)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise bad("cursor", "not a cursor this API gave", "bad_cursor") from exc


def owner_for(who: Identity, owner: str | None) -> str | None:
    """Whose runs: the caller's; another's or everyone's (None) for an admin only."""
    if owner is not None and owner != who.subject and not who.admin:
        note_refusal("not_yours", f"{who.subject} asked for another owner's runs")
        raise HTTPException(status_code=403, detail="owner= is for admins")
    if who.admin:
        return owner
    return who.subject


def checked_statuses(statuses: list[str] | None, allowed: tuple[str, ...]) -> list[str] | None:
    for status in statuses or ():
        if status not in allowed:
            raise bad("status", f"{status!r} is not one of {', '.join(allowed)}", "bad_status")
    return statuses or None


def checked_range(name: str, start: datetime | None, end: datetime | None) -> None:
    if start is not None and end is not None and _utc(start) > _utc(end):  # type: ignore[operator]
        raise bad(f"{name}_from", f"{name}_from is after {name}_to", "bad_range")


async def list_page(db: TicketIQ, who: Identity, *, status: list[str] | None,
                    kind: str | None, owner: str | None, workflow: str | None,
                    created_from: datetime | None, created_to: datetime | None,
                    ended_from: datetime | None, ended_to: datetime | None,
                    failure: str | None, cursor: str | None, limit: int) -> RunPage:
    """One page of the caller's runs (``GET /runs`` without ``key``)."""
    checked_range("created", created_from, created_to)
    checked_range("ended", ended_from, ended_to)
    where = RunFilter(owner=owner_for(who, owner),
                      statuses=checked_statuses(status, STATUSES), kind=kind,
                      workflow=workflow, created_from=_utc(created_from),
                      created_to=_utc(created_to), ended_from=_utc(ended_from),
                      ended_to=_utc(ended_to), failure=failure)
    after = decode_cursor(cursor) if cursor else None
    try:
        rows = await db.manage.list_runs(where, after=after, limit=limit)
    except InvalidPayload as exc:
        raise bad("filter", str(exc), "bad_filter") from exc
    runs = [RunSummary(**{k: v for k, v in row.items() if k in RunSummary.model_fields})
            for row in rows]
    # A full page may have more after it (the next is empty when it had not).
    last = rows[-1] if len(rows) == limit else None
    return RunPage(runs=runs, next_cursor=encode_cursor(last["created_at"], last["run_id"])
                   if last else None)


def manage_router(db: TicketIQ, caller: Any, visible: Callable[..., Any],
                  sealer: Callable[[], Sealer | None],
                  route_class: type = APIRoute) -> APIRouter:
    """``POST /runs/stop``, ``/runs/{id}/restart`` and ``/runs/{id}/fork``."""
    router = APIRouter(tags=["runs"], route_class=route_class)

    @router.post("/runs/stop", response_model=StopsAnswer,
                 responses={403: {"description": "owner= of another, not an admin"}})
    async def stop_many(body: StopFilter, who: Identity = Depends(caller)) -> StopsAnswer:
        """Ask every unfinished run the filter matches to stop (oldest first, at most
        ``limit``); at least one filter is required."""
        given = body.model_dump(exclude={"reason", "limit"}, exclude_none=True)
        if not given:
            raise bad("body", "name at least one filter (status, kind, owner, workflow, "
                      "created_from, created_to)", "no_filter")
        checked_range("created", body.created_from, body.created_to)
        where = RunFilter(owner=owner_for(who, body.owner),
                          statuses=checked_statuses(body.status, UNFINISHED), kind=body.kind,
                          workflow=body.workflow, created_from=_utc(body.created_from),
                          created_to=_utc(body.created_to))
        try:
            rows = await db.manage.stop_runs(who.subject, where, reason=body.reason,
                                             limit=body.limit)
        except InvalidPayload as exc:
            raise bad("filter", str(exc), "bad_filter") from exc
        return StopsAnswer(count=len(rows), runs=[Stopped(run_id=r["run_id"],
                                                          status=r["status"]) for r in rows])

    @router.post("/runs/{run_id}/restart", response_model=Restarted,
                 responses={409: {"description": "not failed or stopped, not written ahead, "
                                  "its answer sealed, or its parent in flight"}})
    async def restart(run_id: uuid.UUID, body: RestartRequest | None = None,
                      who: Identity = Depends(caller)) -> Restarted:
        """Restart a failed or stopped run from its last written step (a person's decision,
        audited): adopted and settled as on any resume, its loss count reset."""
        await visible(run_id, who)
        try:
            row = await db.manage.restart_run(run_id, who.subject,
                                              body.reason if body else None)
        except UnknownRun as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        except (RunNotRunning, AnswerSealed) as exc:
            note_refusal("not_restartable", str(run_id))
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        return Restarted(**{k: v for k, v in row.items() if k in Restarted.model_fields})

    @router.post("/runs/{run_id}/fork", response_model=Forked, status_code=202,
                 responses={200: {"model": Forked, "description": "the key's fork"},
                            409: {"description": "the source does not verify, or the key "
                                  "names another fork"},
                            503: {"description": "this front has no seal keys"}})
    async def fork(run_id: uuid.UUID, body: ForkRequest,
                   idempotency_key: str = Header(min_length=1, max_length=200),
                   who: Identity = Depends(caller)) -> JSONResponse:
        """Fork a run from a step it wrote into a new run of the same owner: its history up
        to the step is the source's, sealed anew; the step's calls and every later one are
        the fork's own, under its own keys.  The same ``Idempotency-Key`` answers the same
        fork."""
        source = await visible(run_id, who)
        keys = sealer()
        if keys is None:
            raise HTTPException(status_code=503, detail="this front has no seal keys (a "
                                "front with a worker forks)")
        try:
            row = await forks.fork_run(
                db, keys, run_id, body.step, who.subject, reason=body.reason,
                input=body.input, input_given=body.input is not None,
                idempotency_key=forks.fork_key(source.owner, idempotency_key))
        except InvalidPayload as exc:
            raise bad("step", str(exc), "no_such_step") from exc
        except UnknownRun as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        except (SealMismatch, StepConflict) as exc:
            note_refusal("fork_refused", str(run_id))
            raise HTTPException(status_code=409, detail=f"not forked: {exc}") from exc
        except KeyConflict as exc:
            note_refusal("key_in_use", who.subject)
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        answer = Forked(**row)
        return JSONResponse(answer.model_dump(mode="json"),
                            status_code=202 if answer.created else 200)

    return router
