"""Retries of what fails transiently: a model step or a tool call is not a crash.

A :class:`RetryPolicy` says how often, how soon and for how long: attempts, a budget in
seconds (``max_elapsed``), exponential backoff with full jitter, a timeout per attempt,
and which errors are transient (:func:`is_transient`:
timeouts, dropped connections, HTTP 408/425/429/5xx, a ``Retry-After`` honoured).  The
runner counts failed attempts in the database (``record_attempt``), so a crash in the
middle of retrying does not reset them.  What may be retried at all is the runner's
decision: the model and reads always; a changing call only where a resend is safe.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ticketiq_pg.errors import TransientError

#: HTTP statuses that say "try again later": the request had no lasting effect or may.
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504}) | frozenset(range(520, 530))

#: A Retry-After longer than this is not waited for: the attempt counts as failed at once
#: (a policy with a time budget waits up to what is left of it instead).
MAX_RETRY_AFTER = 60.0


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an error carries (SDK errors: ``status_code``; ours: ``status``)."""
    for name in ("status_code", "status"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) and 100 <= value <= 599 else None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry_after``, or a ``Retry-After`` header)."""
    value = getattr(exc, "retry_after", None)
    if value is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
        value = headers.get("retry-after") if headers is not None else None
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to the policy's own backoff
    return seconds if seconds is not None and 0 <= seconds < float("inf") else None


def is_transient(exc: BaseException) -> bool:
    """Whether trying again later may succeed: timeouts, lost connections, 408/425/429/5xx."""
    if isinstance(exc, TransientError | TimeoutError | ConnectionError):
        return True
    status = status_of(exc)
    if status is not None:
        return status in TRANSIENT_STATUSES
    # Client libraries' own connection and timeout errors, without importing them.
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TimeoutException", "NetworkError", "TransportError",
                         "APIConnectionError", "APITimeoutError", "VendorUnavailable"})


def not_applied(exc: BaseException) -> bool:
    """Whether the failure says the call had no effect (a 4xx, or it never left)."""
    if getattr(exc, "maybe_applied", True) is False:
        return True
    status = status_of(exc)
    return status is not None and 400 <= status < 500


def describe(exc: BaseException) -> str:
    """``Type: message (HTTP status)``: the reason a run or a model is told."""
    text = f"{type(exc).__name__}: {exc}".rstrip(": ")
    status = status_of(exc)
    if status is not None and str(status) not in text:
        text += f" (HTTP {status})"
    return text[:2000]


@dataclass(frozen=True)
class RetryPolicy:
    """How a failing model step or tool call is tried again.

    ``attempts`` counts every try, the first included (1: never retried).
    ``max_elapsed`` is a budget in seconds from the first failure (None: tries only): no
    try is begun past it, and the last wait is cut to what is left, so a policy with a
    time budget rides out an outage of that length whatever the number of tries.  The
    wait before try *n* + 1 is a random share of ``first_delay * 2 ** (n - 1)`` capped
    at ``max_delay`` (full jitter: a thousand runs failing at once do not try again in
    step), or the server's ``Retry-After`` when it gave one.  ``timeout`` bounds each
    try (None: no bound), kept to the whole second when 20 s or more and to 50 ms below
    (:mod:`ticketiq_pg.runtime.bounds`).
    """

    attempts: int = 4
    first_delay: float = 0.2
    max_delay: float = 5.0
    timeout: float | None = 30.0
    transient: Callable[[BaseException], bool] = field(default=is_transient, compare=False)
    max_elapsed: float | None = None
    #: For the model: past the budget, a run that may wait is suspended until a later
    #: model step succeeds instead of failed (:mod:`ticketiq_pg.runtime.outage`).
    suspend: bool = False

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("a retry policy needs at least one attempt")
        if self.first_delay < 0 or self.max_delay < self.first_delay:
            raise ValueError("delays must satisfy 0 <= first_delay <= max_delay")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError("timeout must be positive, or None")
        if self.max_elapsed is not None and not self.max_elapsed >= 0:
            raise ValueError("max_elapsed must be at least 0, or None")

    def delay(self, failed: int, exc: BaseException | None = None,
              rng: Callable[[], float] = random.random,
              elapsed: float = 0.0) -> float | None:
        """Seconds to wait after ``failed`` failed tries, ``elapsed`` seconds after the
        first failure, or None when no try is left."""
        if failed >= self.attempts:
            return None
        left = None if self.max_elapsed is None else self.max_elapsed - elapsed
        if left is not None and left <= 0:
            return None
        asked = retry_after(exc) if exc is not None else None
        if asked is not None:
            if left is not None:
                # Honoured; one asking past the budget gets a last try at its end.
                return min(asked, left)
            return asked if asked <= MAX_RETRY_AFTER else None
        wait = rng() * min(self.max_delay, self.first_delay * 2 ** (failed - 1))
        return wait if left is None else min(wait, left)


#: The defaults.  The model rides out a provider outage (429, 5xx, 529 overloaded) of
#: up to three minutes: providers' overloads last minutes, and a model step changes
#: nothing outside, so waiting is safe; the tries, jittered up to 10 s apart, are
#: bounded by the time, not their number.  A tool is tried up to 4 times.
MODEL_RETRY = RetryPolicy(attempts=100, first_delay=0.5, max_delay=10.0, max_elapsed=180.0)
TOOL_RETRY = RetryPolicy(attempts=4)


def failure_result(exc: BaseException, changing: bool) -> tuple[dict[str, Any], str]:
    """What the model is told of a call that failed for good, and how it settled.

    A read's failure is just that; a changing call's says whether it had no effect
    (``not_applied``: a 4xx, or it never left) or may have landed (``unknown``), and
    that it was not sent again.
    """
    result: dict[str, Any] = {"error": describe(exc)}
    status = status_of(exc)
    if status is not None:
        result["status"] = status
    if not changing:
        return result, "made"
    if not_applied(exc):
        result.update(outcome="not_applied", sent_again=False)
        return result, "skipped"
    result.update(outcome="unknown", sent_again=False)
    return result, "unknown"
