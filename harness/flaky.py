"""The flaky mode of the kill trials: transient errors at random alongside the faults.

``LIYAGENT_KILL_FLAKY=1`` (``tests/unit/test_kill_trials.py``) has
:func:`~harness.trials.run_trials` build a :class:`Flaky`.  The Arena
hands it to the victim and the survivor in ``TICKETIQ_FLAKY`` (JSON,
:meth:`Flaky.env_value`; the scripted app reads it with :meth:`Flaky.from_env`)
and installs :func:`vendor_faults` on the vendor service.  Then:

* the scripted model (:mod:`~harness.scripted`) answers a step with a
  transient error instead, at random: a 429 with a small Retry-After, a 503, a
  timeout or a dropped connection.  The n-th ask of step s fails when a draw
  seeded by (the run's script seed, s, n) says so (chance ``model_rate``), never
  once ``max_in_a_row`` errors of that step are on record.  The count is kept in
  the shared log, across processes, so a takeover does not start it again: a step
  fails at most that many times in all, well inside the runner's model budget,
  and a repeat run with the same ``LIYAGENT_KILL_SEED`` fails the same steps.
  The errors are ``ticketiq_pg.errors.TransientError`` when it exists, else
  :class:`InjectedTransient` (a ``ConnectionError`` with ``status`` and
  ``retry_after``), and the builtin ``TimeoutError`` and ``ConnectionResetError``;
* the vendor service answers transient errors at random on the routes the
  scripted tools call (Jira issue reads, comments and their read-backs,
  incident.io creates): 503s, 429s with a Retry-After, connections dropped before
  and after the request was accepted, and, on reads only, delays past the tools'
  read timeout (``read_timeout``).  A write is never delayed: one that lands after
  its client gave up may be read back absent and sent again, a hazard of every
  reader, not what these trials judge.  Teams replies (the answers' delivery) are
  not faulted;
* every error is a line in the log (JSON, fsynced, shared by the processes): the
  model's when it answers one, a tool's when its vendor call raised, so the judge
  counts the errors each run saw (:func:`note_errors`).

Judged, besides what every trial is: no run fails (a trial whose run failed is
lost, with its failure reason), and a run's ``loss_count`` is at most the faults
that hit its process: 1 for a run caught in flight on the victim, 0 for one the
fault did not catch or that ran on the survivor (``Trial.loss_allowed``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ticketiq_pg import errors

ENV = "TICKETIQ_FLAKY"

#: What the model answers instead of a step.
MODEL_ERRORS = ("throttled", "unavailable", "timeout", "reset")

#: The routes the scripted tools call, by vendor (the faults match nothing else).
ROUTES = {"jira": r"^/jira/rest/api/3/issue/OPS-", "incidentio": r"^/incidentio/v2/incidents$"}

#: The chance each fault hits a matching request, in the order they are tried.
VENDOR_RATES = (("fail", 0.04), ("throttle", 0.03), ("drop_before_accept", 0.02),
                ("drop_after_accept", 0.02))
READ_DELAY_RATE = 0.03
THROTTLE_SECONDS = 0.2


class InjectedTransient(ConnectionError):
    """A transient model error where ``ticketiq_pg.errors.TransientError`` does not exist."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def transient_error(
    message: str, *, status: int | None = None, retry_after: float | None = None
) -> Exception:
    """``TransientError`` (the runner's own) if it exists, else :class:`InjectedTransient`."""
    kind = getattr(errors, "TransientError", None) or InjectedTransient
    return kind(message, status=status, retry_after=retry_after)


@dataclasses.dataclass(frozen=True)
class Flaky:
    """How flaky the model and the vendors are, and where their errors are logged."""

    log: Path
    seed: int = 0
    model_rate: float = 0.25
    max_in_a_row: int = 3
    read_timeout: float = 1.0

    def env_value(self) -> str:
        return json.dumps({**dataclasses.asdict(self), "log": str(self.log)})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Flaky | None:
        raw = (os.environ if environ is None else environ).get(ENV, "")
        if not raw:
            return None
        fields = json.loads(raw)
        return cls(**{**fields, "log": Path(fields["log"])})

    # -- the log ------------------------------------------------------------

    def record(self, source: str, run_id: Any, step: int, **fields: Any) -> None:
        line = json.dumps({"source": source, "run_id": str(run_id), "step": step,
                           "pid": os.getpid(), "at": time.time(), **fields}, default=str)
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> list[dict[str, Any]]:
        try:
            text = self.log.read_text()
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a kill
        return out

    # -- the model ----------------------------------------------------------

    async def model_fault(self, seed: Any, run_id: Any, step: int) -> None:
        """Raise a transient error instead of answering step ``step``, when it is its turn."""
        run = str(run_id)
        failed = sum(1 for e in self.entries() if e.get("source") == "model"
                     and e.get("run_id") == run and e.get("step") == step)
        if failed >= self.max_in_a_row:
            return
        rng = random.Random(f"flaky:{seed}:{step}:{failed}")
        if rng.random() >= self.model_rate:
            return
        kind = rng.choice(MODEL_ERRORS)
        exc: Exception
        if kind == "throttled":
            wait = round(rng.uniform(0.1, 0.5), 2)
            exc = transient_error(f"rate limited, retry after {wait} s (injected)",
                                  status=429, retry_after=wait)
        elif kind == "unavailable":
            exc = transient_error("the model service is unavailable (injected)", status=503)
        elif kind == "timeout":
            await asyncio.sleep(rng.uniform(0.2, 0.6))
            exc = TimeoutError("the model did not answer in time (injected)")
        else:
            exc = ConnectionResetError("connection reset by peer (injected)")
        self.record("model", run, step, kind=kind, error=f"{type(exc).__name__}: {exc}")
        raise exc

    # -- the tools ----------------------------------------------------------

    def watch(self, tool: str, fn: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Any]:
        """``fn`` (a tool or a reader), logging each vendor error its call raised."""
        from ticketiq_pg.vendors.base import VendorError

        async def watched(ctx: Any) -> Any:
            try:
                return await fn(ctx)
            except VendorError as exc:
                self.record("vendor", ctx.run.run_id, ctx.step, tool=tool, status=exc.status,
                            error=f"{type(exc).__name__}: {exc}")
                raise

        return watched


def vendor_faults(flaky: Flaky) -> list[dict[str, Any]]:
    """The faults to install (``VendorService.fault`` keyword arguments), seeded by the run."""
    rng = random.Random(f"flaky:{flaky.seed}:vendor")
    faults: list[dict[str, Any]] = []
    for vendor, path in ROUTES.items():
        if vendor == "jira":
            faults.append({"vendor": vendor, "action": "delay", "path_regex": path,
                           "method": "GET", "seconds": flaky.read_timeout + 0.5,
                           "probability": READ_DELAY_RATE})
        for action, rate in VENDOR_RATES:
            faults.append({"vendor": vendor, "action": action, "path_regex": path,
                           "probability": rate,
                           **({"seconds": THROTTLE_SECONDS} if action == "throttle" else {})})
    for fault in faults:
        fault.update(count=1_000_000, seed=rng.randrange(1 << 62))
    return faults


def injected_at_vendor(faults: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Requests each kind of fault hit, from the vendor service's own record of faults."""
    hits: Counter[str] = Counter()
    for fault in faults:
        hits[fault["action"]] += int(fault["count"]) - int(fault["remaining"])
    return dict(hits)


def note_errors(trials: Iterable[Any], entries: list[dict[str, Any]]) -> None:
    """Set each trial's ``model_errors`` and ``vendor_errors``: the errors its run saw."""
    seen: dict[str, Counter[str]] = {}
    for entry in entries:
        seen.setdefault(str(entry.get("run_id")), Counter())[str(entry.get("source"))] += 1
    for trial in trials:
        errors_seen = seen.get(str(trial.run_id), Counter()) if trial.run_id else Counter()
        trial.model_errors = errors_seen["model"]
        trial.vendor_errors = errors_seen["vendor"]
