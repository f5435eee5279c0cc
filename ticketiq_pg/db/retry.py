"""Which driver calls are retried after a lost connection, and why.

A statement that fails because its connection broke (the primary was
killed, a failover is under way, the backend was terminated) may or may
not have committed: the server may have committed it, and with
``synchronous_commit`` the standby may hold it, while the answer never
reached the client.  So a call is sent again only where a repeat is
harmless, judged per function from its SQL (``sql/functions/``):

==========  ==============================================================
``read``     changes nothing: repeated freely
``replay``   the function accepts its own repeat: the same checkpoint,
             mark, outcome or answer again returns the stored row
             (``replayed`` / ``already_marked``), a keyed insert finds its
             row, a renewal renews again
``confirm``  a repeat after a committed first attempt raises (the run is
             completed, failed, released; the resume is audited): the
             retry then reads the run (``get_run``) or job (``get_job``)
             and, when what it finds can only be its own first attempt
             (same epoch, the expected end), returns that instead of the
             error.  The SQL is unchanged
``keyed``    retried only when the caller gave the key that makes a
             repeat find the first attempt's row
``never``    a repeat would claim something else and leave the first
             attempt's claim to nobody (until its lease lapses and the
             sweep counts a loss): not retried
==========  ==============================================================

Whatever the rule, a call whose connection failed *before* its statement
was sent (no connection could be had) is retried: nothing can have
happened.  A call made with ``conn=`` (the caller's own transaction) is
never retried: the transaction is gone with its connection and only the
caller can run it again.  ``docs/failover.md`` has the same table with
the reasons spelled out.

Retries back off from ``first_delay`` (doubling, at most ``max_delay``)
for up to ``budget`` seconds after the first connection error: well under
the 8 s run lease, so a process that cannot reach any primary in time
self-fences as before (invariant I12), and a fenced write that lands late
is refused by the database (I1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import psycopg
from psycopg_pool import PoolClosed, PoolTimeout, TooManyRequests

__all__ = [
    "Repeat",
    "Rule",
    "RULES",
    "RetryPolicy",
    "rule",
    "may_repeat",
    "is_connection_error",
]


class Repeat(StrEnum):
    READ = "read"
    REPLAY = "replay"
    CONFIRM = "confirm"
    KEYED = "keyed"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class Rule:
    repeat: Repeat
    why: str
    #: KEYED: the position of the key among the function's arguments.
    key_arg: int | None = None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long and how often a call is tried again after a connection error."""

    budget: float = 5.0
    first_delay: float = 0.05
    max_delay: float = 0.5

    def __post_init__(self) -> None:
        if self.budget < 0 or self.first_delay <= 0 or self.max_delay < self.first_delay:
            raise ValueError("retry budget >= 0 and 0 < first_delay <= max_delay")


R, P, C, K, N = Repeat.READ, Repeat.REPLAY, Repeat.CONFIRM, Repeat.KEYED, Repeat.NEVER

#: Every function the driver (and the job store) calls, with its rule.
RULES: dict[str, Rule] = {
    # -- reads ---------------------------------------------------------------
    "now": Rule(R, "reads the database clock"),
    "schema_version": Rule(R, "reads the schema version"),
    "get_run": Rule(R, "reads a run"),
    "run_transcript": Rule(R, "reads a transcript"),
    "run_events_after": Rule(R, "reads a run's events"),
    "set_vendor_limit": Rule(R, "an upsert of the same values"),
    "take_vendor_token": Rule(R, "a repeat takes one token more at most: slower, never faster"),
    "give_vendor_token": Rule(R, "a delete of one call's row"),
    "slow_vendor": Rule(R, "sets a time that only grows"),
    "vendor_limit_figures": Rule(R, "reads figures"),
    "get_entry": Rule(R, "reads an inbox entry"),
    "get_entry_by_run": Rule(R, "reads an inbox entry by its run id"),
    "find_api_key": Rule(R, "reads an API key's hash"),
    "list_api_keys": Rule(R, "lists the API keys"),
    "get_answer": Rule(R, "reads a sealed answer"),
    "get_approval": Rule(R, "reads an approval request"),
    "delegation_status": Rule(R, "reads a child run by its delegation key"),
    "get_job": Rule(R, "reads a job"),
    "run_losses": Rule(R, "reads a run's losses"),
    "run_trace_context": Rule(R, "reads the traceparent a run's entry arrived with"),
    "list_runs": Rule(R, "reads a page of runs"),
    "fork_source": Rule(R, "reads a run's checkpoints for a fork"),
    "unrunnable_runs": Rule(R, "reads the waiting runs no live process can run"),
    "declare_workflows": Rule(R, "records the same declaration again"),
    "record_trace_context": Rule(
        P, "the first record of an entry wins: a repeat changes nothing (returns false)"),
    # -- the step loop -------------------------------------------------------
    "write_checkpoint": Rule(
        P, "the same step with the same epoch and seal (seals are deterministic HMACs) "
        "returns the stored row with replayed = true; anything else still raises TQ007"),
    "write_checkpoints": Rule(
        P, "a repeat writes none of the checkpoints its first attempt wrote (their runs' "
        "last step moved on): they come back unwritten and go through write_checkpoint "
        "one by one, which returns each stored row with replayed = true"),
    "mark_in_doubt": Rule(
        P, "marking a call again changes nothing and returns the first mark "
        "(already_marked = true, the classification it recorded)"),
    "mark_calls_in_doubt": Rule(
        P, "as mark_in_doubt, call by call: a repeat marks nothing again and returns the "
        "first marks (already_marked = true)"),
    "record_outcome": Rule(
        P, "the same outcome and settlement again returns the stored row (replayed = true)"),
    "seal_answer": Rule(
        P, "the same answer with the same epoch and seal returns the stored row "
        "(replayed = true)"),
    "mark_delivery": Rule(
        P, "marking again returns the first mark with already_started = true, so the "
        "sender reads the delivery back before sending it: at worst one extra read-back"),
    "hand_on_answer": Rule(
        C, "a repeat finds the run completed (TQ006); an answer handed on by the caller's "
        "own epoch can only be its first attempt's, so it is read back with get_answer "
        "(seal, step and time included) and returned"),
    "record_resume": Rule(
        P, "a settlement already recorded at the same epoch changes nothing and the "
        "resume's audit row (its audit_id) is returned; another settlement of a call "
        "already settled still raises TQ007"),
    "record_resumes": Rule(
        P, "a repeat records nothing twice: each settlement its first attempt recorded "
        "changes nothing and its resume's row comes back as before; an item left out goes "
        "through record_resume on its own"),
    "fail_run": Rule(
        C, "a repeat finds the run failed (TQ006); failed at the caller's own epoch is "
        "its first attempt"),
    "stop_run": Rule(
        C, "a repeat finds the run stopped (TQ006); stopped at the caller's own epoch is "
        "its first attempt"),
    "release_run": Rule(
        C, "a repeat finds the epoch raised (TQ002); claimed at epoch + 1 is the first "
        "attempt's release (adopted meanwhile: still TQ002, the run is not ours either way)"),
    "suspend_run": Rule(
        C, "a repeat finds the epoch raised (TQ002); suspended at epoch + 1 on the same "
        "wait key is the first attempt's suspension"),
    "await_first": Rule(
        C, "a repeat finds the same first end (written once) or waits again; after a "
        "suspension it finds the epoch raised (TQ002), and suspended at epoch + 1 on the "
        "group's wait key is the first attempt's suspension"),
    "suspend_for_vendor": Rule(
        C, "a repeat finds the epoch raised (TQ002); suspended at epoch + 1 on the "
        "vendor's wait key is the first attempt's suspension"),
    "start_run": Rule(
        C, "the driver names the run (a client-side uuid4 when the caller gave no run id): "
        "a repeat finds that run (TQ007, or created = false under an idempotency key) "
        "held by the caller at epoch 1, which is its own first attempt"),
    "request_approval": Rule(
        P, "filing again coalesces with the request already there (one request per call); "
        "a repeat reports coalesced = true, which only relabels the call's settlement"),
    "record_attempt": Rule(
        P, "not idempotent (no attempt id to dedupe by): a repeat after a commit the caller "
        "never saw counts that failure twice, so the retries end one attempt sooner and the "
        "run fails sooner; it never makes a call be sent again, where refusing the repeat "
        "would hand the runner a connection error in the middle of its retries"),
    "audit_once": Rule(
        P, "once-only per (run, event, key): a repeat writes nothing and returns the first "
        "attempt's audit_id with inserted = false"),
    "audit_inspector_call": Rule(
        N, "no key to dedupe by: a repeat after a commit the caller never saw would audit a "
        "person's call twice; the inspector says the audit failed instead"),
    "take_over_child": Rule(
        N, "a repeat finds the child already adopted (by the lost first attempt) and "
        "returns no row; the child comes back through its lease"),
    # -- leases, leadership, sweeps -------------------------------------------
    "renew_leases": Rule(
        P, "renews again from the later statement's clock (runs' and jobs' leases alike); a "
        "lapsed lease is never revived"),
    "claim_leader": Rule(P, "the holder claiming again renews its own lease"),
    "renew_leader": Rule(P, "extends again while the holder holds it at its epoch"),
    "resign_leader": Rule(
        P, "resigning again changes nothing (it returns false the second time)"),
    "sweep_lapsed": Rule(
        P, "each lapse is claimed once by its epoch compare-and-swap; a repeat claims only "
        "what has lapsed since (the first attempt's claims are committed and NOTIFYed)"),
    "adopt_run": Rule(
        N, "a repeat adopts another run (or none); the one the lost first attempt adopted "
        "would wait for its lease to lapse and be counted a loss"),
    "adopt_runs": Rule(
        N, "a repeat adopts other runs (or none); those the lost first attempt adopted "
        "would wait for their leases to lapse and be counted a loss each"),
    "register_process": Rule(P, "records or refreshes the process (with the newest session)"),
    "fail_unrunnable_runs": Rule(
        P, "a run the first attempt failed is failed, not claimed: a repeat fails only the "
        "next ones"),
    # -- liveness: always on the liveness connection itself (conn=), never here --------
    "hold_liveness": Rule(
        N, "the token is a lock of the calling session: only the liveness connection can "
        "hold it, and its owner takes a new one when that connection drops"),
    "release_liveness": Rule(
        N, "releases the token of the calling session: only the session holding it can"),
    "watch_processes": Rule(
        N, "what the watcher saw alive is honoured only on the session that saw it; on a "
        "new session the watcher starts over"),
    "purge_answers": Rule(P, "deletes expired answers; a repeat deletes the next batch"),
    "purge_history": Rule(P, "deletes old finished runs; a repeat deletes the next batch"),
    # -- approvals, stops, waits -----------------------------------------------
    "decide_approval": Rule(P, "deciding the same way again returns the stored decision"),
    "request_stop": Rule(P, "asking twice keeps the first request"),
    "stop_runs": Rule(
        P, "each run is asked once: a repeat leaves out the runs asked already (their first "
        "request kept) and asks only runs that match since"),
    "restart_run": Rule(
        N, "a repeat would find the run claimed or running (TQ006); the person reads the run "
        "and decides again"),
    "fork_run": Rule(
        K, "with an idempotency key a repeat finds the fork (created = false); without one it "
        "finds the fork's run id taken (TQ007) and the caller reads that run", key_arg=6),
    "wake_runs": Rule(P, "waking again finds nothing suspended on the key (returns 0)"),
    # -- workflow waits (schema 15) -------------------------------------------------
    "wait_run": Rule(
        C, "a signal consumed by the step, or a timer due, is answered again the same "
        "(keyed by the step key); a suspension finds the epoch raised (TQ002), and "
        "suspended at epoch + 1 on the same wait key is the first attempt's"),
    "fire_due_timers": Rule(
        P, "each timer fires once (its state moves to fired); a repeat fires only what is "
        "due since"),
    "send_signal": Rule(
        P, "keyed by (run, name, sender key): a repeat finds the first delivery "
        "(created = false) and wakes nothing"),
    # -- entry points ------------------------------------------------------------
    "accept_entry": Rule(
        P, "keyed by (kind, owner, sender id): a repeat finds the entry (created = false)"),
    "upsert_cron_schedule": Rule(P, "an upsert: the same schedule again"),
    # -- the front's API keys ----------------------------------------------------
    "create_api_key": Rule(
        N, "a repeat finds the key id taken (TQ004); the caller makes a new key instead"),
    "revoke_api_key": Rule(P, "revoking again changes nothing (returns false)"),
    "note_api_key_use": Rule(P, "recording the use again within the minute changes nothing"),
    "fire_due_crons": Rule(
        P, "each fire is one row written once; a repeat fires only what is due since"),
    "claim_entries": Rule(
        N, "a repeat claims other entries; runs the lost first attempt started would be "
        "held by nobody until their leases lapse (then swept and resumed, a loss counted)"),
    # -- background jobs (ticketiq_pg.db.jobs) -----------------------------------------
    "enqueue_job": Rule(
        K, "with an idempotency key a repeat finds the job; without one it would queue a "
        "second job", key_arg=3),
    "claim_job": Rule(
        N, "a repeat claims another job; the first attempt's would wait for the job sweep"),
    "checkpoint_job": Rule(P, "replaces the progress with the same progress"),
    "finish_job": Rule(
        C, "a repeat finds the job completed (TQ006); completed at the caller's epoch is "
        "its first attempt"),
    "fail_job": Rule(
        C, "a repeat finds the job failed (TQ006); failed at the caller's epoch is its "
        "first attempt"),
    "sweep_jobs": Rule(P, "each lapse is taken back once by its epoch compare-and-swap"),
}

_UNKNOWN = Rule(N, "not classified: never repeated once sent")


def rule(function: str) -> Rule:
    return RULES.get(function, _UNKNOWN)


def may_repeat(function: str, args: Sequence[Any]) -> bool:
    """May this call be sent again after an attempt that may have committed?"""
    found = rule(function)
    if found.repeat is Repeat.KEYED:
        return found.key_arg is not None and args[found.key_arg] is not None
    return found.repeat is not Repeat.NEVER


#: SQLSTATEs of a session the server ended: an administrator (or a fast
#: shutdown), a crash of another backend, a server not yet accepting.
_SESSION_ENDED = frozenset({"57P01", "57P02", "57P03"})


def is_connection_error(exc: BaseException) -> bool:
    """A failure of the connection, not an error the statement raised.

    Connection exceptions (class 08, or no SQLSTATE at all: the socket
    closed under the client), sessions the server ended, and a pool that
    could not hand out a connection in time.  A closed pool and the
    pool's queue limit are the caller's business, never retried.
    """
    if isinstance(exc, PoolClosed | TooManyRequests):
        return False
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _SESSION_ENDED
