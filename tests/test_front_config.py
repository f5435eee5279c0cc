"""App-defined entry kinds, the front's settings and the ``ticketiq-pg api-key`` commands."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import psycopg
import pytest

from ticketiq_pg import App, ConfigError, EntryKind, FrontSettings
from ticketiq_pg.agent import AnswerDelivery
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front.app import create_app
from ticketiq_pg.runtime.entries import BUILTIN_KINDS


async def _nothing(*args: object) -> None:
    return None


def an_app() -> App:
    return App(model=None, tools=None)  # type: ignore[arg-type]


def test_an_app_registers_its_kinds_beside_the_built_in_ones() -> None:
    app = an_app()
    assert set(app.kinds) == {k.name for k in BUILTIN_KINDS} == {
        "cron", "webhook", "ticket_event", "copilot", "teams", "a2a", "playground", "run"}
    delivery = AnswerDelivery(send=_nothing, read_back=_nothing)  # type: ignore[arg-type]
    kind = app.entry_kind("billing.refund", may_wait=True, written_ahead=False,
                          delivery=delivery)
    assert app.kinds["billing.refund"] is kind and app.deliveries["billing.refund"] is delivery
    assert (kind.durable(True), EntryKind("x").durable(False)) == (False, False)
    with pytest.raises(ValueError, match="registered already"):
        app.entry_kind("teams")
    for bad in ("Refund", "1run", "", "k" * 65, "a b"):
        with pytest.raises(ValueError, match="entry kind"):
            app.entry_kind(bad)


async def test_post_runs_starts_an_app_kind_and_no_product_kind(db_url: str) -> None:
    app = an_app()
    app.entry_kind("billing.refund", may_wait=False, written_ahead=True)
    db = await TicketIQ.connect(db_url)
    key, _ = await create_api_key(db, "svc")
    front = create_app(db, kinds=app.kinds)
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=front),
                                 base_url="http://app", headers=auth) as http:
        ok = await http.post("/runs", json={"kind": "billing.refund", "input": {"n": 1}},
                             headers={"Idempotency-Key": "r-1"})
        assert ok.status_code == 202, ok.text
        for kind in ("teams", "unknown"):
            refused = await http.post("/runs", json={"kind": kind},
                                      headers={"Idempotency-Key": f"r-{kind}"})
            assert refused.status_code == 422
            assert refused.json()["detail"][0]["loc"] == ["body", "kind"]
    await front.state.waiter.stop()
    await db.close()
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select kind, may_wait, durable, payload from ticketiq.entries"
                            ).fetchall() == [("billing.refund", False, True, {"n": 1})]


def test_front_settings_from_the_environment() -> None:
    got = FrontSettings.from_env({
        "TICKETIQ_HTTP_HOST": "0.0.0.0", "TICKETIQ_HTTP_PORT": "8080",
        "TICKETIQ_HTTP_MAX_BODY": "2048",
        "TICKETIQ_WEBHOOK_SECRETS": f"gh:{'s' * 16},pd:{'t' * 20}",
        "TICKETIQ_JWT_SECRET": "j" * 32, "TICKETIQ_JWT_ISSUER": "i", "TICKETIQ_JWT_AUDIENCE": "a",
    }, port=9090)
    assert (got.host, got.port, got.max_body) == ("0.0.0.0", 9090, 2048)
    assert dict(got.webhook_secrets) == {"gh": "s" * 16, "pd": "t" * 20}
    for bad in ({"TICKETIQ_HTTP_PORT": "http"}, {"TICKETIQ_WEBHOOK_SECRETS": "gh:short"},
                {"TICKETIQ_JWT_SECRET": "j" * 32},  # no issuer nor audience
                {"TICKETIQ_TEAMS_OPENID_URL": "http://x"},  # no app id
                {"TICKETIQ_TEAMS_OPENID_URL": "http://x", "TICKETIQ_TEAMS_APP_ID": "a"},  # tenant
                {"TICKETIQ_HTTP_DOCS": "maybe"}, {"TICKETIQ_HTTP_MAX_WAITS": "0"},
                {"TICKETIQ_HTTP_MAX_BODY": "0"}):
        with pytest.raises(ConfigError):
            FrontSettings.from_env(bad)


def test_the_teams_binding_docs_and_long_poll_settings_from_the_environment() -> None:
    default = FrontSettings.from_env({})
    assert (default.docs, default.max_waits, default.teams_channel_id) == (False, 8, "msteams")
    got = FrontSettings.from_env({
        "TICKETIQ_TEAMS_OPENID_URL": "http://x", "TICKETIQ_TEAMS_APP_ID": "app",
        "TICKETIQ_TEAMS_TENANT_ID": "t-1", "TICKETIQ_TEAMS_CHANNEL_ID": "msteams",
        "TICKETIQ_TEAMS_SERVICE_URL": "https://smba.infra.gcc.teams.microsoft.com/",
        "TICKETIQ_HTTP_DOCS": "true", "TICKETIQ_HTTP_MAX_WAITS": "2"})
    assert (got.teams_tenant_id, got.teams_service_url, got.docs, got.max_waits) == (
        "t-1", "https://smba.infra.gcc.teams.microsoft.com/", True, 2)


def cli(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ticketiq_pg.ops.cli", "api-key", *args,
                           "--database-url", db_url, "--json"],
                          capture_output=True, text=True, timeout=60)


def test_the_api_key_commands(db_url: str) -> None:
    made = cli(db_url, "create", "--identity", "svc:cli", "--run-as", "agent:x",
               "--scope", "admin")
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)
    assert key["key"].startswith(f"tiq_{key['key_id']}_")
    listed = json.loads(cli(db_url, "list").stdout)
    assert [(k["key_id"], k["identity"], k["run_as"], k["scopes"], k["revoked_at"])
            for k in listed] == [(key["key_id"], "svc:cli", ["agent:x"], ["admin"], None)]
    assert "key" not in listed[0]  # the secret is never shown again
    with psycopg.connect(db_url) as conn:
        (stored,) = conn.execute("select key_hash from ticketiq.api_keys").fetchone()
    assert key["key"].split("_", 2)[2].encode() not in bytes(stored)
    assert json.loads(cli(db_url, "revoke", key["key_id"]).stdout)["revoked"] is True
    again = cli(db_url, "revoke", key["key_id"])
    assert again.returncode == 1 and json.loads(again.stdout)["revoked"] is False
    assert json.loads(cli(db_url, "list").stdout)[0]["revoked_at"] is not None


def test_the_drain_grace_comes_from_the_environment() -> None:
    assert FrontSettings.from_env({}).drain_grace == 0
    assert FrontSettings.from_env({"TICKETIQ_HTTP_DRAIN_GRACE": "2"}).drain_grace == 2
    for bad in ("-1", "301", "soon"):
        with pytest.raises(ConfigError):
            FrontSettings.from_env({"TICKETIQ_HTTP_DRAIN_GRACE": bad})
