"""Small dataclasses for the rows the ``ticketiq`` functions return."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")


def from_row(cls: type[T], row: dict[str, Any]) -> T:
    """Build dataclass ``cls`` from a dict row, ignoring columns it does not declare."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in row.items() if k in names})


@dataclass(frozen=True, slots=True)
class StartedRun:
    run_id: uuid.UUID
    epoch: int | None
    lease_expires_at: datetime | None
    created: bool
    correlation_id: str


@dataclass(frozen=True, slots=True)
class CheckpointWritten:
    run_id: uuid.UUID
    step: int
    written_at: datetime
    lease_expires_at: datetime
    replayed: bool
    stop_requested: bool


@dataclass(frozen=True, slots=True)
class CallMark:
    run_id: uuid.UUID
    step: int
    call_id: str
    state: str
    marked_classification: str
    step_key: str | None
    marked_at: datetime
    already_marked: bool
    stop_requested: bool


@dataclass(frozen=True, slots=True)
class CallOutcome:
    run_id: uuid.UUID
    step: int
    call_id: str
    state: str
    settlement: str
    finished_at: datetime
    replayed: bool


@dataclass(frozen=True, slots=True)
class Attempt:
    run_id: uuid.UUID
    step: int
    target: str
    attempts: int


@dataclass(frozen=True, slots=True)
class AuditOnce:
    audit_id: int
    inserted: bool


@dataclass(frozen=True, slots=True)
class LeaseRenewal:
    run_id: uuid.UUID
    epoch: int
    held: bool
    lease_expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class LeaderLease:
    is_leader: bool
    holder: str | None
    epoch: int | None
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class SweptRun:
    run_id: uuid.UUID
    epoch: int
    loss_count: int
    status: str
    lapsed_holder: str | None
    lapsed_at: datetime | None


@dataclass(frozen=True, slots=True)
class AdoptedRun:
    run_id: uuid.UUID
    epoch: int
    lease_expires_at: datetime
    loss_count: int
    last_step: int
    owner: str
    run_as: str
    channel: str
    entry_point: str
    may_wait: bool
    correlation_id: str
    input: Any
    meta: dict[str, Any]
    stop_requested: bool
    checkpoint_body: dict[str, Any] | None
    checkpoint_seal: str | None
    checkpoint_seal_key_id: str | None
    calls: list[dict[str, Any]]
    answer_body: Any | None
    answer_seal: str | None
    answer_seal_key_id: str | None
    answer_handed_on: bool | None
    #: The run's checkpoints from its chain's base to its last step (schema 12).
    checkpoint_chain: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class Released:
    run_id: uuid.UUID
    epoch: int


@dataclass(frozen=True, slots=True)
class SealedAnswer:
    run_id: uuid.UUID
    step: int
    sealed_at: datetime
    retain_until: datetime
    replayed: bool


@dataclass(frozen=True, slots=True)
class HandedOn:
    run_id: uuid.UUID
    step: int
    body: Any
    seal: str
    seal_key_id: str
    handed_on_at: datetime


@dataclass(frozen=True, slots=True)
class AnswerView:
    """``ticketiq.get_answer``: a run's sealed answer with its seal (verify it before use)."""

    run_id: uuid.UUID
    step: int
    epoch: int
    body: Any
    seal: str
    seal_key_id: str
    sealed_at: datetime
    retain_until: datetime
    handed_on_at: datetime | None
    handed_on_epoch: int | None


@dataclass(frozen=True, slots=True)
class RunEnded:
    run_id: uuid.UUID
    status: str
    finished_at: datetime


@dataclass(frozen=True, slots=True)
class StopRequest:
    run_id: uuid.UUID
    status: str
    stop_requested_at: datetime


@dataclass(frozen=True, slots=True)
class ResumeAudited:
    run_id: uuid.UUID
    step: int
    loss_count: int
    audit_id: int


@dataclass(frozen=True, slots=True)
class ProcessRegistration:
    process_id: str
    backend_pid: int
    started_at: datetime


@dataclass(frozen=True, slots=True)
class UnrunnableRun:
    """A waiting workflow run no live process can run (``ticketiq.unrunnable_runs``)."""

    run_id: uuid.UUID
    status: str
    workflow: str
    workflow_version: str
    waiting_since: datetime
    wait_key: str | None


@dataclass(frozen=True, slots=True)
class UnrunnableFailed:
    """A run ``ticketiq.fail_unrunnable_runs`` failed once the operator's limit passed."""

    run_id: uuid.UUID
    workflow: str
    workflow_version: str
    reason: str


@dataclass(frozen=True, slots=True)
class LivenessToken:
    """This process's liveness token, held by the session that took it."""

    process_id: str
    liveness_key: int
    backend_pid: int
    was_reaped: bool  # a watcher found the previous session ended and took its runs


@dataclass(frozen=True, slots=True)
class WatchedProcess:
    """One row of ``watch_processes``: a peer alive now, or seen alive and now dead."""

    process_id: str
    alive: bool
    session: str  # the watcher's own session token: pass it back with the next call
    runs_claimed: int


@dataclass(frozen=True, slots=True)
class Approval:
    approval_id: uuid.UUID
    state: str  # waiting | approved | rejected
    run_id: uuid.UUID | None = None
    coalesced: bool = False
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ChildRun:
    run_id: uuid.UUID
    parent_run_id: uuid.UUID | None
    status: str
    epoch: int
    lease_lapsed: bool
    failure_reason: str | None
    answer: Any | None
    answer_step: int | None


@dataclass(frozen=True, slots=True)
class Suspended:
    run_id: uuid.UUID
    status: str  # suspended, or claimed when the event had already happened
    epoch: int


@dataclass(frozen=True, slots=True)
class AcceptedEntry:
    entry_id: int
    created: bool
    state: str
    run_id: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class ClaimedEntry:
    entry_id: int
    kind: str
    sender_id: str
    payload: dict[str, Any]
    run_id: uuid.UUID
    epoch: int
    correlation_id: str
    owner: str
    run_as: str
    channel: str
    may_wait: bool
    durable: bool


@dataclass(frozen=True, slots=True)
class Entry:
    entry_id: int
    kind: str
    sender_id: str
    state: str
    run_id: uuid.UUID | None
    run_status: str | None
    failure_reason: str | None
    answer: Any | None
    outcome: Any | None
    received_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class EntryOfRun:
    entry_id: int
    kind: str
    sender_id: str
    state: str
    run_id: uuid.UUID
    owner: str
    run_as: str
    run_status: str | None
    failure_reason: str | None
    answer: Any | None
    received_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A front API key as listed (``key_hash`` only when read to verify one)."""

    key_id: str
    identity: str
    run_as: list[str]
    scopes: list[str]
    created_at: datetime | None = None
    revoked_at: datetime | None = None
    key_hash: bytes | None = None
    last_used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class CronSchedule:
    name: str
    next_fire_at: datetime
    enabled: bool


@dataclass(frozen=True, slots=True)
class CronFire:
    name: str
    fire_at: datetime
    entry_id: int


@dataclass(frozen=True, slots=True)
class DeliveryMark:
    delivery_started_at: datetime
    already_started: bool


@dataclass(frozen=True, slots=True)
class RunView:
    run_id: uuid.UUID
    status: str
    entry_point: str
    owner: str
    channel: str
    epoch: int
    lease_holder: str | None
    lease_expires_at: datetime | None
    loss_count: int
    last_step: int
    parent_run_id: uuid.UUID | None
    wait_key: str | None
    failure_reason: str | None
    answer: Any | None
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    at: datetime
    kind: str
    step: int | None
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WaitOutcome:
    """``ticketiq.wait_run``: signal, due, timeout, or suspended (at ``epoch``)."""

    outcome: str
    payload: Any
    due_at: datetime | None
    epoch: int


@dataclass(frozen=True, slots=True)
class FirstEnd:
    """``ticketiq.await_first``: first (the child and its place), suspended (at
    ``epoch``) or waiting."""

    outcome: str
    child_run_id: uuid.UUID | None
    place: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class SignalSent:
    signal_id: int
    created: bool
    woken: int


@dataclass(frozen=True, slots=True)
class TimerFired:
    run_id: uuid.UUID
    timer_key: str
    wait_key: str
    woken: int
