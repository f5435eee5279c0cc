"""Metrics (ticketiq_pg/observe/metrics.py): ``/metrics`` on the front and on a port of its own.

Over HTTP: a scrape of the front needs a bearer credential with the ``metrics`` (or
``admin``) scope.  Under Debian's ``prometheus`` server: two workers of the triage
example are scraped (the victim through its front with a bearer credential, the
survivor on its own metrics port) during a kill round; once the survivor has finished
every run, Prometheus's HTTP API answers the counters, and they match the database:
runs resumed, losses, calls settled by each rule.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from test_example_app import EXAMPLE, Example

from ticketiq_pg import new_seal_key
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.keys import create_api_key
from ticketiq_pg.front.app import create_app
from ticketiq_pg.testing import WorkerProcess, fresh_database, make_api_key, runs, wait_for

PROMETHEUS = "/usr/bin/prometheus"


@pytest.fixture
async def front(db_url: str) -> AsyncIterator[dict[str, Any]]:
    db = await TicketIQ.connect(db_url)
    keys = {name: (await create_api_key(db, name, scopes=scopes))[0] for name, scopes in (
        ("alice", []), ("prometheus", ["metrics"]), ("ops", ["admin"]))}
    app = create_app(db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://app") as http:
        yield {"http": http, **keys}
    await app.state.waiter.stop()
    await db.close()


async def test_a_scrape_of_the_front_needs_the_metrics_scope(front: dict[str, Any]) -> None:
    http = front["http"]
    assert (await http.get("/metrics")).status_code == 401
    refused = await http.get("/metrics", headers={"Authorization": f"Bearer {front['alice']}"})
    assert refused.status_code == 403
    for who in ("prometheus", "ops"):
        got = await http.get("/metrics", headers={"Authorization": f"Bearer {front[who]}"})
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")
        assert "ticketiq_database_up 1.0" in got.text
        assert "ticketiq_database_approvals_waiting 0.0" in got.text


# -- under Debian's prometheus, across a SIGKILL --------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics_port(worker: WorkerProcess) -> int:
    """The port the worker printed for its own /metrics."""
    out = (worker.log_dir / f"{worker.name}.out").read_text()
    found = [json.loads(line) for line in out.splitlines() if '"metrics"' in line]
    return int(found[-1]["port"])


def query(prometheus: str, expr: str) -> dict[str, float]:
    """An instant query's answer: each series' labels (joined) to its value."""
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}).json()
    assert answer["status"] == "success", answer
    return {",".join(f"{k}={v}" for k, v in sorted(r["metric"].items())): float(r["value"][1])
            for r in answer["data"]["result"]}


def kill_round(victim: WorkerProcess, client: str, tickets: list[str], db: str,
               traceparents: dict[str, str] | None = None) -> None:
    """A ticket event per ticket to the victim (with its ``traceparents`` header, if
    any); SIGKILL it while it is mid-run in two runs; return once every run has
    completed (on the other worker)."""
    for ticket in tickets:
        headers = {"Authorization": f"Bearer {client}"}
        if ticket in (traceparents or {}):
            headers["traceparent"] = (traceparents or {})[ticket]
        httpx.post(f"{victim.url}/ticket-events", json={
            "event_id": f"created:{ticket}", "ticket_id": ticket, "type": "ticket.created"},
            headers=headers).raise_for_status()
    wait_for("the victim to be mid-run in two runs", lambda: len([
        r for r in victim.held_runs() if r["last_step"] >= 1]) >= 2, 30)
    assert victim.kill() < 0
    wait_for("every run to end", lambda: len(
        runs(db, statuses=["completed"])) == len(tickets), 60)


def from_database(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return conn.execute(sql).fetchall()

        settlements = rows(
            "select s.value ->> 'settlement', count(*) from ticketiq.audit as a cross join "
            "lateral jsonb_array_elements(a.detail -> 'settlements') as s where a.event in "
            "('agent.run.crash_resumed', 'agent.run.resumed') group by 1")
        return {
            "resumed": rows("select count(*) from ticketiq.audit where event in "
                            "('agent.run.crash_resumed', 'agent.run.resumed')")[0][0],
            "losses": rows("select count(*) from ticketiq.audit "
                           "where event = 'agent.run.lease_lapsed'")[0][0],
            "loss_count": rows("select coalesce(sum(loss_count), 0) from ticketiq.runs")[0][0],
            "settled": {f"settlement={s}": float(n) for s, n in settlements},
        }


@pytest.mark.slow
def test_prometheus_scrapes_two_workers_through_a_kill_and_its_counters_match_the_database(
        pg_server_url: str, tmp_path: Path) -> None:
    if not Path(PROMETHEUS).exists():
        pytest.skip("needs Debian's prometheus: apt-get install -y prometheus "
                    "(scripts/ensure_system_deps.sh installs it)")
    service = Example("", tmp_path)
    service.start_service()
    keys = new_seal_key()
    tickets = [f"T-{i}" for i in range(1, 7)]
    for ticket in tickets:
        httpx.post(f"{service.service_url}/tickets", json={
            "id": ticket, "title": "Export fails", "body": "An error."}).raise_for_status()
    prometheus = survivor = None
    try:
        with fresh_database(pg_server_url) as db:
            client = make_api_key(db, "triage-client")
            scraper = make_api_key(db, "prometheus", scopes=["metrics"])

            def worker(name: str, **env: str) -> WorkerProcess:
                return WorkerProcess(
                    "app:app", db, seal_keys=keys, name=name, app_dir=EXAMPLE, http=True,
                    log_dir=tmp_path, env={"TRIAGE_SERVICE_URL": service.service_url,
                                           "TRIAGE_THINK_SECONDS": "1",
                                           "TICKETIQ_METRICS_PORT": "0", **env})

            with worker("victim") as victim:
                assert victim.url is not None
                # A recovery-only survivor: it leaves fresh entries to the victim.
                survivor = worker("survivor", TICKETIQ_ENTRY_CLAIM_DELAY="60").start()
                web = f"127.0.0.1:{free_port()}"
                config = tmp_path / "prometheus.yml"
                config.write_text(json.dumps({  # YAML is a superset of JSON
                    "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                    "scrape_configs": [
                        {"job_name": "front", "authorization": {"credentials": scraper},
                         "static_configs": [{"targets": [victim.url.split("//", 1)[1]]}]},
                        {"job_name": "port", "static_configs": [
                            {"targets": [f"127.0.0.1:{metrics_port(survivor)}"]}]}]}))
                prometheus = subprocess.Popen(
                    [PROMETHEUS, f"--config.file={config}", f"--web.listen-address={web}",
                     f"--storage.tsdb.path={tmp_path / 'tsdb'}"],
                    stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"))
                api = f"http://{web}"

                def ready() -> bool:
                    try:
                        return httpx.get(f"{api}/-/ready").status_code == 200
                    except httpx.TransportError:
                        return False
                wait_for("prometheus to be ready", ready, 60, interval=0.5)
                wait_for("both targets up", lambda: query(api, "up") == {
                    f"__name__=up,instance={victim.url.split('//', 1)[1]},job=front": 1.0,
                    f"__name__=up,instance=127.0.0.1:{metrics_port(survivor)},job=port": 1.0},
                    60, interval=0.5)

                kill_round(victim, client, tickets, db)

                expected = from_database(db)
                assert expected["resumed"] >= 1 and expected["losses"] >= 1
                assert expected["losses"] == expected["loss_count"]

                def scraped() -> dict[str, Any]:
                    return {
                        "resumed": sum(query(api, "ticketiq_runs_adopted_total").values()),
                        "losses": sum(query(api, "ticketiq_losses_claimed_total").values()),
                        "settled": {k: v for k, v in query(
                            api, "sum by (settlement) (ticketiq_calls_settled_total)").items()
                            if v},
                        "database": {
                            "resumed": sum(query(api, "max by (event, detected_by) "
                                                 "(ticketiq_database_resumes_total)").values()),
                            "losses": sum(query(api, "max by (detected_by) "
                                                "(ticketiq_database_losses_total)").values()),
                            # known settlements are exported from 0: the ones that happened
                            "settled": {k: v for k, v in query(
                                api, "max by (settlement) "
                                "(ticketiq_database_settlements_total)").items() if v}}}

                want = {"resumed": expected["resumed"], "losses": expected["losses"],
                        "settled": expected["settled"],
                        "database": {"resumed": expected["resumed"],
                                     "losses": expected["losses"],
                                     "settled": expected["settled"]}}
                try:
                    wait_for("Prometheus's counters to match the database",
                             lambda: scraped() == want, 30, interval=0.5)
                except TimeoutError:
                    assert scraped() == want  # shows the difference
                resume = query(api, "ticketiq_database_resume_seconds_count")
                assert sum(resume.values()) >= 1
                assert query(api, 'ticketiq_liveness_state{job="port",state="ok"}')
                # the takeover's order, visible: no resume left pending once all are back
                assert set(query(api, 'ticketiq_resumes_pending{job="port"}').values()) == {0}
                assert query(api, 'ticketiq_liveness_calls_held_total{job="port"}')
    finally:
        if survivor is not None:
            survivor.kill()
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(10)
        service.close()
        shutil.rmtree(tmp_path / "tsdb", ignore_errors=True)


def test_every_figure_is_documented_and_the_dashboard_asks_only_for_them(db_url: str) -> None:
    """docs/observability.md names each family a worker's scrape has; the dashboard's
    queries name only those."""
    import re
    from collections import Counter
    from types import SimpleNamespace

    from prometheus_client import generate_latest

    from ticketiq_pg.observe import metrics

    # The figures a worker's registry reads off a worker: those it has before it starts.
    worker = SimpleNamespace(ended=Counter(completed=1), leases=None, is_leader=False,
                             liveness=None, db=None, process_id="p",
                             settings=SimpleNamespace(database_url=db_url))
    metrics.RUNS_STARTED.labels("run")  # a labelled family shows once it has a child
    text = generate_latest(metrics.registry_for(worker)).decode()
    families = set(re.findall(r"^# TYPE (\w+) (\w+)", text, re.M))
    exposed = {name + ("_total" if kind == "counter" and not name.endswith("_total") else "")
               for name, kind in families if not name.endswith("_created")}
    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "observability.md").read_text()
    documented = set(re.findall(r"`(ticketiq_\w+)`", doc))
    assert sorted(exposed - documented) == []
    dashboard = json.loads((root / "docs" / "grafana-dashboard.json").read_text())
    asked = {re.sub(r"_(bucket|sum|count)$", "", name)
             for panel in dashboard["panels"] for target in panel["targets"]
             for name in re.findall(r"\b(ticketiq_\w+)", target["expr"])}
    assert sorted(asked - documented) == []
    assert "ticketiq_database_runs_lost_twice" in asked


def test_known_series_start_at_zero_and_entry_runs_count_as_started(db_url: str) -> None:
    """An alert on the first unknown settlement fires (the series exists at 0 before it,
    so increase() sees it: issue 46, finding 15), and runs started from entries count
    in ticketiq_runs_started_total as runs started by start_run do (finding 14)."""
    from types import SimpleNamespace

    from prometheus_client import generate_latest

    from ticketiq_pg.observe import metrics

    worker = SimpleNamespace(ended={}, leases=None, is_leader=False, liveness=None, db=None,
                             process_id="p", settings=SimpleNamespace(database_url=db_url))
    text = generate_latest(metrics.registry_for(worker)).decode()
    for series in ('ticketiq_calls_settled_total{settlement="unknown"}',
                   'ticketiq_lease_renewals_total{result="failed"}',
                   'ticketiq_losses_claimed_total{detected_by="session_ended"}',
                   'ticketiq_database_settlements_total{settlement="unknown"} 0.0',
                   'ticketiq_database_losses_total{detected_by="session_ended"} 0.0'):
        assert series in text, series

    before = metrics.RUNS_STARTED.labels("teams")._value.get()
    metrics.on_statement("claim_entries", ("p1", 8, 10, 0), 0.001,
                         [{"kind": "teams", "run_id": "r1"}, {"kind": "teams", "run_id": "r2"}],
                         None)
    assert metrics.RUNS_STARTED.labels("teams")._value.get() == before + 2
    renewed = metrics.RENEWALS.labels("renewed")._value.get()
    metrics.on_statement("renew_leases", ("p1", ["j"], [1], 8, "job"), 0.001,
                         [{"held": True}], None)
    assert metrics.RENEWALS.labels("renewed")._value.get() == renewed  # a job's: not a run's


def test_a_grouped_settlement_statement_counts_what_it_recorded() -> None:
    """``record_resumes`` carries several resumes' settlements: the counter takes those of
    the items it recorded, not the items it left out (they go alone and count then)."""
    import uuid

    from psycopg.types.json import Jsonb

    from ticketiq_pg.observe import metrics

    def value(settlement: str) -> float:
        return metrics.SETTLED.labels(settlement)._value.get()  # type: ignore[attr-defined]

    before = value("redone"), value("unknown")
    left_out, recorded = uuid.uuid4(), uuid.uuid4()
    metrics.on_statement(
        "record_resumes",
        ([left_out, recorded], [3, 3], Jsonb([[{"call_id": "a", "settlement": "redone"}],
                                              [{"call_id": "b", "settlement": "unknown"}]])),
        0.001, [{"item": 2, "run_id": recorded}], None)
    assert (value("redone"), value("unknown")) == (before[0], before[1] + 1)
    metrics.on_statement("record_resume", (left_out, 3, Jsonb([
        {"call_id": "a", "settlement": "redone"}])), 0.001, [{"run_id": left_out}], None)
    assert (value("redone"), value("unknown")) == (before[0] + 1, before[1] + 1)
