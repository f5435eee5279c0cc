"""The generic runs API over real app processes: one run per idempotency key, on either
process, and the long poll that returns the answer; the front embedded in an app's own
ASGI process.
"""

from __future__ import annotations

import concurrent.futures
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fronts import KEYS, get, post, worker
from procs import KILLED, Stack

from ticketiq_pg.db.keys import create_api_key_sync

pytestmark = pytest.mark.slow

SCRIPT = {"seed": 41, "steps": 3, "plan": "mixed"}
HERE = Path(__file__).resolve().parent


def start(url: str, key: str) -> httpx.Response:
    return post(url + "/runs", timeout=10, json={"input": SCRIPT},
                headers={"Idempotency-Key": key})


def test_post_runs_retried_on_the_other_process_after_sigkill_starts_one_run(
    stack: Stack,
) -> None:
    victim, victim_url = worker(stack, "victim", faults="after_checkpoint@2")
    first = start(victim_url, "order-1")
    assert first.status_code == 202, first.text
    run_id = first.json()["run_id"]
    assert victim.wait(30) == KILLED
    survivor, survivor_url = worker(stack, "survivor")
    again = start(survivor_url, "order-1")
    assert again.status_code == 200 and again.json() == {**first.json(), "created": False,
                                                         "state": again.json()["state"]}
    done = get(f"{survivor_url}/runs/{run_id}?wait=30", timeout=40).json()
    assert done["ended"] and done["status"] == "completed", done
    assert done["answer"]["text"].startswith("answer seed=41")
    assert done["loss_count"] == 1
    assert stack.query("select count(*) from ticketiq.runs") == [(1,)]
    assert stack.query("select count(*) from ticketiq.entries") == [(1,)]
    by_key = get(f"{survivor_url}/runs?key=order-1", timeout=10).json()
    assert by_key["run_id"] == run_id and by_key["status"] == "completed"
    assert stack.duplicates() == {}
    survivor.terminate()


def test_two_processes_racing_on_one_key_start_one_run(stack: Stack) -> None:
    a, a_url = worker(stack, "a")
    b, b_url = worker(stack, "b")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda url: start(url, "race-1"), (a_url, b_url) * 4))
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] * 7 + [202], [r.text for r in answers]
    assert len({r.json()["run_id"] for r in answers}) == 1
    run_id = answers[0].json()["run_id"]
    done = get(f"{a_url}/runs/{run_id}?wait=30", timeout=40).json()
    assert done["status"] == "completed"
    assert stack.query("select count(*) from ticketiq.runs") == [(1,)]
    a.terminate()
    b.terminate()


def test_the_long_poll_returns_the_answer_and_a_stop_is_heard(stack: Stack) -> None:
    only, url = worker(stack, "only")
    run_id = start(url, "poll-1").json()["run_id"]
    polled = get(f"{url}/runs/{run_id}?wait=30", timeout=40).json()
    assert polled["ended"] and polled["answer"]["text"].startswith("answer seed=41")
    assert [line["kind"] for line in polled["transcript"]][-1] == "answer"
    # A wait past the limit is refused, not cut short silently.
    assert get(f"{url}/runs/{run_id}?wait=3600", timeout=10).status_code == 422
    # A run that ended cannot be stopped: 409, and nothing changes.
    assert post(f"{url}/runs/{run_id}/stop", timeout=10).status_code == 409
    only.terminate()


def start_slow_run(url: str, key: str, seed: int) -> str:
    """A run of six 1 s model steps through ``POST /runs``; its id once it runs."""
    slow = {"seed": seed, "steps": 6, "plan": "mixed", "model_delay": 1.0}
    run_id = post(url + "/runs", timeout=10, json={"input": slow},
                  headers={"Idempotency-Key": key}).json()["run_id"]
    deadline = time.monotonic() + 30
    while get(f"{url}/runs/{run_id}", timeout=10).json()["status"] != "running":
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.1)
    return str(run_id)


def test_a_running_run_is_stopped_by_its_caller(stack: Stack) -> None:
    only, url = worker(stack, "only")
    run_id = start_slow_run(url, "stop-1", 43)
    asked = post(f"{url}/runs/{run_id}/stop", timeout=10)
    assert asked.status_code == 200, asked.text
    done = get(f"{url}/runs/{run_id}?wait=30", timeout=40).json()
    assert done["status"] == "stopped" and done["answer"] is None
    only.terminate()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_front_mounted_in_an_apps_own_asgi_process(stack: Stack) -> None:
    port = free_port()
    key = KEYS.setdefault(stack.db_url, create_api_key_sync(stack.db_url, "svc:tests",
                                                            run_as=["*"]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "embedded_front:outer", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=HERE, env=stack.env(**{"PYTHONPATH": f"{HERE}:{HERE.parent}"}),
        stderr=open(stack.workdir / "embedded.log", "ab"))  # noqa: SIM115 - kept for the run
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/agent/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.get(base + "/", timeout=5).json() == {"app": "mine", "worker": "embedded"}
        assert httpx.post(base + "/agent/runs", json={}, timeout=5).status_code == 401
        started = httpx.post(base + "/agent/runs", json={"input": SCRIPT}, timeout=10,
                             headers={**auth, "Idempotency-Key": "embedded-1"})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        done = httpx.get(f"{base}/agent/runs/{run_id}?wait=30", headers=auth, timeout=40).json()
        assert done["status"] == "completed" and done["answer"]["text"].startswith("answer")
        # The lifespan started the worker: it is registered and holds the run's history.
        assert stack.query("select count(*) from ticketiq.processes where process_id = "
                           "'embedded'") == [(1,)]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    # SIGTERM ran the lifespan's shutdown (uvicorn then re-raises the signal it caught):
    # the worker stopped, recorded as stopped rather than lost.
    assert code in (0, -signal.SIGTERM)
    assert stack.query("select stopped_at is not null from ticketiq.processes where "
                       "process_id = 'embedded'") == [(True,)]


def test_an_operator_stops_a_running_run_with_the_cli(
        stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    """``ticketiq-pg stop RUN``: the run's process stops it at its next step boundary."""
    from ticketiq_pg.ops.cli import main

    only, url = worker(stack, "only")
    run_id = start_slow_run(url, "stop-cli", 44)
    args = ["stop", run_id, "--actor", "dana", "--reason", "wrong ticket",
            "--database-url", stack.db_url]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith(f"run {run_id} asked to stop by dana")
    done = get(f"{url}/runs/{run_id}?wait=30", timeout=40).json()
    assert done["status"] == "stopped" and done["answer"] is None
    assert stack.query("select stop_requested_by from ticketiq.runs where run_id = %s",
                       run_id) == [("dana",)]
    # Once it ended: a clear error, exit 1.
    assert main(args) == 1
    assert "ticketiq-pg:" in capsys.readouterr().err
    only.terminate()
