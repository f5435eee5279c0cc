"""An event stream outlives a quiet spell longer than its keepalive (issue 41).

The front sends a ``: keepalive`` comment after 15 s without an event, so an edge
(HAProxy's ``timeout server``/``client``, harness/edge.py) keeps an idle stream open.
The wait for the next event goes on across the keepalive: it used to be cancelled by
it, which ended the run's subscription, so every stream of a run quiet for 15 s ended
there and its client had to connect again.
"""

from __future__ import annotations

import time

import httpx
import pytest
from fronts import KEYS, post, worker
from procs import Stack

from harness.sse import parse

pytestmark = pytest.mark.slow

#: The front's keepalive (runs_api.runs_router's default), and a model step quiet past
#: it: the scripted model thinks half its delay, then streams its answer's three words
#: over the other half, so its first word comes after 2/3 of it (16.7 s), and the whole
#: step stays within the model's 30 s bound a try.
KEEPALIVE = 15.0
QUIET = 25.0


def test_a_stream_quiet_past_its_keepalive_stays_open(stack: Stack) -> None:
    only, url = worker(stack, "only")
    headers = {"Authorization": f"Bearer {KEYS[stack.db_url]}"}
    body = {"input": {"seed": 3, "steps": 1, "plan": "reads", "model_delay": QUIET}}
    answer = post(url + "/runs", timeout=10, json=body, headers={"Idempotency-Key": "quiet"})
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    comments, kinds = [], []
    began = time.monotonic()
    with httpx.stream("GET", f"{url}/runs/{run_id}/events", headers=headers,
                      timeout=httpx.Timeout(QUIET + 30, connect=5.0)) as stream:
        lines = []
        for line in stream.iter_lines():
            lines.append(line)
            if line.startswith(": keepalive"):
                comments.append(time.monotonic() - began)
        kinds = [kind for _, kind, _ in parse(iter(lines))]
    # One connection carried the whole run: the quiet spell was bridged, not cut.
    assert comments, "no keepalive was sent"
    assert kinds[0] == "started" and kinds[-1] == "answer", kinds
    only.terminate()
