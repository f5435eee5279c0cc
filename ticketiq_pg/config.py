"""Configuration from environment variables, validated at start.

=================================  ========  ==========================================
variable                           default   meaning
=================================  ========  ==========================================
``TICKETIQ_DATABASE_URL``          (none)    libpq URL of the database (the demo starts
                                             an embedded server when it is unset)
``TICKETIQ_SEAL_KEYS``             (none)    ``id:base64key[,id:base64key...]``; the
                                             first key seals, every key verifies; each
                                             key at least 16 bytes once decoded
``TICKETIQ_LEASE_TTL``             ``8``     seconds a run lease lasts
``TICKETIQ_RENEW_INTERVAL``        ``2``     seconds between lease renewals (< TTL/2)
``TICKETIQ_SELF_FENCE_MARGIN``     ``1``     seconds before a possible lapse at which
                                             a process that could not renew stops
``TICKETIQ_SWEEP_INTERVAL``        ``3``     seconds between the leader's sweeps
``TICKETIQ_POLL_INTERVAL``         ``1``     seconds between resume polls (NOTIFY is
                                             only a hint)
``TICKETIQ_MAX_LOSSES``            ``2``     a run lost more often than this is failed
``TICKETIQ_ANSWER_RETENTION``      ``86400`` seconds a sealed answer is kept
``TICKETIQ_CRASH_RESUME_ENTRIES``  ``true``  write ahead cron, trigger, co-pilot and
                                             Teams runs too (``false``: only runs that
                                             may wait)
``TICKETIQ_ENTRY_CLAIM_DELAY``     ``0``     seconds an inbox entry waits before this
                                             process claims it (a recovery-only process
                                             leaves fresh entries to the others)
``TICKETIQ_LIVENESS_INTERVAL``     ``0.1``   seconds between looks at the peers'
                                             liveness tokens (a dead peer's leases get
                                             three of them of grace); ``0`` turns
                                             liveness off (lease expiry alone, e.g.
                                             behind a transaction-mode pooler)
``TICKETIQ_SESSIONS_DATABASE_URL`` (none)    a URL of its own for the process's own
                                             sessions (liveness, whose token is a
                                             session-level lock; lease renewal;
                                             adoption; LISTEN): the database directly,
                                             or a session-mode pool, where
                                             ``TICKETIQ_DATABASE_URL`` names a
                                             transaction-mode pooler; unset, they use
                                             ``TICKETIQ_DATABASE_URL``
``TICKETIQ_PREPARED_STATEMENTS``  ``true``  ``false``: no connection prepares a
                                             statement (behind a transaction-mode
                                             pooler such as PgBouncer before 1.21)
``TICKETIQ_GROUP_COMMIT``          ``16``    checkpoints of runs that step together
                                             sent in one statement as soon as this
                                             many are queued (at least 2); ``0``
                                             turns group commit off (one statement
                                             per checkpoint)
``TICKETIQ_MAX_RUNS``              ``10000`` runs one process drives at once (started
                                             and adopted); a run waiting on its model
                                             holds no connection, so this is bounded
                                             by memory, not by connections
``TICKETIQ_POOL_SIZE``             ``16``    connections in a worker's pool, shared
                                             by its runs and jobs (each statement
                                             takes one for its round trip only),
                                             besides its lease, LISTEN and liveness
                                             sessions; at least 2
=================================  ========  ==========================================

:func:`Settings.from_env` reads them all and raises one ConfigError naming
every variable that is wrong.

This module is the one place the library reads its environment: every other variable
(the CLI's, logging's, the metrics' and traces', the front's through
:class:`~ticketiq_pg.front.settings.FrontSettings`, the SQL tree's override, the fault
points of the kill trials) is read through :class:`Environment`, which names them all.
``tests/test_layout.py`` holds that no other module of the package reads ``os.environ``.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ticketiq_pg.errors import ConfigError
from ticketiq_pg.seal import Sealer

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_seal_keys(text: str) -> dict[str, bytes]:
    """Parse ``id:base64key,...`` into an ordered mapping (raises ValueError)."""
    keys: dict[str, bytes] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key_id, sep, encoded = item.partition(":")
        key_id = key_id.strip()
        if not sep or not key_id:
            raise ValueError(f"{item!r} is not id:base64key")
        if key_id in keys:
            raise ValueError(f"key id {key_id!r} appears twice")
        try:
            secret = base64.b64decode(encoded.strip(), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"key {key_id!r} is not valid base64") from exc
        if len(secret) < 16:
            raise ValueError(f"key {key_id!r} is {len(secret)} bytes; at least 16 are needed")
        keys[key_id] = secret
    if not keys:
        raise ValueError("no key given")
    return keys


def new_seal_key(key_id: str | None = None) -> str:
    """A fresh 32-byte key as ``id:base64key``, the form ``TICKETIQ_SEAL_KEYS`` takes.

    The default id is ``k``, today's UTC date and 4 hex digits (``k20261201-3fa9``).
    """
    key_id = key_id or f"k{datetime.now(UTC):%Y%m%d}-{secrets.token_hex(2)}"
    if any(c in key_id for c in ":, "):
        raise ValueError(f"a key id is a non-empty word without ':', ',' or spaces: {key_id!r}")
    return f"{key_id}:{base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()}"


@dataclass(frozen=True)
class Environment:
    """The variables the library reads besides :class:`Settings`'s, each by its name.

    ``Environment.current()`` is the process's; a test passes a mapping of its own.
    """

    values: Mapping[str, str] = field(default_factory=dict)

    DATABASE_URL = "TICKETIQ_DATABASE_URL"
    APP = "TICKETIQ_APP"
    LOG_LEVEL = "TICKETIQ_LOG_LEVEL"
    LOG_FORMAT = "TICKETIQ_LOG_FORMAT"
    HTTP_PORT = "TICKETIQ_HTTP_PORT"
    METRICS_HOST = "TICKETIQ_METRICS_HOST"
    METRICS_PORT = "TICKETIQ_METRICS_PORT"
    METRICS_DATABASE = "TICKETIQ_METRICS_DATABASE"
    TRACES_FILE = "TICKETIQ_TRACES_FILE"
    FRONT_URL = "TICKETIQ_FRONT_URL"
    FRONT_TOKEN = "TICKETIQ_FRONT_TOKEN"
    SQL_DIR = "TICKETIQ_SQL_DIR"
    FAULTS = "TICKETIQ_FAULTS"

    @classmethod
    def current(cls) -> Environment:
        return cls(os.environ)

    def get(self, name: str) -> str | None:
        """The variable's text, stripped; None when it is unset or blank."""
        text = self.values.get(name)
        return text.strip() if text is not None and text.strip() else None

    def port(self, name: str, lowest: int = 1) -> int | None:
        """A port number (``lowest``: 0 for any free port); None when unset."""
        text = self.get(name)
        if text is None:
            return None
        if not text.isdigit() or not lowest <= int(text) < 65536:
            raise ConfigError(f"{name} must be a port number ({lowest}-65535), not {text!r}")
        return int(text)

    @property
    def log_format(self) -> str:
        value = (self.get(self.LOG_FORMAT) or "text").lower()
        if value not in ("text", "json"):
            raise ConfigError(f"{self.LOG_FORMAT} must be text or json, not {value!r}")
        return value

    @property
    def metrics_database(self) -> bool:
        """Whether a scrape reads the database's figures too (``0``: not)."""
        return self.get(self.METRICS_DATABASE) != "0"

    @property
    def traces_wanted(self) -> bool:
        """A trace file or an OTLP endpoint is set."""
        return bool(self.get(self.TRACES_FILE) or self.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                    or self.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))

    @property
    def service_name(self) -> str:
        return self.get("OTEL_SERVICE_NAME") or "ticketiq-pg"

    @property
    def user(self) -> str:
        """Who runs the CLI, for an operator's acts (``$USER``, else ``operator``)."""
        return self.get("USER") or "operator"


@dataclass(frozen=True)
class Settings:
    """A process's settings: the database, the seal keys and the lease timings (docs/guide.md)."""

    database_url: str | None = None
    #: The URL of the process's own sessions, outside the statements' pool: liveness,
    #: lease renewal, adoption, LISTEN (None: ``database_url``).  Real sessions, never a
    #: transaction-mode pooler's.
    sessions_url: str | None = None
    seal_keys: dict[str, bytes] = field(default_factory=dict, repr=False)
    lease_ttl: float = 8.0
    renew_interval: float = 2.0
    self_fence_margin: float = 1.0
    sweep_interval: float = 3.0
    poll_interval: float = 1.0
    max_losses: int = 2
    answer_retention: float = 86400.0
    crash_resume_entries: bool = True
    entry_claim_delay: float = 0.0
    liveness_interval: float = 0.1
    prepared_statements: bool = True
    group_commit: int = 16
    #: Runs one process drives at once, and the connections its pool holds: independent,
    #: since a run holds a connection only for the round trip of each statement.
    max_runs: int = 10_000
    pool_size: int = 16
    #: Tries of a failing model step and tool call (the first included).
    model_attempts: int = 100
    model_retry_seconds: float = 180.0
    tool_attempts: int = 4
    #: A run's limits: model steps, and seconds from its start (0: none).
    max_steps: int = 50
    run_deadline: float = 3600.0
    #: A step's calls made at once, at most (1: one after another).
    calls_at_once: int = 8
    #: Live events of runs (text as it is generated): ``watched`` (runs a client watches),
    #: ``always`` or ``off``; and how long text is gathered before it is sent.
    live_events: str = "watched"
    live_text_interval: float = 0.05
    #: Runs in flight one owner may have before its next waits to start (0: no limit).
    owner_max_runs: int = 0
    #: Seconds a woken workflow run waits for a live worker that runs its version before
    #: it is failed (0: it waits until one comes).
    workflow_wait_limit: float = 0.0
    #: Seconds a call waits for a vendor's token holding its run's lease before the run
    #: (one that may wait) suspends until its turn.
    vendor_suspend_after: float = 2.0
    #: Seconds at most a run's later step waits for the resumes of a takeover to take
    #: their first step (0: no such order).
    resumes_first_wait: float = 20.0

    def sealer(self) -> Sealer:
        """The sealer of these keys (ConfigError without any)."""
        if not self.seal_keys:
            raise ConfigError("TICKETIQ_SEAL_KEYS is not set: checkpoints cannot be sealed")
        return Sealer(self.seal_keys)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the ``TICKETIQ_*`` variables; every malformed one is named in one ConfigError."""
        env = Environment.current().values if environ is None else environ
        problems: list[str] = []
        values: dict[str, object] = {}

        def number(name: str, attr: str, minimum: float, integer: bool = False) -> None:
            raw = env.get(name)
            if raw is None or raw.strip() == "":
                return
            try:
                value: float = int(raw) if integer else float(raw)
            except ValueError:
                problems.append(f"{name}={raw!r} is not a {'whole ' if integer else ''}number")
                return
            if not math.isfinite(value) or value < minimum:
                problems.append(f"{name}={raw!r} must be at least {minimum}")
                return
            values[attr] = value

        number("TICKETIQ_LEASE_TTL", "lease_ttl", 0.1)
        number("TICKETIQ_RENEW_INTERVAL", "renew_interval", 0.05)
        number("TICKETIQ_SELF_FENCE_MARGIN", "self_fence_margin", 0.0)
        number("TICKETIQ_SWEEP_INTERVAL", "sweep_interval", 0.05)
        number("TICKETIQ_POLL_INTERVAL", "poll_interval", 0.05)
        number("TICKETIQ_MAX_LOSSES", "max_losses", 0, integer=True)
        number("TICKETIQ_ANSWER_RETENTION", "answer_retention", 1.0)
        number("TICKETIQ_ENTRY_CLAIM_DELAY", "entry_claim_delay", 0.0)
        number("TICKETIQ_LIVENESS_INTERVAL", "liveness_interval", 0.0)
        number("TICKETIQ_GROUP_COMMIT", "group_commit", 0, integer=True)
        number("TICKETIQ_MODEL_ATTEMPTS", "model_attempts", 1, integer=True)
        number("TICKETIQ_MODEL_RETRY_SECONDS", "model_retry_seconds", 0.0)
        number("TICKETIQ_TOOL_ATTEMPTS", "tool_attempts", 1, integer=True)
        number("TICKETIQ_MAX_STEPS", "max_steps", 1, integer=True)
        number("TICKETIQ_CALLS_AT_ONCE", "calls_at_once", 1, integer=True)
        number("TICKETIQ_RUN_DEADLINE", "run_deadline", 0.0)
        number("TICKETIQ_MAX_RUNS", "max_runs", 1, integer=True)
        number("TICKETIQ_POOL_SIZE", "pool_size", 2, integer=True)
        number("TICKETIQ_LIVE_TEXT_INTERVAL", "live_text_interval", 0.0)
        number("TICKETIQ_OWNER_MAX_RUNS", "owner_max_runs", 0, integer=True)
        number("TICKETIQ_WORKFLOW_WAIT_LIMIT", "workflow_wait_limit", 0.0)
        number("TICKETIQ_VENDOR_SUSPEND_AFTER", "vendor_suspend_after", 0.0)
        number("TICKETIQ_RESUMES_FIRST_WAIT", "resumes_first_wait", 0.0)
        raw_live = (env.get("TICKETIQ_LIVE_EVENTS") or "").strip().lower()
        if raw_live in ("watched", "always", "off"):
            values["live_events"] = raw_live
        elif raw_live:
            problems.append(f"TICKETIQ_LIVE_EVENTS={raw_live!r} must be watched, always or off")

        url = env.get("TICKETIQ_DATABASE_URL")
        if url:
            values["database_url"] = url
        sessions_url = env.get("TICKETIQ_SESSIONS_DATABASE_URL")
        if sessions_url and sessions_url.strip():
            values["sessions_url"] = sessions_url.strip()

        raw_keys = env.get("TICKETIQ_SEAL_KEYS")
        if raw_keys:
            try:
                values["seal_keys"] = parse_seal_keys(raw_keys)
            except ValueError as exc:
                problems.append(f"TICKETIQ_SEAL_KEYS: {exc}")

        raw_prepared = (env.get("TICKETIQ_PREPARED_STATEMENTS") or "").strip().lower()
        if raw_prepared in _TRUE or raw_prepared in _FALSE:
            values["prepared_statements"] = raw_prepared in _TRUE
        elif raw_prepared:
            problems.append(f"TICKETIQ_PREPARED_STATEMENTS={raw_prepared!r} must be true or "
                            "false")

        raw_entries = env.get("TICKETIQ_CRASH_RESUME_ENTRIES")
        if raw_entries is not None and raw_entries.strip() != "":
            flag = raw_entries.strip().lower()
            if flag in _TRUE:
                values["crash_resume_entries"] = True
            elif flag in _FALSE:
                values["crash_resume_entries"] = False
            else:
                problems.append(
                    f"TICKETIQ_CRASH_RESUME_ENTRIES={raw_entries!r} must be true or false"
                )

        settings = cls(**values)  # type: ignore[arg-type]
        ttl = settings.lease_ttl
        if settings.renew_interval >= ttl / 2:
            problems.append(
                f"TICKETIQ_RENEW_INTERVAL ({settings.renew_interval}) must be less than half "
                f"of TICKETIQ_LEASE_TTL ({ttl})"
            )
        if settings.self_fence_margin >= ttl:
            problems.append("TICKETIQ_SELF_FENCE_MARGIN must be less than TICKETIQ_LEASE_TTL")
        if settings.liveness_interval >= settings.renew_interval:
            problems.append(
                f"TICKETIQ_LIVENESS_INTERVAL ({settings.liveness_interval}) must be less than "
                f"TICKETIQ_RENEW_INTERVAL ({settings.renew_interval}), or 0 to turn liveness off"
            )
        if settings.group_commit == 1:
            problems.append("TICKETIQ_GROUP_COMMIT=1 groups nothing: use 0 (off) or 2 and more")
        if problems:
            raise ConfigError("invalid configuration: " + "; ".join(problems))
        return settings
