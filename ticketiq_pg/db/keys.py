"""The functions of the front's API keys: stored by their hash, never by their secret."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Protocol

import psycopg

from ticketiq_pg.db import rows as models
from ticketiq_pg.db.transport import Transport


class KeyFunctions:
    """One method per SQL function of the front's API keys (``TicketIQ.keys``)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def create_api_key(
        self,
        key_id: str,
        key_hash: bytes,
        identity: str,
        run_as: Sequence[str] = (),
        scopes: Sequence[str] = (),
        *,
        conn: psycopg.AsyncConnection | None = None,
    ) -> models.ApiKey:
        """``ticketiq.create_api_key``: Store a front API key by its SHA-256 hash."""
        return await self._t.one(
            models.ApiKey, "create_api_key",
            (key_id, key_hash, identity, list(run_as), list(scopes)), conn,
        )

    async def find_api_key(
        self, key_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> models.ApiKey | None:
        """``ticketiq.find_api_key``: A live key's hash, identity, run-as and scopes."""
        rows = await self._t.many(models.ApiKey, "find_api_key", (key_id,), conn)
        return rows[0] if rows else None

    async def list_api_keys(
        self, *, conn: psycopg.AsyncConnection | None = None
    ) -> list[models.ApiKey]:
        """``ticketiq.list_api_keys``: Every API key, newest first, without its hash."""
        return await self._t.many(models.ApiKey, "list_api_keys", (), conn)

    async def note_api_key_use(
        self, key_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> bool:
        """``ticketiq.note_api_key_use``: Record a live key's use (``last_used_at``, at most
        once a minute); False if unknown, revoked or recorded this minute."""
        return bool(await self._t.scalar("note_api_key_use", (key_id,), conn))

    async def revoke_api_key(
        self, key_id: str, *, conn: psycopg.AsyncConnection | None = None
    ) -> bool:
        """``ticketiq.revoke_api_key``: Revoke a key; False if unknown or revoked already."""
        return bool(await self._t.scalar("revoke_api_key", (key_id,), conn))


#: An API key as handed out: ``tiq_<key id>_<secret>``.
PREFIX = "tiq_"


def key_hash(secret: str) -> bytes:
    """What the database stores of a key's secret."""
    return hashlib.sha256(secret.encode()).digest()


def mint_api_key() -> tuple[str, str, bytes]:
    """A fresh key: (the text to hand out once, its key id, the hash to store)."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return f"{PREFIX}{key_id}_{secret}", key_id, key_hash(secret)


def parse_api_key(text: str) -> tuple[str, str] | None:
    """(key id, secret) of a key's text, or None if it is not shaped like one."""
    if not text.startswith(PREFIX):
        return None
    key_id, sep, secret = text[len(PREFIX):].partition("_")
    if not sep or not key_id.isalnum() or not 8 <= len(key_id) <= 64 or not secret:
        return None
    return key_id, secret


class _Keyed(Protocol):
    """The driver, as far as a key's creation needs it."""

    @property
    def keys(self) -> KeyFunctions: ...


async def create_api_key(db: _Keyed, identity: str, run_as: Sequence[str] = (),
                         scopes: Sequence[str] = ()) -> tuple[str, models.ApiKey]:
    """Make a key for ``identity``: returns its text (shown once, never stored) and row."""
    text, key_id, digest = mint_api_key()
    return text, await db.keys.create_api_key(key_id, digest, identity, run_as, scopes)


def create_api_key_sync(conninfo: str, identity: str, run_as: Sequence[str] = (),
                        scopes: Sequence[str] = ()) -> str:
    """:func:`create_api_key` for scripts and harnesses without an event loop: the key's
    text."""
    text, key_id, digest = mint_api_key()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("select * from ticketiq.create_api_key(%s, %s, %s, %s, %s)",
                     (key_id, digest, identity, list(run_as), list(scopes)))
    return text
