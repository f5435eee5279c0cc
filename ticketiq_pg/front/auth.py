"""Who is calling: API keys, bearer JWTs, signed webhooks and Bot Framework tokens.

Every route but ``/healthz`` needs a verified caller (:class:`Identity`).  A run's
owner is the identity's subject and its run-as one of the names the identity may act
as (its own, or its allowed list; ``*``: any), never a header or the body.  A caller
sees and stops only its own runs, or every run with the ``admin`` scope.

* API keys: ``Authorization: Bearer tiq_<key id>_<secret>``; the database holds
  only sha256(secret), compared here in constant time.
* JWTs: ``Authorization: Bearer <jwt>``, HS256 with ``TICKETIQ_JWT_SECRET`` or a
  key of ``TICKETIQ_JWT_JWKS_URL``; ``iss``, ``aud`` and ``exp`` required.  Claims:
  ``sub``, ``run_as`` (a list), ``scope`` (space separated).
* Webhooks of a source with a secret: ``X-Signature: sha256=<hex>``, the HMAC-SHA256
  of ``<X-Signature-Timestamp>.<X-Delivery-Id>.<raw body>``, the timestamp within the
  replay window (a finite number); the same delivery again is refused (409), writing
  nothing.
* Teams: the Bot Framework's bearer JWT, checked against the keys the configured
  OpenID metadata document's ``jwks_uri`` serves (issuer, audience = the app id), and
  its activity bound to the configured channel, service URL and tenant.

A refusal is counted and logged by its reason (:mod:`.refusals`); an API key's use is
recorded (``last_used_at``, at most once a minute).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import key_hash, parse_api_key
from ticketiq_pg.front.refusals import note_refusal
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.front.signing import sign_webhook

ADMIN = "admin"
#: Seconds between two records of one API key's use (``last_used_at``).
USE_EVERY = 60.0
_DUMMY = hashlib.sha256(b"no such key").digest()


class AuthError(Exception):
    """A request refused: ``status`` 401 (no or bad credential) or 403 (forbidden), and
    the ``reason`` it is counted under (:mod:`.refusals`; once, by :meth:`note`)."""

    def __init__(self, status: int, detail: str, reason: str = "bad_credential") -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.reason = reason
        self.noted = False

    def note(self) -> AuthError:
        if not self.noted:
            self.noted = True
            note_refusal(self.reason, self.detail)
        return self


@dataclass(frozen=True)
class Identity:
    """A verified caller: who it is, whom it may run as, what it may do."""

    subject: str
    run_as: tuple[str, ...] = ()
    scopes: frozenset[str] = field(default_factory=frozenset)
    via: str = "api_key"
    #: A Bot Framework token's ``serviceurl`` claim: the service its activities come by.
    service_url: str | None = None
    #: The API key that proved it (its use is recorded once a request succeeds).
    key_id: str | None = None

    @property
    def admin(self) -> bool:
        return ADMIN in self.scopes

    def may_see(self, owner: str) -> bool:
        return self.admin or owner == self.subject

    def resolve_run_as(self, requested: str | None) -> str:
        """The run-as of a run this caller starts (403 if it may not act as ``requested``)."""
        if not requested or requested == self.subject:
            return self.subject
        if requested in self.run_as or "*" in self.run_as:
            return requested
        raise AuthError(403, f"{self.subject!r} may not run as {requested!r}", "run_as")


def bearer(headers: Mapping[str, str]) -> str:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "a credential is required: Authorization: Bearer <key or JWT>",
                        "no_credential")
    return token.strip()


class Authenticator:
    """Verifies the callers of one front; every refusal is counted (:mod:`.refusals`)."""

    def __init__(self, db: TicketIQ, settings: FrontSettings) -> None:
        self.db = db
        self.settings = settings
        self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url) if settings.jwt_jwks_url else None
        self._teams_jwks: jwt.PyJWKClient | None = None
        self._used: dict[str, float] = {}  # key id -> when its last use was recorded

    async def caller(self, headers: Mapping[str, str]) -> Identity:
        """The identity an API key or bearer JWT proves (AuthError 401 otherwise)."""
        try:
            token = bearer(headers)
            parsed = parse_api_key(token)
            if parsed is not None:
                return await self._api_key(*parsed)
            if token.count(".") == 2 and (self.settings.jwt_secret or self._jwks):
                return await self._jwt(token)
            raise AuthError(401, "the credential is neither a known API key nor a valid JWT")
        except AuthError as exc:
            raise exc.note() from None

    async def _api_key(self, key_id: str, secret: str) -> Identity:
        found = await self.db.keys.find_api_key(key_id)
        stored = found.key_hash if found is not None and found.key_hash else _DUMMY
        if not hmac.compare_digest(bytes(stored), key_hash(secret)) or found is None:
            raise AuthError(401, "unknown or revoked API key", "bad_api_key")
        return Identity(found.identity, tuple(found.run_as), frozenset(found.scopes),
                        key_id=key_id)

    async def note_use(self, who: Identity) -> None:
        """Record that ``who``'s API key served a request (``last_used_at``), after the
        request succeeded: a refused request writes nothing (I15).  At most one write
        per key a minute (the database keeps the same bound), so a busy key costs no
        write per request; ``ticketiq-pg api-key list`` shows it."""
        if who.key_id is None:
            return
        now = time.monotonic()
        if now - self._used.get(who.key_id, -USE_EVERY) < USE_EVERY:
            return
        self._used[who.key_id] = now
        await self.db.keys.note_api_key_use(who.key_id)

    async def _jwt(self, token: str) -> Identity:
        s = self.settings
        try:
            if self._jwks is not None and jwt.get_unverified_header(token).get("alg") != "HS256":
                key: Any = (await asyncio.to_thread(self._jwks.get_signing_key_from_jwt,
                                                    token)).key
                algorithms = ["RS256", "ES256", "PS256"]
            elif s.jwt_secret:
                key, algorithms = s.jwt_secret, ["HS256"]
            else:
                raise AuthError(401, "HS256 tokens are not accepted here", "bad_jwt")
            claims = jwt.decode(token, key, algorithms=algorithms, audience=s.jwt_audience,
                                issuer=s.jwt_issuer,
                                options={"require": ["exp", "iss", "aud", "sub"]})
        except (jwt.PyJWTError, ValueError) as exc:
            raise AuthError(401, f"invalid JWT: {exc}", "bad_jwt") from exc
        run_as = claims.get("run_as") or []
        scope = claims.get("scope") or ""
        if not isinstance(run_as, list) or not isinstance(scope, str):
            raise AuthError(401, "invalid JWT: run_as must be a list and scope a string",
                            "bad_jwt")
        return Identity(str(claims["sub"]), tuple(map(str, run_as)),
                        frozenset(scope.split()), via="jwt")

    # -- webhooks ---------------------------------------------------------

    def signs(self, source: str) -> bool:
        return source in self.settings.webhook_secrets

    def verify_webhook(self, source: str, delivery_id: str, body: bytes,
                       headers: Mapping[str, str]) -> Identity:
        """A signed source's delivery: its HMAC over timestamp, delivery id and body."""
        secret = self.settings.webhook_secrets[source]
        stamp = headers.get("x-signature-timestamp", "")
        given = headers.get("x-signature", "")
        try:
            at = float(stamp)
        except ValueError:
            at = math.nan
        # nan and inf compare false with everything: refused here, not by the window.
        if not math.isfinite(at):
            raise AuthError(401, "header X-Signature-Timestamp is required (unix seconds)",
                            "webhook_timestamp").note()
        if abs(time.time() - at) > self.settings.webhook_replay_window:
            raise AuthError(401, "the signature's timestamp is outside the replay window",
                            "webhook_timestamp").note()
        expected = "sha256=" + sign_webhook(secret, stamp, delivery_id, body)
        if not hmac.compare_digest(expected.encode(), given.encode()):
            raise AuthError(401, "bad webhook signature", "webhook_signature").note()
        return Identity(f"webhook:{source}", via="webhook")

    # -- Teams (Bot Framework) ---------------------------------------------

    @property
    def verifies_teams(self) -> bool:
        return bool(self.settings.teams_openid_url)

    async def verify_teams(self, headers: Mapping[str, str]) -> Identity:
        """The Bot Framework channel, by its bearer JWT (AuthError 401 otherwise); the
        activity is checked against the token by :meth:`check_teams_activity`."""
        s = self.settings
        try:
            token = bearer(headers)
            if self._teams_jwks is None:
                async with httpx.AsyncClient(timeout=5) as http:
                    meta = (await http.get(str(s.teams_openid_url))).raise_for_status().json()
                self._teams_jwks = jwt.PyJWKClient(str(meta["jwks_uri"]))
            signing = await asyncio.to_thread(self._teams_jwks.get_signing_key_from_jwt, token)
            claims = jwt.decode(token, signing.key, algorithms=["RS256"],
                                audience=s.teams_app_id, issuer=s.teams_issuer,
                                options={"require": ["exp", "iss", "aud", "serviceurl"]})
        except AuthError as exc:
            raise exc.note() from None
        except (jwt.PyJWTError, httpx.HTTPError, KeyError, ValueError) as exc:
            raise AuthError(401, f"invalid Bot Framework token: {exc}", "teams_token"
                            ).note() from exc
        # The channel vouches for the activity's sender (it may run as that user), for
        # an activity of the service URL the token names (checked with the body).
        return Identity(str(claims.get("sub") or "botframework"), ("*",), via="botframework",
                        service_url=str(claims["serviceurl"]))

    def check_teams_activity(self, who: Identity, activity: Mapping[str, Any]) -> None:
        """403 unless a Bot Framework caller's activity comes from the configured channel,
        service URL and tenant, by the service URL its token was issued for.  On Direct
        Line or Web Chat the client writes ``from.id``; only the Teams channel vouches
        for it."""
        if who.via != "botframework":
            return
        s = self.settings
        channel = activity.get("channelId")
        service = activity.get("serviceUrl")
        data = activity.get("channelData")
        tenant = (data.get("tenant") or {}).get("id") if isinstance(data, dict) and \
            isinstance(data.get("tenant"), dict) else None
        if channel != s.teams_channel_id:
            problem = f"channelId must be {s.teams_channel_id!r}"
        elif not isinstance(service, str) or not _same_url(service, who.service_url or "") \
                or not _under(service, s.teams_service_url):
            problem = "serviceUrl must be the token's and under the configured service URL"
        elif tenant != s.teams_tenant_id:
            problem = "channelData.tenant.id must be the configured tenant"
        else:
            return
        raise AuthError(403, f"this Bot Framework activity is refused: {problem}",
                        "teams_binding").note()


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()


def _under(url: str, base: str) -> bool:
    """Whether ``url`` is ``base`` or below it (same scheme and host, path prefix)."""
    u, b = urlsplit(url), urlsplit(base)
    path = b.path if b.path.endswith("/") else b.path + "/"
    return (u.scheme.lower(), u.netloc.lower()) == (b.scheme.lower(), b.netloc.lower()) \
        and (u.path if u.path.endswith("/") else u.path + "/").startswith(path)
