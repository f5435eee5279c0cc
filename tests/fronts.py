"""App processes with their HTTP front for tests, and requests that carry an API key."""

from __future__ import annotations

from typing import Any

import httpx
from procs import LiveProc, Stack, spawn_cli_worker

from ticketiq_pg.db.keys import create_api_key_sync

FAST = {
    "TICKETIQ_LEASE_TTL": "2",
    "TICKETIQ_RENEW_INTERVAL": "0.4",
    "TICKETIQ_SELF_FENCE_MARGIN": "0.3",
    "TICKETIQ_SWEEP_INTERVAL": "0.5",
    "TICKETIQ_POLL_INTERVAL": "0.2",
}

#: An API key per test database (every route but /healthz needs a credential).
KEYS: dict[str, str] = {}


def _authed(url: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    base = url.split("/", 3)[2]
    key = KEYS[PORTS[base]]
    return {**kwargs, "headers": {**kwargs.get("headers", {}), "Authorization": f"Bearer {key}"}}


#: host:port of each worker's front -> its database.
PORTS: dict[str, str] = {}


def post(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, **_authed(url, kwargs))


def get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, **_authed(url, kwargs))


def worker(stack: Stack, name: str, faults: str | None = None, **env: str) -> tuple[LiveProc, str]:
    extra = {**FAST, **env}
    if faults:
        extra["TICKETIQ_FAULTS"] = faults
    proc = spawn_cli_worker(stack, name, "--http-port", "0", **extra)
    port = proc.wait_event("http", timeout=30)["port"]
    if stack.db_url not in KEYS:
        KEYS[stack.db_url] = create_api_key_sync(stack.db_url, "svc:tests", run_as=["*"])
    PORTS[f"127.0.0.1:{port}"] = stack.db_url
    return proc, f"http://127.0.0.1:{port}"


