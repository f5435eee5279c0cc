"""Typed exceptions for every documented SQLSTATE of the ``ticketiq`` functions.

The SQL functions raise errors in the custom class ``TQ``; the driver turns each
into the exception below (the original psycopg error stays as ``__cause__``).
A rejected call changes nothing in the database (invariant I15).

==========  =================  ==================================================
SQLSTATE    exception          meaning
==========  =================  ==================================================
``TQ001``   UnknownRun         no run has that id
``TQ002``   Fenced             the run's epoch is not the writer's: taken over
``TQ003``   LeaseLapsed        the writer's lease expired by the database clock
``TQ004``   InvalidPayload     malformed input (checkpoint, TTL, settlement, ...)
``TQ005``   AnswerSealed       the run's answer is sealed (write-once, handed on)
``TQ006``   RunNotRunning      the run is claimed, completed, failed or stopped
``TQ007``   StepConflict       out-of-order step, second outcome, a call a resume settled otherwise
``TQ008``   UnknownCall        the step has no call with that id
``TQ009``   UnknownApproval    no approval request has that id
``TQ010``   UnknownJob         no background job has that id
``TQ011``   UnknownProcess     no app process is registered with that id
``TQ012``   LimitReached       a run's documented limit is reached (its pending signals)
``TQ013``   KeyConflict        a key was used with another payload or by another caller
``TQ014``   UnknownSignal      the run's workflow does not wait for a signal of that name
==========  =================  ==================================================

``Fenced``, ``LeaseLapsed`` and ``RunNotRunning`` share the base class
``NotOwner``: whichever of them an attempt sees, it no longer owns the run and
must stop it at once, making no further call.

The step engine ends an attempt early with the :class:`RunInterrupted` family, raised in
Python and caught by the engine (never by an app): :class:`StopRequested` (a Stop was
asked), :class:`Suspended` (the run gave its lease up to wait), :class:`Drained` (the
process is shutting down) and :class:`RunFailed` (the run cannot go on; it is failed
now, with its reason and audit event).  They are not :class:`TicketIQError`: a tool that
catches the library's errors must not swallow the engine's own control flow.

The whole tree::

    TicketIQError
        NotOwner: Fenced, LeaseLapsed, RunNotRunning, LeaseLost
        TransientError, UnknownRun, InvalidPayload, AnswerSealed, StepConflict,
        UnknownCall, UnknownApproval, UnknownJob, UnknownProcess, LimitReached,
        KeyConflict, UnknownSignal, SealMismatch, SchemaVersionMismatch, ConfigError,
        LivenessUnconfirmed, InvalidAction
    RunInterrupted
        StopRequested, Suspended, Drained, RunFailed
"""

from __future__ import annotations

import psycopg


class TicketIQError(Exception):
    """Base class of every error raised by ticketiq_pg."""

    sqlstate: str | None = None


class NotOwner(TicketIQError):
    """The calling attempt no longer owns the run: stop it, make no further call."""


class LeaseLost(NotOwner):
    """This process no longer holds the lease of a run or job, or cannot be sure it does.

    Raised by the process itself (its lease book), not by the database: a renewal
    refused, or no renewal confirmed before the self-fencing deadline (I12).
    """


class TransientError(TicketIQError):
    """A failure worth trying again later: raise it from a model or a tool (raised in Python).

    ``status`` is the HTTP status where there is one; ``retry_after`` the seconds the
    server asked to wait.  Timeouts, dropped connections and HTTP 408/425/429/5xx from
    other libraries count as transient too (:func:`ticketiq_pg.retries.is_transient`).
    """

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class UnknownRun(TicketIQError):
    """No run has that id (SQLSTATE TQ001)."""

    sqlstate = "TQ001"


class Fenced(NotOwner):
    """The run's epoch is not the writer's: taken over (SQLSTATE TQ002)."""

    sqlstate = "TQ002"


class LeaseLapsed(NotOwner):
    """The writer's lease expired by the database clock (SQLSTATE TQ003)."""

    sqlstate = "TQ003"


class InvalidPayload(TicketIQError, ValueError):
    """Malformed input (checkpoint, TTL, settlement, ...) (SQLSTATE TQ004)."""

    sqlstate = "TQ004"


class AnswerSealed(TicketIQError):
    """The run's answer is sealed (write-once, handed on) (SQLSTATE TQ005)."""

    sqlstate = "TQ005"


class RunNotRunning(NotOwner):
    """The run is claimed, completed, failed or stopped (SQLSTATE TQ006)."""

    sqlstate = "TQ006"


class StepConflict(TicketIQError):
    """Out-of-order step, second outcome, repeated resume (SQLSTATE TQ007)."""

    sqlstate = "TQ007"


class UnknownCall(TicketIQError):
    """The step has no call with that id (SQLSTATE TQ008)."""

    sqlstate = "TQ008"


class UnknownApproval(TicketIQError):
    """No approval request has that id (SQLSTATE TQ009)."""

    sqlstate = "TQ009"


class UnknownJob(TicketIQError):
    """No background job has that id (SQLSTATE TQ010)."""

    sqlstate = "TQ010"


class UnknownProcess(TicketIQError):
    """No app process is registered with that id (SQLSTATE TQ011)."""

    sqlstate = "TQ011"


class LimitReached(TicketIQError):
    """A run's documented limit is reached: it holds as many signals not yet consumed
    (or as many bytes of them) as ``ticketiq.send_signal`` allows (SQLSTATE TQ012)."""

    sqlstate = "TQ012"


class KeyConflict(TicketIQError):
    """A key (a signal's sender key) was used before with another payload or by another
    caller: one key is one request, never a second one silently dropped (SQLSTATE TQ013)."""

    sqlstate = "TQ013"


class UnknownSignal(TicketIQError):
    """The run's workflow declares the signals it waits for, and this name is not one of
    them: nothing was stored (SQLSTATE TQ014).  The message names the run's workflow and
    version, the hint the names it waits for."""

    sqlstate = "TQ014"


class SealMismatch(TicketIQError):
    """A checkpoint or answer does not verify against its seal (raised in Python)."""


class SchemaVersionMismatch(TicketIQError):
    """The database's schema version is not one this driver knows."""


class InvalidAction(TicketIQError, ValueError):
    """A workflow step built an action that cannot be made: :meth:`~ticketiq_pg.workflow.
    WorkflowContext.first` or :meth:`~ticketiq_pg.workflow.WorkflowContext.all` with no
    child, too many, or two of one key (raised in Python, by the step's code: the run
    fails with it, nothing started)."""


class ConfigError(TicketIQError, ValueError):
    """A configuration variable is missing or malformed."""


class LivenessUnconfirmed(TicketIQError):
    """This process's liveness token stayed unconfirmed: it starts no run now (raised in Python).

    A peer that found the process's liveness session ended cuts the lease of
    every run the process holds, one started meanwhile too, and takes it
    over: a loss counted for nothing.  Nothing was written; start the run
    again later, or on another process.
    """


class RunInterrupted(Exception):
    """The step engine ends an attempt early (raised and caught by the engine)."""


class StopRequested(RunInterrupted):
    """A Stop was requested for the run: it ends stopped at its next boundary."""


class Suspended(RunInterrupted):
    """The run gave its lease up to wait (an approval, a child run, a workflow's wait)."""


class Drained(RunInterrupted):
    """The process is shutting down while the run waits: it was released."""


class RunFailed(RunInterrupted):
    """The run cannot go on (a permanent error, a spent retry budget, a limit): fail it now."""

    def __init__(self, reason: str, event: str = "agent.run.failed") -> None:
        super().__init__(reason)
        self.reason = reason
        self.event = event


BY_SQLSTATE: dict[str, type[TicketIQError]] = {
    cls.sqlstate: cls
    for cls in (
        UnknownRun,
        Fenced,
        LeaseLapsed,
        InvalidPayload,
        AnswerSealed,
        RunNotRunning,
        StepConflict,
        UnknownCall,
        UnknownApproval,
        UnknownJob,
        UnknownProcess,
        LimitReached,
        KeyConflict,
        UnknownSignal,
    )
    if cls.sqlstate
}


def translate(error: psycopg.Error) -> Exception:
    """Return the typed exception for a psycopg error, or the error itself."""
    cls = BY_SQLSTATE.get(error.sqlstate or "")
    if cls is None:
        return error
    diag = error.diag
    message = diag.message_primary or str(error)
    if diag.message_hint:
        message = f"{message} ({diag.message_hint})"
    exc = cls(message)
    exc.sqlstate = error.sqlstate
    return exc
