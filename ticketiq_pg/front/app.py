"""The app process's HTTP front: entry points that write to the durable inbox first.

Every request that starts work is written to ``ticketiq.entries`` (one
statement, ``ticketiq.accept_entry``) before it is answered, keyed by the
sender's id: a request the edge retries on the other process — the same
webhook delivery id, Teams activity id, A2A task id or client idempotency
key — finds the entry already there and starts no second run.  An entry
pump in every process claims the entry and runs it.

==========================  ==============================================
``POST /webhooks/{source}``  a webhook delivery; header ``X-Delivery-Id``
``POST /ticket-events``      a ticket event ``{event_id, ticket_id, type}``
``POST /teams/messages``     a Bot Framework activity (Teams turn)
``POST /copilot/turns``      a co-pilot turn ``{turn_id, conversation_id, user, text}``
``POST /playground/runs``    a managed run that may wait ``{run_key, user, input}``
``POST /a2a``                A2A JSON-RPC: ``message/send``, ``tasks/send``, ``tasks/get``
``GET /runs/{run_id}``       a run's status, answer and transcript
``GET /healthz``             liveness
==========================  ==============================================

Bad requests get a 4xx with a clear message and write nothing.  The
OpenAPI description is at ``/openapi.json``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import InvalidPayload, UnknownRun
from ticketiq_pg.runtime.entries import durable_for

A2A_STATES = {
    "pending": "submitted",
    "running": "working",
    "answered": "completed",
    "failed": "failed",
    "stopped": "canceled",
}


class Accepted(BaseModel):
    entry_id: int
    run_id: uuid.UUID | None
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
    user: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=28000)


class PlaygroundRun(BaseModel):
    run_key: str = Field(min_length=1, max_length=200)
    user: str = Field(min_length=1, max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)


def _rpc_error(rpc_id: Any, code: int, message: str, status: int = 400) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}},
        status_code=status,
    )


def create_app(db: TicketIQ, *, crash_resume_entries: bool = True) -> FastAPI:
    """The ASGI app of one app process, over its driver."""
    app = FastAPI(
        title="ticketiq-pg app process",
        version="1",
        description="Entry points that write to the durable inbox before they answer.",
    )

    async def accept(kind: str, sender_id: str, payload: dict[str, Any], *, owner: str,
                     channel: str, may_wait: bool = False) -> Accepted:
        try:
            entry = await db.accept_entry(
                kind, sender_id, payload, owner=owner, run_as=owner, channel=channel,
                may_wait=may_wait, durable=durable_for(kind, crash_resume_entries),
            )
        except InvalidPayload as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from exc
        return Accepted(entry_id=entry.entry_id, run_id=entry.run_id, state=entry.state,
                        created=entry.created)

    def answer(accepted: Accepted) -> JSONResponse:
        return JSONResponse(accepted.model_dump(mode="json"),
                            status_code=202 if accepted.created else 200)

    async def json_object(request: Request) -> dict[str, Any]:
        try:
            body = json.loads(await request.body() or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            raise HTTPException(status_code=400, detail=f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise HTTPException(status_code=400, detail="body must be a JSON object")
        return body

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/webhooks/{source}", response_model=Accepted, status_code=202)
    async def webhook(
        source: str,
        request: Request,
        x_delivery_id: str | None = Header(default=None, max_length=200),
    ) -> JSONResponse:
        """A webhook delivery, keyed by its X-Delivery-Id."""
        if not x_delivery_id:
            raise HTTPException(status_code=400, detail="header X-Delivery-Id is required")
        if not source or len(source) > 100:
            raise HTTPException(status_code=400, detail="bad webhook source")
        body = await json_object(request)
        return answer(await accept(
            "webhook", f"{source}:{x_delivery_id}", {"source": source, "body": body},
            owner=f"webhook:{source}", channel="webhook",
        ))

    @app.post("/ticket-events", response_model=Accepted, status_code=202)
    async def ticket_event(event: TicketEvent) -> JSONResponse:
        """A ticket event, keyed by its event id."""
        return answer(await accept(
            "ticket_event", event.event_id, event.model_dump(mode="json"),
            owner="ticket-events", channel="ticket_event",
        ))

    @app.post("/teams/messages")
    async def teams_message(activity: TeamsActivity) -> JSONResponse:
        """A Teams activity: written to the durable inbox, then answered 200."""
        payload = activity.model_dump(mode="json", by_alias=True)
        await accept("teams", activity.id, payload, owner=activity.from_.id, channel="teams")
        return JSONResponse({}, status_code=200)

    @app.post("/copilot/turns", response_model=Accepted, status_code=202)
    async def copilot_turn(turn: CopilotTurn) -> JSONResponse:
        """A co-pilot turn, keyed by its turn id."""
        return answer(await accept(
            "copilot", turn.turn_id, turn.model_dump(mode="json"), owner=turn.user,
            channel="copilot",
        ))

    @app.post("/playground/runs", response_model=Accepted, status_code=202)
    async def playground_run(run: PlaygroundRun) -> JSONResponse:
        """A managed run that may wait, keyed by the client's idempotency key."""
        return answer(await accept(
            "playground", run.run_key, {"user": run.user, "input": run.input},
            owner=run.user, channel="playground", may_wait=True,
        ))

    @app.get("/runs/{run_id}")
    async def get_run(run_id: uuid.UUID) -> dict[str, Any]:
        """A run's status, answer and transcript."""
        try:
            run = await db.get_run(run_id)
            transcript = await db.run_transcript(run_id)
        except UnknownRun as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        return {
            "run_id": str(run.run_id),
            "status": run.status,
            "entry_point": run.entry_point,
            "loss_count": run.loss_count,
            "last_step": run.last_step,
            "answer": run.answer,
            "failure_reason": run.failure_reason,
            "transcript": [
                {"at": line.at.isoformat(), "kind": line.kind, "step": line.step,
                 "body": line.body}
                for line in transcript
            ],
        }

    @app.post("/a2a")
    async def a2a(request: Request) -> JSONResponse:
        """A2A over JSON-RPC 2.0: message/send, tasks/send, tasks/get."""
        try:
            rpc = json.loads(await request.body() or b"null")
        except (ValueError, UnicodeDecodeError):
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
            user = str(metadata.get("user") or request.headers.get("x-ticketiq-user") or "a2a")
            try:
                await accept("a2a", task_id, {"message": message, "metadata": metadata},
                             owner=user, channel="a2a", may_wait=True)
            except HTTPException as exc:
                return _rpc_error(rpc_id, -32602, f"invalid params: {exc.detail}")
        elif method == "tasks/get":
            task_id = params.get("id")
            if not isinstance(task_id, str) or not task_id:
                return _rpc_error(rpc_id, -32602, "invalid params: params.id is required")
        else:
            return _rpc_error(rpc_id, -32601, f"method not found: {method}", status=404)
        entry = await db.get_entry("a2a", task_id)
        if entry is None:
            return _rpc_error(rpc_id, -32001, f"task not found: {task_id}", status=404)
        task: dict[str, Any] = {
            "kind": "task",
            "id": task_id,
            "contextId": str(entry.run_id) if entry.run_id else None,
            "status": {"state": A2A_STATES.get(entry.state, "unknown")},
        }
        if entry.answer is not None:
            text = entry.answer.get("text") if isinstance(entry.answer, dict) else entry.answer
            task["artifacts"] = [{"parts": [{"kind": "text", "text": str(text)}]}]
        if entry.state == "failed" and entry.failure_reason:
            task["status"]["message"] = entry.failure_reason
        return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": task})

    return app
