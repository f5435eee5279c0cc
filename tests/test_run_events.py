"""A run's event stream over real app processes: ``GET /runs/{id}/events``.

A client on one process watches a run that runs on the other (live text and durable
events, by NOTIFY and by the poll); a client that reconnects with ``Last-Event-ID`` gets
every durable event once; the process running the run is SIGKILLed in the middle of a
step's text: the watchers are told to discard it, the step is asked again, and each
watcher's durable events are exactly the run's rows, its assembled text the sealed answer.
"""

from __future__ import annotations

import threading
import time
import uuid

import httpx
import pytest
from fronts import KEYS, get, post, worker
from procs import Stack

from harness.sse import Watcher, read_events
from ticketiq_pg.db.events import RunText

pytestmark = pytest.mark.slow


def headers(stack: Stack) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[stack.db_url]}"}


def start(url: str, key: str, **script: object) -> str:
    body = {"input": {"seed": 7, "steps": 3, "plan": "mixed", **script}}
    answer = post(url + "/runs", timeout=10, json=body, headers={"Idempotency-Key": key})
    assert answer.status_code == 202, answer.text
    return str(answer.json()["run_id"])


def holder(stack: Stack, run_id: str, timeout: float = 30.0) -> str:
    """The process that holds the run, once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = stack.query("select lease_holder from ticketiq.runs where run_id = %s", run_id)
        if found and found[0][0]:
            return str(found[0][0])
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never started")


def rows(stack: Stack, run_id: str) -> list[tuple[int, str]]:
    return [(int(i), str(k)) for i, k in stack.query(
        "select event_id, kind from ticketiq.run_events where run_id = %s order by event_id",
        run_id)]


def answer_text(stack: Stack, run_id: str) -> str:
    return str(stack.query("select body->>'text' from ticketiq.answers where run_id = %s",
                           run_id)[0][0])


def test_a_client_on_one_process_watches_a_run_on_the_other(stack: Stack) -> None:
    a, a_url = worker(stack, "a")
    b, b_url = worker(stack, "b")
    run_id = start(a_url, "watch-1", model_delay=0.6, words=8)
    other = b_url if holder(stack, run_id) == "a" else a_url
    watcher = Watcher(run_id, headers(stack))
    watcher.follow(lambda: other, deadline=time.monotonic() + 60)
    assert watcher.ended and watcher.connects == 1, watcher.errors
    # Every durable event of the run, once, in order, with its id.
    assert [(e.id, e.kind) for e in watcher.durable] == rows(stack, run_id)
    kinds = [e.kind for e in watcher.durable]
    assert kinds[0] == "started" and kinds[-1] == "answer"
    assert kinds.count("step_written") == 2
    # The model's text reached the other process as it was generated, piece by piece.
    texts = [e for e in watcher.events if e.kind == "text"]
    assert len({(e.step, e.body["offset"]) for e in texts}) > 3, texts
    assert all(e.id is None for e in texts)
    assert watcher.text.answer == answer_text(stack, run_id)
    assert watcher.text.steps[1].startswith("step 1 w0")
    a.terminate()
    b.terminate()


def test_a_client_that_reconnects_with_its_last_event_id_misses_none(stack: Stack) -> None:
    only, url = worker(stack, "only")
    run_id = start(url, "watch-2", model_delay=0.3)
    seen: list[int] = []
    # First connection: three durable events, then the client goes away.
    for event in read_events(url, run_id, headers(stack), timeout=30):
        if event.id is not None:
            seen.append(event.id)
            if len(seen) == 3:
                break
    later = [e.id for e in read_events(url, run_id, headers(stack), last_id=seen[-1],
                                       timeout=60) if e.id is not None]
    assert seen + later == [i for i, _ in rows(stack, run_id)]
    # ?after= is the same, for a client that cannot set headers.
    again = httpx.get(f"{url}/runs/{run_id}/events?after={seen[-1]}", headers=headers(stack),
                      timeout=30)
    assert again.status_code == 200 and f"id: {later[0]}\n" in again.text
    only.terminate()


def test_the_holder_killed_mid_step_the_watchers_discard_its_text(stack: Stack) -> None:
    first, first_url = worker(stack, "first")
    second, second_url = worker(stack, "second")
    run_id = start(first_url, "watch-3", model_delay=4.0, words=20)
    victim_name = holder(stack, run_id)
    victim, victim_url = (first, first_url) if victim_name == "first" else (second, second_url)
    survivor, survivor_url = (second, second_url) if victim is first else (first, first_url)
    on_survivor = Watcher(run_id, headers(stack))
    on_victim = Watcher(run_id, headers(stack))
    cut = threading.Event()

    def text_of_step_two(event: object) -> bool:
        if getattr(event, "kind", "") == "text" and getattr(event, "step", 0) == 2:
            cut.set()
        return False

    deadline = time.monotonic() + 90
    threads = [
        threading.Thread(target=on_survivor.follow, args=(lambda: survivor_url,),
                         kwargs={"deadline": deadline, "stop": text_of_step_two}),
        # Connected to the victim; after the kill it reconnects through the other process.
        threading.Thread(target=on_victim.follow,
                         args=(lambda: victim_url if on_victim.connects == 1 else survivor_url,),
                         kwargs={"deadline": deadline}),
    ]
    for thread in threads:
        thread.start()
    assert cut.wait(60), "no text of step 2 was seen"
    victim.kill()
    for thread in threads:
        thread.join(100)
    done = get(f"{survivor_url}/runs/{run_id}?wait=30", timeout=40).json()
    assert done["status"] == "completed" and done["loss_count"] == 1, done
    expected = rows(stack, run_id)
    for watcher in (on_survivor, on_victim):
        assert watcher.ended, watcher.errors
        assert [(e.id, e.kind) for e in watcher.durable] == expected
        assert watcher.text.answer == answer_text(stack, run_id)
    resumed = [e for e in on_survivor.durable if e.kind == "resumed"]
    assert len(resumed) == 1 and resumed[0].body["discard"]["step"] == 2
    # The cut step's text (epoch 1) was voided, and streamed again by the adopter.
    assert (2, 1) in on_survivor.text.discarded
    assert any(e.kind == "text" and e.step == 2 and e.epoch == resumed[0].epoch
               for e in on_survivor.events)
    assert on_victim.connects >= 2
    assert stack.duplicates() == {}
    survivor.terminate()


def test_the_stream_is_the_callers_own(stack: Stack) -> None:
    only, url = worker(stack, "only")
    run_id = start(url, "watch-4")
    assert httpx.get(f"{url}/runs/{run_id}/events", timeout=10).status_code == 401
    unknown = httpx.get(f"{url}/runs/{uuid.uuid4()}/events", headers=headers(stack), timeout=10)
    assert unknown.status_code == 404
    for bad in ("-1", "x", "1" * 20):
        answer = httpx.get(f"{url}/runs/{run_id}/events",
                           headers={**headers(stack), "Last-Event-ID": bad}, timeout=10)
        assert answer.status_code == 422, (bad, answer.text)
    assert httpx.get(f"{url}/runs/{run_id}/events?after=-1", headers=headers(stack),
                     timeout=10).status_code == 422
    only.terminate()


def test_run_text_rules() -> None:
    """Pieces at their offsets (twice counts once), a discard voids an attempt's text,
    the written step's text wins."""
    run = uuid.uuid4()
    from ticketiq_pg.db.events import RunEvent

    def text(step: int, epoch: int, offset: int, piece: str) -> RunEvent:
        return RunEvent(run, "text", step, epoch, {"offset": offset, "text": piece})

    assembled = RunText()
    for event in (text(1, 1, 0, "hel"), text(1, 1, 3, "lo"), text(1, 1, 3, "lo")):
        assembled.add(event)
    assert assembled.steps[1] == "hello"
    assembled.add(RunEvent(run, "resumed", 0, 3, {"discard": {"step": 1, "epochs_before": 3}}))
    assert assembled.discarded == [(1, 1)] and 1 not in assembled.steps
    assembled.add(text(1, 3, 0, "hi"))
    assembled.add(text(1, 3, 5, "gap"))  # a piece after a gap waits
    assert assembled.steps[1] == "hi"
    assembled.add(RunEvent(run, "answer", 1, 3, {"text": "hi there"}, id=9))
    assert assembled.answer == "hi there"
    assembled.add(text(1, 3, 2, " late"))  # after the written text: ignored
    assert assembled.steps[1] == "hi there"
