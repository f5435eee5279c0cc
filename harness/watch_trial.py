"""The kill trials' ``watch`` mode: clients watch a run's event stream while its process dies.

Each round of ``watch`` mode (behind the edge: :mod:`~harness.trial_shape`) begins, with
the round's other trials, a *watched* run (``POST /runs`` through the edge, a script of
:func:`~harness.trial_timing.draw_watch_script`: each step's text streamed over the second
half of its think time) and four SSE clients of it (:class:`~harness.sse.Watcher`), each
following ``GET /runs/{id}/events`` through reconnects with ``Last-Event-ID``:

* ``victim``: on the victim's own front; after the kill it reconnects through the edge;
* ``survivor``: on the survivor's own front, so it gets a run of another process live;
* ``edge-1``, ``edge-2``: through HAProxy (round robin: most rounds one lands on each
  process; which one is read from the edge's ``X-Served-By`` header, see
  :func:`~harness.edge.haproxy_config`).

The watched run is every round's target: the fault (SIGKILL) waits until a client sees
the text of a step drawn at random from the second on (its first piece, from the
victim's attempt; a later step's if that one's streamed unseen) and lands
a random share of that step's streaming time later, so the step is cut while its text is
streaming (:meth:`Watching.wait_for_text`).  Judged once the run ends
(:meth:`Watching.judge`):

* each client's durable events are exactly the run's rows in ``ticketiq.run_events``, by
  id and kind: none missing, none twice, in order; and the rows agree with the run's
  audit and checkpoints: one ``started``, one ``step_written`` per checkpoint, one
  ``resumed`` per adoption (``agent.run.adopted``), one ``answer``;
* every partial text a client saw is announced void: each (step, epoch) whose text it
  saw and that no ``step_written``/``answer`` of that epoch wrote is in its
  :attr:`~ticketiq_pg.db.events.RunText.discarded` (the ``resumed`` event's discard);
* each client's assembled text (:class:`~ticketiq_pg.db.events.RunText`) ends as the
  sealed answer.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.sse import Watcher
from harness.trial_report import Trial
from harness.trial_timing import draw_watch_script

#: The clients of each watched run, and where each connects (victim, survivor, edge).
CLIENTS = (("victim", "victim"), ("survivor", "survivor"), ("edge-1", "edge"),
           ("edge-2", "edge"))
#: How long a client may follow its run, from the round's start.
FOLLOW_SECONDS = 120.0


@dataclass
class Round:
    """One round's watched run and its clients."""

    trial: Trial
    run_id: str
    step: int  # the fault waits for the text of this step (or a later one)
    watchers: dict[str, Watcher] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)
    cut: threading.Event = field(default_factory=threading.Event)
    text_seen: bool = False  # the fault landed after the step's text was seen


class Watching:
    """The watched runs of a trial run, their clients and the tallies over them."""

    def __init__(self, arena: Any) -> None:
        self.arena = arena
        self.current: Round | None = None
        self.clients = 0
        self.events_checked = 0
        self.texts_seen = 0
        self.discards = 0
        self.connects = 0
        self.cut_mid_text = 0
        self.timed_from_text = 0
        self.edge_servers: Counter[str] = Counter()  # victim | survivor, per edge connect

    # -- a round --------------------------------------------------------------------

    def begin(self, index: int, rng: random.Random, entry_url: str, victim_url: str,
              victim_name: str) -> Trial:
        """Start the round's watched run through ``entry_url`` and its clients."""
        arena = self.arena
        key = f"trial-watch-{arena.tag}-{index}"
        script = {**draw_watch_script(rng), "seed": rng.randrange(1 << 30)}
        trial = Trial(index, "watch", key, 0.0, script=script)
        body = {"json": {"input": script}, "headers": {"Idempotency-Key": key}}
        run_id = ""
        for attempt in range(20):
            url = entry_url if attempt == 0 else arena.shape.retry_url(arena.survivor_url)
            try:
                answer = httpx.post(url + "/runs", timeout=5, **arena.authed(body))
                trial.http_status.append(answer.status_code)
                answer.raise_for_status()
                run_id = str(answer.json()["run_id"])
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        if not run_id:
            raise RuntimeError(f"round {index + 1}: the watched run was not accepted")
        trial.run_id = run_id
        edge_url = arena.shape.entry_url(arena.survivor_url)
        urls = {"victim": victim_url, "survivor": arena.survivor_url, "edge": edge_url}
        headers = {"Authorization": f"Bearer {arena.api_key}"}
        # Not step 1: a step streams only if it was watched when it began, and the
        # clients' first notice reaches the victim as the run may already be in step 1.
        state = Round(trial, run_id, rng.randint(2, int(script["steps"])))
        slots = {f"app{i + 1}": p for i, p in enumerate(getattr(arena.shape.edge, "slots", []))}
        deadline = time.monotonic() + FOLLOW_SECONDS

        def served(response: httpx.Response) -> None:
            name = response.headers.get("x-served-by")
            if name in slots:
                port = slots[name]
                self.edge_servers["victim" if arena.shape.ports.get(victim_name) == port
                                  else "survivor"] += 1

        for name, where in CLIENTS:
            watcher = Watcher(run_id, headers, on_open=served)
            state.watchers[name] = watcher

            def url_of(w: Watcher = watcher, first: str = urls[where]) -> str:
                # after its first connection a client comes back through the edge
                return first if w.connects <= 1 or first != victim_url else edge_url

            def saw(event: Any, state: Round = state) -> bool:
                if event.kind == "text" and (event.step or 0) >= state.step:
                    state.cut.set()
                return False

            thread = threading.Thread(target=watcher.follow, args=(url_of,), daemon=True,
                                      kwargs={"deadline": deadline, "stop": saw})
            state.threads.append(thread)
            thread.start()
        self.current = state
        return trial

    def wait_for_text(self, rng: random.Random, timeout: float = 30.0) -> bool:
        """Wait until a client sees the drawn step's text, then a random share of most of
        the step's streaming time (half its think time); False: not seen in time."""
        state = self.current
        assert state is not None
        if not state.cut.wait(timeout):
            return False
        stream = float(state.trial.script["model_delay"]) / 2
        time.sleep(rng.uniform(0.0, 0.7) * stream)
        state.text_seen = True
        return True

    def judge(self, report: Any) -> None:
        """Every client of the round's run against the run's rows (see the module)."""
        state, self.current = self.current, None
        if state is None:
            return
        for thread in state.threads:
            thread.join(max(1.0, FOLLOW_SECONDS))
        query = self.arena.query
        run_id, trial = state.run_id, state.trial
        where = f"round {trial.round + 1} watched run {run_id}"
        rows = [(int(i), str(k), int(s or 0), int(e or 0)) for i, k, s, e in query(
            "select event_id, kind, step, epoch from ticketiq.run_events where run_id = %s"
            " order by event_id", run_id)]
        found = []
        kinds = Counter(k for _, k, _, _ in rows)
        ((checkpoints,),) = query("select count(*) from ticketiq.checkpoints"
                                  " where run_id = %s", run_id)
        ((adoptions,),) = query("select count(*) from ticketiq.audit where run_id = %s"
                                " and event = 'agent.run.adopted'", run_id)
        answer = query("select body->>'text' from ticketiq.answers where run_id = %s", run_id)
        expected = {"started": 1, "step_written": int(checkpoints), "resumed": int(adoptions),
                    "answer": 1}
        if any(kinds.get(k, 0) != n for k, n in expected.items()):
            found.append(f"its rows {dict(kinds)} disagree with its audit and checkpoints "
                         f"{expected}")
        written = {(s, e) for _, k, s, e in rows if k in ("step_written", "answer")}
        sealed = answer[0][0] if answer else None
        for name, watcher in state.watchers.items():
            self.clients += 1
            self.connects += watcher.connects
            got = [(e.id, e.kind) for e in watcher.durable]
            self.events_checked += len(got)
            if not watcher.ended:
                found.append(f"client {name} never saw the run end ({watcher.errors[-3:]})")
            if got != [(i, k) for i, k, _, _ in rows]:
                ids = [i for i, _ in got]
                missing = sorted({i for i, *_ in rows} - set(ids))
                twice = sorted(i for i, n in Counter(ids).items() if n > 1)
                found.append(f"client {name}: durable events differ from the rows "
                             f"(missing {missing}, twice {twice}, in order "
                             f"{ids == sorted(ids)})")
            texts = {(e.step, e.epoch) for e in watcher.events if e.kind == "text"}
            self.texts_seen += len(texts)
            self.discards += len(watcher.text.discarded)
            unannounced = sorted(t for t in texts - written
                                 if t not in watcher.text.discarded)
            if unannounced:
                found.append(f"client {name}: partial text of (step, epoch) {unannounced} "
                             f"never announced void (discarded {watcher.text.discarded})")
            if watcher.text.answer != sealed:
                found.append(f"client {name}: assembled {watcher.text.answer!r}, "
                             f"sealed {sealed!r}")
        self.cut_mid_text += int(any(w.text.discarded for w in state.watchers.values()))
        self.timed_from_text += int(state.text_seen)
        report.problems.extend(f"{where}: {problem}" for problem in found)

    def summary(self) -> dict[str, Any]:
        return {"clients": self.clients, "events_checked": self.events_checked,
                "texts_seen": self.texts_seen, "discards_announced": self.discards,
                "connects": self.connects, "rounds_cut_mid_text": self.cut_mid_text,
                "rounds_timed_from_text": self.timed_from_text,
                "edge_connects_by_server": dict(self.edge_servers)}
