"""Recognisers: what a repeat that raised (or answered) says of the interrupted first attempt.

Each is called by the transport only after an attempt that may have committed, with
the repeat's translated error or its rows, and returns rows in the function's own
shape when the first attempt did the work (the run is completed at the caller's epoch,
the resume audited, ...), or None to keep what the repeat said.  The arguments are the
function's own, in its SQL order (docs/sql-api.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import psycopg

from ticketiq_pg import errors
from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Recogniser


class _Reads(Protocol):
    async def get_run(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.RunView: ...

    async def get_answer(
        self, run_id: uuid.UUID, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.AnswerView | None: ...

    async def rows(
        self, function: str, args: Sequence[Any], conn: psycopg.AsyncConnection | None
    ) -> list[dict[str, Any]]: ...



# The recognisers: each is called only after an attempt that may have
# committed, with the repeat's translated error or its rows, and returns
# rows in the function's own shape, or None to keep what the repeat said.

async def start_run(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    holder, run_id, correlation_id = args[0], args[11], args[8]
    if error is not None and not isinstance(error, errors.StepConflict):
        return None
    if rows is not None and (not rows or rows[0]["created"] or rows[0]["run_id"] != run_id):
        return None
    run = await db.get_run(run_id)
    if run.lease_holder != holder or run.epoch != 1 or run.status != "running":
        return None
    return [{"run_id": run_id, "epoch": 1, "lease_expires_at": run.lease_expires_at,
             "created": True, "correlation_id": correlation_id or str(run_id)}]


async def hand_on_answer(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.RunNotRunning):
        return None
    # Handed on by the caller's own epoch: its first attempt committed (the
    # same statement completed the run).
    answer = await db.get_answer(args[0])
    if answer is None or answer.handed_on_epoch != args[1] or answer.handed_on_at is None:
        return None
    return [{"run_id": answer.run_id, "step": answer.step, "body": answer.body,
             "seal": answer.seal, "seal_key_id": answer.seal_key_id,
             "handed_on_at": answer.handed_on_at}]


async def ended_at_epoch(
db: _Reads, args: Sequence[Any], error: Exception | None, status: str
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.RunNotRunning):
        return None
    run = await db.get_run(args[0])
    if run.status != status or run.epoch != args[1]:
        return None
    return [{"run_id": run.run_id, "status": status, "finished_at": run.finished_at}]


async def fail_run(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    return await ended_at_epoch(db, args, error, "failed")


async def stop_run(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    return await ended_at_epoch(db, args, error, "stopped")


async def release_run(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.Fenced):
        return None
    run = await db.get_run(args[0])
    if run.status != "claimed" or run.epoch != args[1] + 1:
        return None
    return [{"run_id": run.run_id, "epoch": run.epoch}]


async def suspend_run(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.Fenced):
        return None
    run = await db.get_run(args[0])
    if run.status != "suspended" or run.epoch != args[1] + 1 or run.wait_key != args[2]:
        return None
    return [{"run_id": run.run_id, "status": run.status, "epoch": run.epoch}]


async def suspend_for_vendor(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.Fenced):
        return None
    run = await db.get_run(args[1])
    if run.status != "suspended" or run.epoch != args[2] + 1 or run.wait_key != f"vendor:{args[0]}":
        return None
    # the turn the first attempt set is the run's timer; the caller needs only the epoch
    return [{"due_at": None, "epoch": run.epoch, "suspended": True}]


async def wait_run(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.Fenced):
        return None
    run = await db.get_run(args[0])
    if run.status != "suspended" or run.epoch != args[1] + 1 or run.wait_key != args[3]:
        return None
    return [{"outcome": "suspended", "payload": None, "due_at": None, "epoch": run.epoch}]


async def await_first(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.Fenced):
        return None
    run = await db.get_run(args[0])
    if (run.status != "suspended" or run.epoch != args[1] + 1
            or run.wait_key != f"first:{args[0]}:{args[2]}"):
        return None
    return [{"outcome": "suspended", "child_run_id": None, "place": None, "epoch": run.epoch}]


async def job_ended_at_epoch(
db: _Reads, args: Sequence[Any], error: Exception | None, state: str
) -> list[dict[str, Any]] | None:
    if not isinstance(error, errors.RunNotRunning):
        return None
    (job,) = await db.rows("get_job", (args[0],), None)
    if job["state"] != state or job["epoch"] != args[1]:
        return None
    return [{"job_id": job["job_id"], "state": state, "finished_at": job["finished_at"]}]


async def finish_job(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    return await job_ended_at_epoch(db, args, error, "completed")


async def fail_job(
db: _Reads, args: Sequence[Any], error: Exception | None, rows: list[dict[str, Any]] | None
) -> list[dict[str, Any]] | None:
    return await job_ended_at_epoch(db, args, error, "failed")


#: The recogniser of each function that has one.
BY_FUNCTION: Mapping[str, Recogniser] = {
    "start_run": start_run,
    "hand_on_answer": hand_on_answer,
    "fail_run": fail_run,
    "stop_run": stop_run,
    "release_run": release_run,
    "suspend_run": suspend_run,
    "wait_run": wait_run,
    "await_first": await_first,
    "suspend_for_vendor": suspend_for_vendor,
    "finish_job": finish_job,
    "fail_job": fail_job,
}
