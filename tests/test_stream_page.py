"""The stream example's page (examples/stream/page.html) in Debian's chromium, driven by selenium.

Two of the example's own processes (``uvicorn asgi:api``) behind a real HAProxy, as
docs/operations.md deploys them.  A person types a key and a city into the page and
asks; the run starts on the only process up, the page's stream is connected to it, and
the other process starts.  While the page shows the briefing step's text growing, the
process running the run is SIGKILLed: the page's stream drops, it reconnects through
the edge with the last event id it got, the other process takes the run over, and the
page says the step's text was discarded, shows it written again, and ends with the
answer, equal to the answer sealed in the database.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from test_console import browser  # noqa: F401 - the fixture: Debian's chromium, headless

from harness.edge import Edge
from ticketiq_pg import new_seal_key
from ticketiq_pg.testing import fresh_database, make_api_key, runs, wait_for

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "stream"
FAST = {"TICKETIQ_LEASE_TTL": "2", "TICKETIQ_RENEW_INTERVAL": "0.4",
        "TICKETIQ_SELF_FENCE_MARGIN": "0.3", "TICKETIQ_SWEEP_INTERVAL": "0.5",
        "TICKETIQ_POLL_INTERVAL": "0.2"}
#: The page's view: each step's text as shown, the answer if shown, its connections.
VIEW = """return {steps: [...document.querySelectorAll('.step')].map(
    s => [Number(s.dataset.step), s.querySelector('.text').textContent]),
  answer: document.getElementById('answer').hidden ? null
          : document.getElementById('answer').textContent,
  notes: [...document.querySelectorAll('.note')].map(n => n.textContent),
  counts: document.getElementById('counts').textContent};"""
#: "Connected 2×, 23 durable events, the last 23"
COUNTS = re.compile(r"Connected (\d+)×, (\d+) durable events, the last (\d+|none)")


def counts(view: dict[str, Any]) -> tuple[int, int, int]:
    """Connections, durable events received, the last event id, as the page says them."""
    found = COUNTS.fullmatch(view["counts"])
    assert found, view["counts"]
    return int(found[1]), int(found[2]), int(found[3]) if found[3] != "none" else 0


@pytest.fixture
def edge() -> Iterator[Edge]:
    if not Edge.available():
        pytest.fail("needs Debian's haproxy (bash scripts/ensure_system_deps.sh)")
    found = Edge(slots=2).start()
    try:
        yield found
    finally:
        found.stop()


def serve(db: str, keys: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """``uvicorn asgi:api`` from the example's folder, on ``port``, until /healthz answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
    env.update(FAST, TICKETIQ_DATABASE_URL=db, TICKETIQ_SEAL_KEYS=keys, STREAM_SECONDS="4")
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "asgi:api", "--host",
                                 "127.0.0.1", "--port", str(port)], cwd=EXAMPLE, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out)

    def up() -> bool:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(f"the example on port {port}", up, 30)
    return proc


def test_the_page_shows_a_run_growing_through_the_kill_of_its_process(
        pg_server_url: str, browser: Any, edge: Edge, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    keys = new_seal_key()
    procs: list[subprocess.Popen[bytes]] = []
    with fresh_database(pg_server_url) as db:
        try:
            key = make_api_key(db, "reader")
            first_port, second_port = edge.slots
            procs.append(serve(db, keys, first_port, tmp_path / "first.log"))
            edge.wait_status(first_port, "UP")
            edge.wait_status(second_port, "DOWN")
            # The page holds no key; without one the front refuses the page's requests.
            assert httpx.get(f"{edge.url}/stream").status_code == 200
            assert httpx.post(f"{edge.url}/runs", json={}).status_code == 401

            browser.set_window_size(900, 900)
            browser.get(f"{edge.url}/stream")
            browser.find_element(By.ID, "key").send_keys(key)
            city = browser.find_element(By.ID, "city")
            city.clear()
            city.send_keys("Bergen")
            browser.find_element(By.CSS_SELECTOR, "#ask button").click()
            run_id = wait_for("the page to start a run", lambda: browser.find_element(
                By.ID, "run").get_attribute("value"), 15)
            wait_for("the page's first event", lambda: browser.execute_script(VIEW)["counts"], 15)
            wait_for("the run to start", lambda: runs(db, statuses=["running"]), 30)
            procs.append(serve(db, keys, second_port, tmp_path / "second.log"))
            edge.wait_status(second_port, "UP")

            # Step 2 (the briefing) streams for 4 s: cut it once the page has shown it grow.
            seen: set[str] = set()

            def step_two_growing() -> bool:
                view = browser.execute_script(VIEW)
                seen.update(text for step, text in view["steps"] if step == 2 and text)
                return len(seen) >= 2

            wait_for("step 2's text growing on the page", step_two_growing, 60, 0.05)
            assert browser.execute_script(VIEW)["answer"] is None
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(10)

            def answered() -> dict[str, Any] | None:
                view = browser.execute_script(VIEW)
                if view["answer"] is None:
                    seen.update(text for step, text in view["steps"] if step == 2 and text)
                return view if view["answer"] is not None else None

            view = wait_for("the answer on the page", answered, 90, 0.05)
            if os.environ.get("TICKETIQ_SCREENSHOT_DIR"):
                browser.save_screenshot(str(Path(os.environ["TICKETIQ_SCREENSHOT_DIR"])
                                            / "stream-page.png"))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
        (done,) = runs(db)
        with psycopg.connect(db) as conn:
            (sealed,) = conn.execute("select body->>'text' from ticketiq.answers "
                                     "where run_id = %s", (run_id,)).fetchone() or (None,)
            ids = [i for (i,) in conn.execute("select event_id from ticketiq.run_events "
                                              "where run_id = %s order by event_id", (run_id,))]
    assert (str(done["run_id"]), done["status"], done["loss_count"]) == (run_id, "completed", 1)
    assert view["answer"] == sealed and sealed.startswith("Bergen tomorrow:")
    # The text grew on the page: at least two different partial texts before the answer.
    partial = {text for text in seen if text != sealed and sealed.startswith(text)}
    assert len(partial) >= 2, seen
    assert dict(view["steps"])[2] == sealed
    # The page lost its stream with the process, reconnected after its last event id, and
    # got every durable event of the run once; it said the step's text was void.
    assert counts(view) == (counts(view)[0], len(ids), ids[-1]) and counts(view)[0] >= 2
    assert any("died" in note for note in view["notes"]), view["notes"]
