"""What counts as transient, how long to wait, and what a failed call tells the model."""

from __future__ import annotations

from typing import Any

import pytest

from ticketiq_pg import RetryPolicy, TransientError, is_transient
from ticketiq_pg.retries import MODEL_RETRY, describe, failure_result, not_applied, retry_after
from ticketiq_pg.vendors.base import VendorRejected, VendorUnavailable


class SDKError(Exception):
    """Shaped like the openai/anthropic SDKs' errors: ``status_code`` and a response."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"Error code: {status}")
        self.status_code = status
        self.response = type("R", (), {"status_code": status, "headers": headers or {}})()


class APIConnectionError(Exception):
    pass


@pytest.mark.parametrize(("exc", "transient"), [
    (TransientError("busy"), True),
    (TimeoutError(), True),
    (ConnectionResetError(), True),
    (SDKError(429), True),
    (SDKError(503), True),
    (SDKError(529), True),
    (SDKError(400), False),
    (SDKError(401), False),
    (SDKError(404), False),
    (APIConnectionError("reset"), True),  # recognised by name, not imported
    (ValueError("bad"), False),
    (KeyError("x"), False),
])
def test_transient_errors_are_those_worth_trying_again(exc: BaseException,
                                                       transient: bool) -> None:
    assert is_transient(exc) is transient


def test_retry_after_is_read_from_the_error_or_its_response() -> None:
    assert retry_after(TransientError("x", retry_after=2.5)) == 2.5
    assert retry_after(SDKError(429, {"retry-after": "7"})) == 7.0
    assert retry_after(SDKError(429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) is None
    assert retry_after(ValueError()) is None


def test_the_wait_doubles_with_jitter_honours_retry_after_and_runs_out() -> None:
    policy = RetryPolicy(attempts=4, first_delay=0.5, max_delay=1.5)
    top = [policy.delay(n, None, rng=lambda: 1.0) for n in (1, 2, 3)]
    assert top == [0.5, 1.0, 1.5]  # capped at max_delay
    assert policy.delay(1, None, rng=lambda: 0.0) == 0.0  # full jitter
    assert policy.delay(4, None) is None  # the budget is spent
    assert policy.delay(1, TransientError("x", retry_after=3.0)) == 3.0
    assert policy.delay(1, TransientError("x", retry_after=3600.0)) is None  # too long


def test_a_time_budget_bounds_the_tries_and_rides_out_a_minute_of_outage() -> None:
    policy = RetryPolicy(attempts=1000, first_delay=0.5, max_delay=10.0, max_elapsed=60.0)
    assert policy.delay(1, None, rng=lambda: 1.0, elapsed=10.0) == 0.5
    assert policy.delay(9, None, rng=lambda: 1.0, elapsed=55.0) == 5.0  # cut to what is left
    assert policy.delay(9, None, elapsed=60.0) is None  # the time is spent, not the tries
    # Retry-After is honoured past MAX_RETRY_AFTER within the budget, cut at its end.
    long = TransientError("x", retry_after=90.0)
    assert RetryPolicy(max_elapsed=300.0).delay(1, long, elapsed=0.0) == 90.0
    assert policy.delay(1, long, elapsed=20.0) == 40.0
    # The default model policy: jittered waits of at most 10 s, tried for three minutes,
    # so an outage of 60 s is ridden out whatever the draws.
    assert MODEL_RETRY.max_elapsed is not None and MODEL_RETRY.max_elapsed >= 60.0
    waits, elapsed, failed = [], 0.0, 0
    while elapsed < 60.0:
        failed += 1
        wait = MODEL_RETRY.delay(failed, SDKError(529), rng=lambda: 1.0, elapsed=elapsed)
        assert wait is not None, (failed, elapsed)
        waits.append(wait)
        elapsed += wait
    assert max(waits) <= MODEL_RETRY.max_delay
    draws = {MODEL_RETRY.delay(5, SDKError(529), elapsed=1.0) for _ in range(50)}
    assert len(draws) > 40  # full jitter: runs failing together do not retry in step


@pytest.mark.parametrize("bad", [{"attempts": 0}, {"first_delay": 2, "max_delay": 1},
                                 {"timeout": 0}, {"max_elapsed": -1}])
def test_a_policy_that_makes_no_sense_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)


def test_a_failed_call_says_whether_it_had_an_effect() -> None:
    rejected = VendorRejected("jira", "add_comment", "no such issue", status=422)
    result, how = failure_result(rejected, changing=True)
    assert (result["outcome"], result["status"], how) == ("not_applied", 422, "skipped")
    unavailable = VendorUnavailable("jira", "add_comment", "connection reset")
    result, how = failure_result(unavailable, changing=True)
    assert (result["outcome"], result["sent_again"], how) == ("unknown", False, "unknown")
    never_left = VendorUnavailable("jira", "add_comment", "refused", maybe_applied=False)
    assert not_applied(never_left)
    result, how = failure_result(ValueError("bad"), changing=False)
    assert (result, how) == ({"error": "ValueError: bad"}, "made")
    assert describe(SDKError(503)) == "SDKError: Error code: 503"  # the status said once
    assert describe(VendorUnavailable("x", "y", "gone", status=502)) == (
        "VendorUnavailable: x y: gone (HTTP 502)")
