"""A session of a process's own, outside the pool, for work that must not wait in the
pool's queue behind the runs' statements: lease renewal and adoption.  Autocommit,
with keepalives; opened on first use, and opened again after :meth:`OwnSession.drop`.
"""

from __future__ import annotations

import psycopg

from ticketiq_pg.db.listener import KEEPALIVE_KWARGS


class OwnSession:
    def __init__(self, conninfo: str, *, name: str | None = None,
                 connect_timeout: float = 1.0, prepared: bool = True) -> None:
        self.conninfo = conninfo
        #: False: never prepare a statement (behind a transaction-mode pooler).
        self.prepared = prepared
        self.name = name
        self.connect_timeout = max(1, int(connect_timeout))
        self._conn: psycopg.AsyncConnection | None = None

    async def get(self) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            extra = {"application_name": self.name[:63]} if self.name else {}
            self._conn = await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, connect_timeout=self.connect_timeout,
                **extra, **KEEPALIVE_KWARGS,
                **({} if self.prepared else {"prepare_threshold": None}),
            )
        return self._conn

    @property
    def broken(self) -> bool:
        return self._conn is not None and (self._conn.closed or self._conn.broken)

    async def drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - it is broken anyway
                pass
