"""The front's settings: bind address, body limit and how each kind of caller is verified.

==================================  ============================================
variable                            meaning
==================================  ============================================
``TICKETIQ_HTTP_HOST``              bind address (default ``127.0.0.1``)
``TICKETIQ_HTTP_PORT``              port (0: any free one; unset: no HTTP)
``TICKETIQ_HTTP_MAX_BODY``          request bodies over this many bytes get 413
                                    (default 1048576)
``TICKETIQ_JWT_SECRET``             HS256 secret of bearer JWTs
``TICKETIQ_JWT_JWKS_URL``           JWKS of bearer JWTs (RS256/ES256)
``TICKETIQ_JWT_ISSUER``             required ``iss`` of bearer JWTs
``TICKETIQ_JWT_AUDIENCE``           required ``aud`` of bearer JWTs
``TICKETIQ_WEBHOOK_SECRETS``        ``source:secret[,source:secret...]``: HMAC
                                    secrets of signed webhook sources
``TICKETIQ_WEBHOOK_REPLAY_WINDOW``  seconds a signature's timestamp may be off
                                    (default 300)
``TICKETIQ_TEAMS_OPENID_URL``       Bot Framework OpenID metadata document
``TICKETIQ_TEAMS_APP_ID``           the bot's app id (the tokens' audience)
``TICKETIQ_TEAMS_TENANT_ID``        the Microsoft Entra tenant whose activities are
                                    taken (required with the OpenID URL)
``TICKETIQ_TEAMS_CHANNEL_ID``       the channel taken (default ``msteams``)
``TICKETIQ_TEAMS_SERVICE_URL``      the service URL activities must come by (a
                                    prefix; default
                                    ``https://smba.trafficmanager.net/``)
``TICKETIQ_HTTP_DOCS``              ``true``: serve ``/openapi.json``, ``/docs``
                                    and ``/redoc`` to a verified caller (default
                                    off)
``TICKETIQ_HTTP_MAX_WAITS``         long polls one identity may hold at once on
                                    one front; past it 429 (default 8)
``TICKETIQ_HTTP_HEADER_TIMEOUT``    seconds a request's headers may take to come in
                                    (from its first byte, or the connection's
                                    opening); past it the connection is cut and
                                    counted as ``slow_client`` (default 10)
``TICKETIQ_HTTP_BODY_TIMEOUT``      seconds a request's body may take to come in
                                    once its headers are in; past it 408 and the
                                    connection cut, ``slow_client`` (default 30)
``TICKETIQ_HTTP_DRAIN_GRACE``       seconds ``/healthz`` answers 503 on SIGTERM
                                    before the listener closes, so an edge's
                                    health check takes the process out first
                                    (default 0; docs/operations.md: 2 behind
                                    HAProxy)
==================================  ============================================

API keys need no setting: they live in the database (``ticketiq-pg api-key``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ticketiq_pg.config import Environment
from ticketiq_pg.errors import ConfigError

BOT_FRAMEWORK_ISSUER = "https://api.botframework.com"
TEAMS_SERVICE_URL = "https://smba.trafficmanager.net/"


def _flag(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {raw!r}")


@dataclass(frozen=True)
class FrontSettings:
    """How the front binds and verifies its callers (docs/front.md)."""

    host: str = "127.0.0.1"
    port: int = 0
    max_body: int = 1 << 20
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    webhook_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    webhook_replay_window: float = 300.0
    teams_openid_url: str | None = None
    teams_app_id: str | None = None
    teams_issuer: str = BOT_FRAMEWORK_ISSUER
    teams_tenant_id: str | None = None
    teams_channel_id: str = "msteams"
    teams_service_url: str = TEAMS_SERVICE_URL
    docs: bool = False
    max_waits: int = 8
    drain_grace: float = 0.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0

    def __post_init__(self) -> None:
        if (self.jwt_secret or self.jwt_jwks_url) and not (self.jwt_issuer and self.jwt_audience):
            raise ConfigError("a JWT secret or JWKS URL needs TICKETIQ_JWT_ISSUER and "
                              "TICKETIQ_JWT_AUDIENCE")
        if self.teams_openid_url and not (self.teams_app_id and self.teams_tenant_id):
            raise ConfigError("TICKETIQ_TEAMS_OPENID_URL needs TICKETIQ_TEAMS_APP_ID and "
                              "TICKETIQ_TEAMS_TENANT_ID")
        if not 0 <= self.drain_grace <= 300:
            raise ConfigError("TICKETIQ_HTTP_DRAIN_GRACE must be 0 to 300 seconds")
        if self.max_body < 1 or not 0 < self.webhook_replay_window <= 86400:
            raise ConfigError("the body limit must be positive and the replay window 0 to "
                              "86400 seconds")
        if self.max_waits < 1:
            raise ConfigError("TICKETIQ_HTTP_MAX_WAITS must be at least 1")
        for name, seconds in (("TICKETIQ_HTTP_HEADER_TIMEOUT", self.header_timeout),
                              ("TICKETIQ_HTTP_BODY_TIMEOUT", self.body_timeout)):
            if not 0 < seconds <= 3600:
                raise ConfigError(f"{name} must be more than 0 and at most 3600 seconds")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object
                 ) -> FrontSettings:
        """Read the ``TICKETIQ_HTTP_*``, ``_JWT_*``, ``_WEBHOOK_*`` and ``_TEAMS_*``
        variables; ``overrides`` (CLI flags) win."""
        env = Environment.current().values if environ is None else environ
        values: dict[str, object] = {}
        kind: Callable[[str], object]
        try:
            for name, attr, kind in (
                ("TICKETIQ_HTTP_HOST", "host", str), ("TICKETIQ_HTTP_PORT", "port", int),
                ("TICKETIQ_HTTP_MAX_BODY", "max_body", int),
                ("TICKETIQ_JWT_SECRET", "jwt_secret", str),
                ("TICKETIQ_JWT_JWKS_URL", "jwt_jwks_url", str),
                ("TICKETIQ_JWT_ISSUER", "jwt_issuer", str),
                ("TICKETIQ_JWT_AUDIENCE", "jwt_audience", str),
                ("TICKETIQ_WEBHOOK_REPLAY_WINDOW", "webhook_replay_window", float),
                ("TICKETIQ_TEAMS_OPENID_URL", "teams_openid_url", str),
                ("TICKETIQ_TEAMS_APP_ID", "teams_app_id", str),
                ("TICKETIQ_TEAMS_TENANT_ID", "teams_tenant_id", str),
                ("TICKETIQ_TEAMS_CHANNEL_ID", "teams_channel_id", str),
                ("TICKETIQ_TEAMS_SERVICE_URL", "teams_service_url", str),
                ("TICKETIQ_HTTP_DOCS", "docs", _flag),
                ("TICKETIQ_HTTP_MAX_WAITS", "max_waits", int),
                ("TICKETIQ_HTTP_DRAIN_GRACE", "drain_grace", float),
                ("TICKETIQ_HTTP_HEADER_TIMEOUT", "header_timeout", float),
                ("TICKETIQ_HTTP_BODY_TIMEOUT", "body_timeout", float),
            ):
                raw = env.get(name, "").strip()
                if raw:
                    values[attr] = kind(raw)
        except ValueError as exc:
            raise ConfigError(f"invalid front configuration: {exc}") from exc
        raw = env.get("TICKETIQ_WEBHOOK_SECRETS", "")
        secrets: dict[str, str] = {}
        for item in filter(None, (part.strip() for part in raw.split(","))):
            source, sep, secret = item.partition(":")
            if not sep or not source or len(secret) < 16:
                raise ConfigError("TICKETIQ_WEBHOOK_SECRETS is source:secret,... with secrets "
                                  "of at least 16 characters")
            secrets[source] = secret
        if secrets:
            values["webhook_secrets"] = secrets
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
