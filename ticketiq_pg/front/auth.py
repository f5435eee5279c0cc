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
  replay window; the same delivery again is refused (409), writing nothing.
* Teams: the Bot Framework's bearer JWT, checked against the keys the configured
  OpenID metadata document's ``jwks_uri`` serves (issuer, audience = the app id).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import key_hash, parse_api_key
from ticketiq_pg.front.settings import FrontSettings
from ticketiq_pg.front.signing import sign_webhook

ADMIN = "admin"
_DUMMY = hashlib.sha256(b"no such key").digest()


class AuthError(Exception):
    """A request refused: ``status`` 401 (no or bad credential) or 403 (forbidden)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Identity:
    """A verified caller: who it is, whom it may run as, what it may do."""

    subject: str
    run_as: tuple[str, ...] = ()
    scopes: frozenset[str] = field(default_factory=frozenset)
    via: str = "api_key"

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
        raise AuthError(403, f"{self.subject!r} may not run as {requested!r}")


def bearer(headers: Mapping[str, str]) -> str:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "a credential is required: Authorization: Bearer <key or JWT>")
    return token.strip()


class Authenticator:
    """Verifies the callers of one front."""

    def __init__(self, db: TicketIQ, settings: FrontSettings) -> None:
        self.db = db
        self.settings = settings
        self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url) if settings.jwt_jwks_url else None
        self._teams_jwks: jwt.PyJWKClient | None = None

    async def caller(self, headers: Mapping[str, str]) -> Identity:
        """The identity an API key or bearer JWT proves (AuthError 401 otherwise)."""
        token = bearer(headers)
        parsed = parse_api_key(token)
        if parsed is not None:
            return await self._api_key(*parsed)
        if token.count(".") == 2 and (self.settings.jwt_secret or self._jwks):
            return await self._jwt(token)
        raise AuthError(401, "the credential is neither a known API key nor a valid JWT")

    async def _api_key(self, key_id: str, secret: str) -> Identity:
        found = await self.db.find_api_key(key_id)
        stored = found.key_hash if found is not None and found.key_hash else _DUMMY
        if not hmac.compare_digest(bytes(stored), key_hash(secret)) or found is None:
            raise AuthError(401, "unknown or revoked API key")
        return Identity(found.identity, tuple(found.run_as), frozenset(found.scopes))

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
                raise AuthError(401, "HS256 tokens are not accepted here")
            claims = jwt.decode(token, key, algorithms=algorithms, audience=s.jwt_audience,
                                issuer=s.jwt_issuer,
                                options={"require": ["exp", "iss", "aud", "sub"]})
        except (jwt.PyJWTError, ValueError) as exc:
            raise AuthError(401, f"invalid JWT: {exc}") from exc
        run_as = claims.get("run_as") or []
        scope = claims.get("scope") or ""
        if not isinstance(run_as, list) or not isinstance(scope, str):
            raise AuthError(401, "invalid JWT: run_as must be a list and scope a string")
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
            raise AuthError(401, "header X-Signature-Timestamp is required (unix seconds)"
                            ) from None
        if abs(time.time() - at) > self.settings.webhook_replay_window:
            raise AuthError(401, "the signature's timestamp is outside the replay window")
        expected = "sha256=" + sign_webhook(secret, stamp, delivery_id, body)
        if not hmac.compare_digest(expected.encode(), given.encode()):
            raise AuthError(401, "bad webhook signature")
        return Identity(f"webhook:{source}", via="webhook")

    # -- Teams (Bot Framework) ---------------------------------------------

    @property
    def verifies_teams(self) -> bool:
        return bool(self.settings.teams_openid_url)

    async def verify_teams(self, headers: Mapping[str, str]) -> Identity:
        """The Bot Framework channel, by its bearer JWT (AuthError 401 otherwise)."""
        s = self.settings
        token = bearer(headers)
        try:
            if self._teams_jwks is None:
                async with httpx.AsyncClient(timeout=5) as http:
                    meta = (await http.get(str(s.teams_openid_url))).raise_for_status().json()
                self._teams_jwks = jwt.PyJWKClient(str(meta["jwks_uri"]))
            signing = await asyncio.to_thread(self._teams_jwks.get_signing_key_from_jwt, token)
            claims = jwt.decode(token, signing.key, algorithms=["RS256"],
                                audience=s.teams_app_id, issuer=s.teams_issuer,
                                options={"require": ["exp", "iss", "aud"]})
        except (jwt.PyJWTError, httpx.HTTPError, KeyError, ValueError) as exc:
            raise AuthError(401, f"invalid Bot Framework token: {exc}") from exc
        # The channel vouches for the activity's sender: it may run as that user.
        return Identity(str(claims.get("sub") or "botframework"), ("*",), via="botframework")



def auth_first(verify: Any) -> type:
    """A route class that verifies the caller before FastAPI reads or parses the body,
    so a caller without a credential learns nothing about the body it sent (401 first).
    ``verify(route_path, request)`` returns the identity (None: a public route)."""
    from fastapi.routing import APIRoute

    class AuthFirst(APIRoute):
        def get_route_handler(self) -> Any:
            inner = super().get_route_handler()
            path = self.path

            async def handler(request: Any) -> Any:
                identity = await verify(path, request)
                if identity is not None:
                    request.state.identity = identity
                return await inner(request)

            return handler

    return AuthFirst
