"""Configuration: defaults, validation with clear errors."""

from __future__ import annotations

import base64

import pytest

from ticketiq_pg.config import Settings, parse_seal_keys
from ticketiq_pg.errors import ConfigError

KEY = base64.b64encode(b"k" * 32).decode()


def test_defaults_match_the_specification() -> None:
    s = Settings.from_env({})
    assert (s.lease_ttl, s.sweep_interval, s.max_losses) == (8.0, 3.0, 2)
    assert s.crash_resume_entries is True
    assert s.renew_interval < s.lease_ttl / 2


def test_reads_every_variable() -> None:
    s = Settings.from_env({
        "TICKETIQ_DATABASE_URL": "postgresql://x/y",
        "TICKETIQ_SEAL_KEYS": f"new:{KEY},old:{KEY}",
        "TICKETIQ_LEASE_TTL": "4",
        "TICKETIQ_RENEW_INTERVAL": "1",
        "TICKETIQ_SWEEP_INTERVAL": "0.5",
        "TICKETIQ_MAX_LOSSES": "5",
        "TICKETIQ_CRASH_RESUME_ENTRIES": "false",
    })
    assert s.database_url == "postgresql://x/y"
    assert list(s.seal_keys) == ["new", "old"]
    assert s.sealer().signing_key_id == "new"
    assert (s.lease_ttl, s.renew_interval, s.sweep_interval, s.max_losses) == (4, 1, 0.5, 5)
    assert s.crash_resume_entries is False


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({
            "TICKETIQ_LEASE_TTL": "soon",
            "TICKETIQ_MAX_LOSSES": "-1",
            "TICKETIQ_CRASH_RESUME_ENTRIES": "maybe",
            "TICKETIQ_SEAL_KEYS": "k1:not base64!",
        })
    text = str(info.value)
    for name in ("TICKETIQ_LEASE_TTL", "TICKETIQ_MAX_LOSSES", "TICKETIQ_CRASH_RESUME_ENTRIES",
                 "TICKETIQ_SEAL_KEYS"):
        assert name in text


def test_renewal_must_fit_well_inside_the_lease() -> None:
    with pytest.raises(ConfigError, match="RENEW_INTERVAL"):
        Settings.from_env({"TICKETIQ_LEASE_TTL": "8", "TICKETIQ_RENEW_INTERVAL": "5"})


@pytest.mark.parametrize(
    "text", ["", "nokey", ":abc", f"k1:{base64.b64encode(b'short').decode()}", f"a:{KEY},a:{KEY}"]
)
def test_bad_seal_keys(text: str) -> None:
    with pytest.raises(ValueError):
        parse_seal_keys(text)


def test_sealer_without_keys_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        Settings.from_env({}).sealer()


def test_liveness_interval() -> None:
    """Liveness on by default (0.1 s); 0 turns it off; it must look more often than it renews."""
    assert Settings.from_env({}).liveness_interval == 0.1
    assert Settings.from_env({"TICKETIQ_LIVENESS_INTERVAL": "0"}).liveness_interval == 0.0
    with pytest.raises(ConfigError, match="TICKETIQ_LIVENESS_INTERVAL='-1' must be at least 0"):
        Settings.from_env({"TICKETIQ_LIVENESS_INTERVAL": "-1"})
    with pytest.raises(ConfigError, match=r"TICKETIQ_LIVENESS_INTERVAL \(2.0\) must be less than"):
        Settings.from_env({"TICKETIQ_LIVENESS_INTERVAL": "2"})


def test_group_commit() -> None:
    """Group commit on by default (groups of 4); 0 turns it off; 1 would group nothing."""
    assert Settings.from_env({}).group_commit == 16
    assert Settings.from_env({"TICKETIQ_GROUP_COMMIT": "0"}).group_commit == 0
    assert Settings.from_env({"TICKETIQ_GROUP_COMMIT": "8"}).group_commit == 8
    with pytest.raises(ConfigError, match="TICKETIQ_GROUP_COMMIT=1 groups nothing"):
        Settings.from_env({"TICKETIQ_GROUP_COMMIT": "1"})
    with pytest.raises(ConfigError, match="TICKETIQ_GROUP_COMMIT='x' is not a whole number"):
        Settings.from_env({"TICKETIQ_GROUP_COMMIT": "x"})


def test_runs_in_flight_and_the_pool_are_sized_apart() -> None:
    """A process drives up to 10,000 runs over a pool of 16 by default; each is set alone."""
    default = Settings.from_env({})
    assert (default.max_runs, default.pool_size) == (10_000, 16)
    both = Settings.from_env({"TICKETIQ_MAX_RUNS": "300", "TICKETIQ_POOL_SIZE": "8"})
    assert (both.max_runs, both.pool_size) == (300, 8)
    with pytest.raises(ConfigError, match="TICKETIQ_POOL_SIZE='1' must be at least 2"):
        Settings.from_env({"TICKETIQ_POOL_SIZE": "1"})
    with pytest.raises(ConfigError, match="TICKETIQ_MAX_RUNS='0' must be at least 1"):
        Settings.from_env({"TICKETIQ_MAX_RUNS": "0"})


def test_the_model_retry_budget_is_time_as_well_as_tries() -> None:
    s = Settings.from_env({})
    assert (s.model_attempts, s.model_retry_seconds) == (100, 180.0)
    s = Settings.from_env({"TICKETIQ_MODEL_RETRY_SECONDS": "90", "TICKETIQ_MODEL_ATTEMPTS": "8"})
    assert (s.model_attempts, s.model_retry_seconds) == (8, 90.0)
    with pytest.raises(ConfigError, match="TICKETIQ_MODEL_RETRY_SECONDS"):
        Settings.from_env({"TICKETIQ_MODEL_RETRY_SECONDS": "-1"})


def test_prepared_statements_can_be_turned_off_for_a_transaction_pooler() -> None:
    assert Settings.from_env({}).prepared_statements is True
    assert Settings.from_env({"TICKETIQ_PREPARED_STATEMENTS": "false"}).prepared_statements \
        is False
    with pytest.raises(ConfigError, match="TICKETIQ_PREPARED_STATEMENTS"):
        Settings.from_env({"TICKETIQ_PREPARED_STATEMENTS": "sometimes"})


def test_the_processs_own_sessions_may_have_a_url_of_their_own() -> None:
    """Behind a transaction-mode pooler a process's own sessions (the liveness token, a
    session-level lock; lease renewal; adoption; LISTEN) need real sessions: their own
    URL (issue 46, finding 21); unset, they use the database URL."""
    from ticketiq_pg.runtime.app import App
    from ticketiq_pg.runtime.worker import Worker

    assert Settings.from_env({}).sessions_url is None
    settings = Settings.from_env({
        "TICKETIQ_DATABASE_URL": "postgresql://app@pgbouncer:6432/app",
        "TICKETIQ_PREPARED_STATEMENTS": "false",
        "TICKETIQ_SESSIONS_DATABASE_URL": " postgresql://app@db:5432/app "})
    assert settings.sessions_url == "postgresql://app@db:5432/app"
    assert settings.database_url == "postgresql://app@pgbouncer:6432/app"
    worker = Worker(settings, App(model=None, tools=None))  # type: ignore[arg-type]
    # adoption and LISTEN on the real session (the renewal and liveness sessions are
    # made at start, from the same setting)
    assert worker.listener.conninfo == worker._adopt_session.conninfo == settings.sessions_url
    assert worker._adopt_session.prepared  # a real session may prepare its statements
