"""Workflows that live through deploys (issue 42, item 4): a rolling deploy in real processes.

An old worker (``DEPLOY_CODE=1``) runs four runs of ``onboard`` version 1: two wait for
the signal ``ack``, two sleep through the deploy.  A new worker (``DEPLOY_CODE=2``, whose
version renamed the step the old runs go on to) comes up beside it, behind its own front.
The signals sent through the new worker's front wake their runs, which only the old worker
adopts; a signal of a name the workflow does not declare is refused (422, nothing stored).
The old worker is drained (SIGTERM) and the sleepers' timers come due: woken, they wait
claimed, never adopted by the new worker, never failed, while runs of version 2 come and
go on it; ``ticketiq-pg status`` lists them, and a new worker started now logs them.  An
old-code worker comes back (a rollback, or one kept to drain them) and finishes them.
Judged from the database and from the vendor's own record: every run completed, on the
code of its own version; 0 failed, 0 lost, 0 written twice where it landed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fronts import FAST, KEYS, PORTS, post
from procs import LiveProc, Stack, spawn_cli_worker

from ticketiq_pg.db.keys import create_api_key_sync
from ticketiq_pg.ops.views import status_text
from ticketiq_pg.testing import wait_for

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent


def deploy_worker(stack: Stack, name: str, code: str, **env: str) -> tuple[LiveProc, str]:
    """A worker of release ``code`` (tests/deploy_app.py) with its front; its URL."""
    proc = spawn_cli_worker(stack, name, "--http-port", "0", "--app-dir", str(TESTS),
                            app="deploy_app:app", DEPLOY_CODE=code, **{**FAST, **env})
    port = proc.wait_event("http", timeout=30)["port"]
    if stack.db_url not in KEYS:
        KEYS[stack.db_url] = create_api_key_sync(stack.db_url, "svc:tests", run_as=["*"])
    PORTS[f"127.0.0.1:{port}"] = stack.db_url
    return proc, f"http://127.0.0.1:{port}"


def start(url: str, key: str, spec: dict[str, Any]) -> str:
    answer = post(f"{url}/runs", json={"kind": "onboard", "input": spec},
                  headers={"Idempotency-Key": key})
    assert answer.status_code == 202, answer.text
    return str(answer.json()["run_id"])


def statuses(stack: Stack, run_ids: list[str]) -> dict[str, tuple[str, str | None]]:
    rows = stack.query("select run_id::text, status, wait_key from ticketiq.runs "
                       "where run_id = any(%s::uuid[])", run_ids)
    return {run_id: (state, wait_key) for run_id, state, wait_key in rows}


def all_in(stack: Stack, run_ids: list[str], state: str) -> bool:
    found = statuses(stack, run_ids)
    return len(found) == len(run_ids) and all(s == state for s, _ in found.values())


def adopted_by(stack: Stack, run_ids: list[str]) -> set[str]:
    return {actor for (actor,) in stack.query(
        "select actor from ticketiq.audit where event = 'agent.run.adopted' "
        "and run_id = any(%s::uuid[])", run_ids)}


def test_a_rolling_deploy_leaves_each_run_to_a_worker_that_can_run_it(stack: Stack) -> None:
    old, old_url = deploy_worker(stack, "old", "1")
    signalled = [start(old_url, f"sig-{i}", {"seed": i, "signal": True}) for i in range(2)]
    asleep = [start(old_url, f"nap-{i}", {"seed": 10 + i, "sleep": 3600}) for i in range(2)]
    wait_for("the old runs to wait", lambda: all_in(stack, asleep, "suspended") and all(
        (state, (key or "")[:7]) == ("suspended", "signal:")
        for state, key in statuses(stack, signalled).values()), 60)

    new, new_url = deploy_worker(stack, "new", "2")
    # a name the workflow does not wait for: refused, nothing stored
    before = stack.query("select count(*) from ticketiq.workflow_signals")
    bogus = post(f"{new_url}/runs/{signalled[0]}/signals/nudge", json={"payload": 1},
                 headers={"Idempotency-Key": "nudge-1"})
    assert bogus.status_code == 422, bogus.text
    assert "waits for no signal nudge" in bogus.json()["detail"]
    assert "ack" in bogus.json()["detail"]
    assert stack.query("select count(*) from ticketiq.workflow_signals") == before
    # the signals go through the new worker's front; only the old worker runs their runs
    for i, run_id in enumerate(signalled):
        sent = post(f"{new_url}/runs/{run_id}/signals/ack", json={"payload": {"n": i}},
                    headers={"Idempotency-Key": f"ack-{i}"})
        assert sent.status_code == 202, sent.text
    wait_for("the signalled runs to end", lambda: all_in(stack, signalled, "completed"), 60)
    assert adopted_by(stack, signalled) == {"old"}, old.stderr_text()

    assert old.terminate() == 0, old.stderr_text()  # drained
    # the sleepers' timers come due now (no waiting for an hour): woken on the new worker
    stack.query("update ticketiq.workflow_timers set due_at = now() - interval '1 second' "
                "where run_id = any(%s::uuid[]) and state = 'set'", asleep)
    wait_for("the sleepers to be woken", lambda: all_in(stack, asleep, "claimed"), 60)
    # runs of version 2 come and go on the new worker, through the same adoption (each
    # sleeps, is woken and adopted), past the sleepers it leaves claimed
    fresh = [start(new_url, f"v2-{i}", {"seed": 20 + i}) for i in range(2)]
    wait_for("the new runs to end", lambda: all_in(stack, fresh, "completed"), 60)
    assert adopted_by(stack, fresh) == {"new"}
    assert all_in(stack, asleep, "claimed"), statuses(stack, asleep)  # waiting, never failed
    assert adopted_by(stack, asleep) == set(), new.stderr_text()

    report = json.loads(status_text(stack.db_url, as_json=True))
    waiting = report["workflow_runs_unrunnable"]
    assert waiting["count"] == 2
    assert {(r["run_id"], r["workflow"], r["workflow_version"], r["status"])
            for r in waiting["rows"]} == {(r, "onboard", "1", "claimed") for r in asleep}
    assert "workflow runs no live worker can run: 2" in status_text(stack.db_url)
    # a worker that starts now says so
    late, _ = deploy_worker(stack, "late", "2")
    assert "2 waiting run(s) of workflow onboard version 1: no live worker can run them" \
        in late.stderr_text()

    back, _ = deploy_worker(stack, "back", "1")  # the old code comes back and finishes them
    wait_for("the sleepers to end", lambda: all_in(stack, asleep, "completed"), 60)
    assert adopted_by(stack, asleep) == {"back"}

    runs = signalled + asleep + fresh
    rows = stack.query(
        "select r.run_id::text, r.status, r.loss_count, a.body -> 'output' from ticketiq.runs "
        "as r join ticketiq.answers as a using (run_id) where r.run_id = any(%s::uuid[])", runs)
    assert len(rows) == len(runs)
    for run_id, state, losses, output in rows:
        version = "2" if run_id in fresh else "1"
        assert (state, losses) == ("completed", 0), run_id
        assert (output["version"], output["code"]) == (version, version), (run_id, output)
    for run_id, (i, _) in zip(signalled, enumerate(signalled), strict=True):
        output = next(o for r, _, _, o in rows if r == run_id)
        assert output["signal"] == {"payload": {"n": i}, "timed_out": False}
    assert stack.query("select count(*) from ticketiq.runs where status = 'failed'") == [(0,)]
    assert stack.query("select count(*) from ticketiq.audit where event like %s",
                       "agent.run.workflow%") == [(0,)]
    # each run wrote its incident and its comment once, where they landed
    assert stack.duplicates() == {}
    landed = [w for w in stack.writes() if w["effect"] == "created"]
    per_run = {r: sum(1 for w in landed if w["run_id"] == r) for r in runs}
    assert per_run == {r: 2 for r in runs}
    for proc in (new, late, back):
        assert proc.terminate() == 0, proc.stderr_text()


def test_past_the_operators_limit_a_run_no_worker_can_run_fails_with_its_reason(
        stack: Stack) -> None:
    """``TICKETIQ_WORKFLOW_WAIT_LIMIT``: a woken run of a version no live worker runs waits
    that long, then the sweep leader fails it, naming the version; a sleeping one waits."""
    old, old_url = deploy_worker(stack, "old", "1")
    woken, asleep = (start(old_url, f"nap-{i}", {"seed": i, "sleep": 3600}) for i in range(2))
    wait_for("the runs to sleep", lambda: all_in(stack, [woken, asleep], "suspended"), 60)
    assert old.terminate() == 0, old.stderr_text()
    new, _ = deploy_worker(stack, "new", "2", TICKETIQ_WORKFLOW_WAIT_LIMIT="0.5")
    stack.query("update ticketiq.workflow_timers set due_at = now() - interval '1 second' "
                "where run_id = %s and state = 'set'", woken)
    wait_for("the woken run to fail", lambda: all_in(stack, [woken], "failed"), 60)
    ((reason,),) = stack.query("select failure_reason from ticketiq.runs where run_id = %s",
                               woken)
    assert reason.startswith("no live worker can run workflow onboard version 1: waited "
                             "more than 0.5 s"), reason
    ((actor,),) = stack.query(
        "select actor from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.workflow_version_unavailable'", woken)
    assert actor == "new"
    assert statuses(stack, [asleep])[asleep][0] == "suspended"
    assert f"failed run {woken}: no live worker can run" in new.stderr_text()
    assert new.terminate() == 0, new.stderr_text()


def test_a_worker_without_liveness_is_seen_while_idle(stack: Stack) -> None:
    """With ``TICKETIQ_LIVENESS_INTERVAL=0`` a SIGKILLed worker is never marked stopped;
    ``unrunnable_runs`` counts it live only while it was seen within 30 s, so an idle
    one must still be seen: its lease keeper renews nothing, every renew interval."""
    idle, _ = deploy_worker(stack, "idle", "1", TICKETIQ_LIVENESS_INTERVAL="0")

    def seen() -> Any:
        return stack.query("select last_seen_at from ticketiq.processes "
                           "where process_id = 'idle'")[0][0]

    first = seen()
    wait_for("an idle heartbeat", lambda: seen() > first, 30)
    assert stack.query("select stopped_at, liveness_key from ticketiq.processes "
                       "where process_id = 'idle'") == [(None, None)]
    assert idle.terminate() == 0, idle.stderr_text()
