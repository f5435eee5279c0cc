"""The triage example (examples/triage) runs as its README says, and survives a SIGKILL.

Real processes from the example's folder: its ticket service (``ticket_service.py``),
``ticketiq-pg migrate`` on a database this test creates, two
``ticketiq-pg worker --app app:app`` processes and the example's ``client.py``.  Tickets
go in through the workers' HTTP fronts; one worker is SIGKILLed while it holds runs in
flight, one of them with its comment posted and its answer not yet sealed.  Judged from
outside the processes: the database (every run completed, a loss counted for exactly
the runs the kill caught, one resume audited for each) and the ticket service's own
record of every request it received (each ticket's comment and triage note landed
exactly once, counted by what landed, and no comment request more than the resumes
account for).

``test_asgi_app_*`` serves the example's ``asgi.py`` (the worker inside a FastAPI
lifespan) with uvicorn: its own route, the mounted front, and the gates (a run refused,
a comment refused, a comment held until a person approves it).

Quick checks beside them: the judge fails on a comment posted twice; the example imports
only names of ``ticketiq_pg.__all__``; every Python block of docs/guide.md is quoted
from the example.

Every process runs from the example's folder, where ``ticketiq-pg worker`` finds
``--app app:app`` by itself (nothing on ``PYTHONPATH`` for it).
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from helpers import run_example_test, send_torn_request
from procs import KILLED, LiveProc

from ticketiq_pg.testing import wait_for as wait_until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "triage"
TICKETS = 8  # through the fronts, one run each
BACKLOG = 3  # through a backlog job
MAX_RUNS = 4  # per worker: each of the two takes runs of the first wave
THINK = "0.5"  # seconds per model step: a run takes about 1.6 s


def command(name: str) -> list[str]:
    """``ticketiq-pg`` as installed next to this Python (else its module)."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.exists() else [sys.executable, "-m", "ticketiq_pg.ops.cli"]


@dataclass
class Example:
    """One test's world: a database, the example's service, and the processes it starts."""

    db_url: str
    workdir: Path
    service_url: str = ""
    record: Path = field(default_factory=Path)
    procs: list[LiveProc] = field(default_factory=list)
    seal_keys: str = ""
    api_key: str = ""

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
        env.update(
            TICKETIQ_DATABASE_URL=self.db_url,
            TICKETIQ_SEAL_KEYS=self.seal_keys,
            TRIAGE_SERVICE_URL=self.service_url,
            TRIAGE_API_KEY=self.api_key,
            TRIAGE_THINK_SECONDS=THINK,
        )
        env.update(extra)
        return env

    def spawn(self, name: str, argv: list[str], **extra: str) -> LiveProc:
        stderr_path = self.workdir / f"{name}.stderr.log"
        with open(stderr_path, "ab") as err:
            popen = subprocess.Popen(argv, cwd=EXAMPLE, env=self.env(**extra),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=err, text=True)
        proc = LiveProc(popen, name, stderr_path)
        self.procs.append(proc)
        return proc

    def run(self, *argv: str) -> list[dict[str, Any]]:
        """Run a command of the example's folder to its end; its JSON lines on stdout."""
        done = subprocess.run(list(argv), cwd=EXAMPLE, env=self.env(), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stderr}"
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    def start_service(self) -> None:
        self.record = self.workdir / "ticket-service.jsonl"
        proc = self.spawn("service", [sys.executable, "ticket_service.py", "--port", "0",
                                      "--record", str(self.record)])
        self.service_url = proc.wait_event("listening", timeout=15)["url"]

    def worker(self, name: str, **extra: str) -> tuple[LiveProc, str]:
        proc = self.spawn(name, [*command("ticketiq-pg"), "worker", "--app", "app:app",
                                 "--process-id", name, "--http-port", "0",
                                 "--max-runs", str(MAX_RUNS)], **extra)
        return proc, f"http://127.0.0.1:{proc.wait_event('http', timeout=30)['port']}"

    def requests(self) -> list[dict[str, Any]]:
        """The ticket service's own record: every request it received, oldest first."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()


@pytest.fixture
def example(empty_db_url: str, tmp_path: Path) -> Iterator[Example]:
    # A seal key, as the README makes it.
    seal_key = subprocess.run([*command("ticketiq-pg"), "seal-key"], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
    world = Example(empty_db_url, tmp_path, seal_keys=seal_key)
    try:
        world.start_service()
        # The schema, as the README installs it.
        world.run(*command("ticketiq-pg"), "migrate")
        # The fronts' API key, as the README makes it.
        made = subprocess.run([*command("ticketiq-pg"), "api-key", "create", "--identity",
                               "triage-client"], capture_output=True, text=True, timeout=30,
                              check=True, env=world.env())
        world.api_key = made.stdout.splitlines()[0]
        yield world
    finally:
        world.close()


# -- judging what landed at the ticket service ---------------------------------------


@pytest.mark.parametrize("sent", [0, 12], ids=["headers-only", "half-a-body"])
def test_a_request_torn_by_a_killed_client_is_not_recorded(tmp_path: Path, sent: int) -> None:
    """A worker killed while its comment was on the wire sent no comment: the record
    holds only the requests that arrived whole (else the resend looks like a second
    comment with another body)."""
    world = Example("", tmp_path)
    try:
        world.start_service()
        made = httpx.post(f"{world.service_url}/tickets", timeout=10,
                          json={"id": "T-1", "title": "Export fails", "body": "An error."})
        assert made.status_code == 201, made.text
        body = json.dumps({"text": "Triage: P2, for support.", "run_id": "r1"}).encode()
        send_torn_request(world.service_url, "/tickets/T-1/comments", body, sent,
                          {"Idempotency-Key": "k1"})
        whole = httpx.post(f"{world.service_url}/tickets/T-1/comments", content=body,
                           headers={"Idempotency-Key": "k1"}, timeout=10)
        assert whole.status_code == 201, whole.text
        assert [(r["effect"], r["body"]) for r in comment_requests(world.requests(), "T-1")
                ] == [("created", json.loads(body))]
    finally:
        world.close()



def comment_requests(requests: list[dict[str, Any]], ticket_id: str) -> list[dict[str, Any]]:
    return [r for r in requests
            if r["method"] == "POST" and r["path"] == f"/tickets/{ticket_id}/comments"]


def judge_landed(requests: list[dict[str, Any]], runs: dict[str, str],
                 resent: Counter[str], step_keys: dict[str, str],
                 answers: dict[str, str]) -> None:
    """Each ticket's comment and triage note landed once, from the service's raw record.

    ``runs``: ticket -> its run; ``resent``: run -> how many times its resume sent the
    comment again with its key (audited settlements ``resent_same_key``);
    ``step_keys``: run -> its comment call's step key; ``answers``: run -> answer text.
    """
    for ticket_id, run_id in sorted(runs.items()):
        posts = comment_requests(requests, ticket_id)
        landed = [r["answer"]["comment"] for r in posts if r["effect"] == "created"]
        # Counted by what landed (content and run), not by key: one comment.
        assert len(landed) == 1, (ticket_id, landed)
        (comment,) = landed
        assert comment["run_id"] == run_id, (ticket_id, comment)
        assert comment["text"].startswith("Triage: P"), comment
        # Every request beyond the first is a resend its run's resume audited, with the
        # same key: a comment posted again blindly fails here even when it was deduped.
        # (A resend may be the first to arrive: the call was marked in doubt, then the
        # process died before its request went out.)
        assert 1 <= len(posts) <= 1 + resent[run_id], (ticket_id, posts, resent[run_id])
        assert {r["idempotency_key"] for r in posts} == {step_keys[run_id]}, posts
        assert all(r["body"] == posts[0]["body"] for r in posts), (
            ticket_id, [(r["seq"], r["effect"], r["status"], r["body"]) for r in posts])
        # The answer delivery has a reader: made once, never sent twice.
        notes = [r for r in requests
                 if r["method"] == "POST" and r["path"] == f"/tickets/{ticket_id}/triage"]
        assert len(notes) == 1 and notes[0]["effect"] == "created", (ticket_id, notes)
        assert notes[0]["body"] == {"note": answers[run_id], "run_id": run_id}, notes


def test_judge_catches_a_comment_posted_twice() -> None:
    """The judge fails on a second comment, keyed or not, that no resume accounts for."""

    def post(seq: int, key: str, effect: str, run_id: str = "r1") -> dict[str, Any]:
        body = {"text": "Triage: P3, for support. (x)", "run_id": run_id}
        return {"seq": seq, "method": "POST", "path": "/tickets/T-1/comments",
                "idempotency_key": key, "body": body, "effect": effect,
                "answer": {"comment": {"id": f"C-{seq}", "ticket_id": "T-1", **body}}}

    note = {"seq": 9, "method": "POST", "path": "/tickets/T-1/triage", "effect": "created",
            "idempotency_key": "answer:r1", "body": {"note": "done", "run_id": "r1"}}
    args = ({"T-1": "r1"}, Counter(), {"r1": "k1"}, {"r1": "done"})
    judge_landed([post(1, "k1", "created"), note], *args)  # once: fine
    with pytest.raises(AssertionError):  # twice with another key: two landed
        judge_landed([post(1, "k1", "created"), post(2, "k2", "created"), note], *args)
    with pytest.raises(AssertionError):  # twice with the key, no resend audited
        judge_landed([post(1, "k1", "created"), post(2, "k1", "deduped"), note], *args)
    judge_landed([post(1, "k1", "created"), post(2, "k1", "deduped"), note],
                 {"T-1": "r1"}, Counter({"r1": 1}), {"r1": "k1"}, {"r1": "done"})
    with pytest.raises(AssertionError):  # the note delivered twice
        judge_landed([post(1, "k1", "created"), note, {**note, "seq": 10}], *args)


# -- the example uses the public API only --------------------------------------------


def test_example_imports_only_the_public_api() -> None:
    """``from ticketiq_pg import ...`` of names in ``ticketiq_pg.__all__``, nothing deeper
    (its test: ``from ticketiq_pg.testing import ...`` of names in that ``__all__``)."""
    import ticketiq_pg.testing

    public = {"ticketiq_pg": set(ticketiq_pg.__all__),
              "ticketiq_pg.testing": set(ticketiq_pg.testing.__all__)}
    for path in sorted([*EXAMPLE.glob("*.py"), *(EXAMPLE.parent / "stream").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
                assert not [n for n in names if n.split(".")[0] == "ticketiq_pg"
                            and n != "ticketiq_pg"], (path.name, names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "ticketiq_pg"):
                module = node.module or ""
                allowed = module == "ticketiq_pg" or (
                    module == "ticketiq_pg.testing" and path.name.startswith("test_"))
                assert allowed, (path.name, module)
                names = {alias.name for alias in node.names}
                assert names <= public[module], (path.name, names)


# -- the guide quotes the example ---------------------------------------------------


def quoted_at(source: list[str], chunk: list[str], start: int) -> int:
    """Where ``chunk`` appears in ``source`` as consecutive lines, at ``start`` or later."""
    for at in range(start, len(source) - len(chunk) + 1):
        if source[at:at + len(chunk)] == chunk:
            return at + len(chunk)
    raise AssertionError("not in the example, in this order:\n" + "\n".join(chunk))


def test_guide_code_is_quoted_from_the_example() -> None:
    """Each Python (and JavaScript) block of docs/guide.md is the file its first line
    names, ``...`` for cuts."""
    blocks = re.findall(r"```(?:python|js)\n(.*?)```", (ROOT / "docs" / "guide.md").read_text(),
                        re.S)
    assert len(blocks) >= 8
    for block in blocks:
        first, *lines = block.rstrip("\n").split("\n")
        assert first.startswith(("# examples/triage/", "# examples/pydantic_ai/",
                                 "# examples/stream/", "// examples/stream/",
                                 "# examples/openai_agents/")), first
        source = (ROOT / first.split(" ", 1)[1]).read_text().split("\n")
        chunks: list[list[str]] = [[]]
        for line in lines:
            if line.strip() == "...":
                chunks.append([])
            else:
                chunks[-1].append(line)
        at = 0
        for chunk in chunks:
            while chunk and not chunk[0].strip():
                chunk.pop(0)
            while chunk and not chunk[-1].strip():
                chunk.pop()
            if chunk:
                at = quoted_at(source, chunk, at)


# -- two workers, one SIGKILLed mid-run -----------------------------------------------


def test_two_workers_one_sigkilled_every_ticket_triaged_once(example: Example) -> None:
    started = time.monotonic()
    (victim, victim_front), (survivor, survivor_front) = (
        example.worker("victim"), example.worker("survivor"))

    # A backlog job, and the tickets, each a ticket event sent to a front in turn.
    example.run(sys.executable, "client.py", "tickets", "--count", str(BACKLOG),
                "--prefix", "B", "--no-runs")
    (job,) = example.run(sys.executable, "client.py", "backlog",
                         *[f"B-{n}" for n in range(1, BACKLOG + 1)])
    submitted = example.run(sys.executable, "client.py", "tickets", "--count", str(TICKETS),
                            "--front", victim_front, "--front", survivor_front)
    assert [s["created"] for s in submitted] == [True] * TICKETS
    assert {s["front"] for s in submitted} == {victim_front, survivor_front}

    def victim_runs() -> list[str]:
        return [str(r) for (r,) in example.query(
            "select run_id from ticketiq.runs where lease_holder = 'victim'"
            " and status = 'running'")]

    def comment_landed_answer_not_sealed() -> list[str]:
        """Runs the victim holds whose comment landed and whose answer is not sealed."""
        commented = {r["body"]["run_id"] for r in example.requests()
                     if r["path"].endswith("/comments") and r["effect"] == "created"}
        held = set(victim_runs()) & commented
        sealed = {str(r) for (r,) in example.query("select run_id from ticketiq.answers")}
        return sorted(held - sealed)

    with psycopg.connect(example.db_url, autocommit=True) as conn:
        caught = wait_until("a victim run with its comment posted and no answer yet",
                            comment_landed_answer_not_sealed, 20, 0.02)
        victim.signal(signal.SIGKILL)
        assert victim.wait(10) == KILLED
        # Right away, before the survivor's claim (after a grace of 0.3 s): the runs in
        # flight on the victim when it died.
        at_kill = {str(r) for (r,) in conn.execute(
            "select run_id from ticketiq.runs where lease_holder = 'victim'"
            " and status = 'running'").fetchall()}
    killed_at = time.monotonic()
    print(f"\nSIGKILL of the victim at {killed_at - started:.1f}s; caught {len(at_kill)} runs "
          f"in flight ({len(caught)} with the comment posted and no answer sealed)")

    wait_until("every ticket's entry answered", lambda: example.query(
        "select count(*) from ticketiq.entries where state = 'answered'") == [(TICKETS,)], 30)
    wait_until("the backlog job completed", lambda: example.query(
        "select state from ticketiq.jobs where job_id = %s", job["job_id"]) == [("completed",)],
        30)
    recovered = time.monotonic() - killed_at

    # -- the database: every run completed, a loss counted where the kill landed
    runs = dict(example.query(
        "select e.payload->>'ticket_id', e.run_id::text from ticketiq.entries as e"
        " where e.kind = 'ticket_event' and e.state = 'answered'"))
    assert sorted(runs) == sorted(f"T-{n}" for n in range(1, TICKETS + 1))
    rows = example.query("select run_id::text, status, loss_count from ticketiq.runs")
    assert {status for _, status, _ in rows} == {"completed"}
    assert len(rows) == TICKETS
    lost = {run_id for run_id, _, losses in rows if losses}
    lapsed = Counter(r for (r,) in example.query(
        "select run_id::text from ticketiq.audit where event = 'agent.run.lease_lapsed'"
        " and detail->>'lapsed_holder' = 'victim'"))
    resumes = example.query(
        "select run_id::text, detail from ticketiq.audit where event = 'agent.run.crash_resumed'")
    assert {losses for _, _, losses in rows} <= {0, 1}
    assert at_kill, "no run was in flight on the victim when it was killed"
    assert at_kill <= lost and set(caught) <= lost
    assert set(lapsed) == lost and set(lapsed.values()) == {1}
    assert Counter(r for r, _ in resumes) == Counter(lost)  # one resume per loss
    assert example.query(
        "select count(*) from ticketiq.runs where lease_holder is not null") == [(0,)]

    # How each resume settled the comment call its last step left.
    comment_calls = dict(example.query(
        "select call_id, run_id::text from ticketiq.calls where tool = 'tickets.comment'"))
    step_keys = dict(example.query(
        "select run_id::text, step_key from ticketiq.calls where tool = 'tickets.comment'"))
    resent: Counter[str] = Counter()
    settled: Counter[str] = Counter()
    for run_id, detail in resumes:
        for s in detail["settlements"]:
            settled[s["settlement"]] += 1
            if s["call_id"] in comment_calls and s["settlement"] == "resent_same_key":
                resent[run_id] += 1
            if s["call_id"] in comment_calls:
                assert s["settlement"] in ("resent_same_key", "made", "already_made"), s
    answers = {str(r): body["text"] for r, body in example.query(
        "select run_id, body from ticketiq.answers")}
    assert set(answers) == set(runs.values())

    # -- the ticket service's own record: each comment and note landed exactly once
    requests = example.requests()
    judge_landed(requests, runs, resent, step_keys, answers)
    for ticket_id, run_id in runs.items():
        assert answers[run_id].startswith(f"{ticket_id} triaged: comment C-"), answers[run_id]

    # The backlog job's comments: once each, keyed by the job and the ticket.
    ((result,),) = example.query("select result from ticketiq.jobs where job_id = %s",
                                 job["job_id"])
    assert result == {"done": [f"B-{n}" for n in range(1, BACKLOG + 1)], "skipped": []}
    for n in range(1, BACKLOG + 1):
        posts = comment_requests(requests, f"B-{n}")
        assert [r["effect"] for r in posts][:1] == ["created"], posts
        assert all(r["effect"] == "deduped" for r in posts[1:]), posts
        assert {r["idempotency_key"] for r in posts} == {f"backlog:{job['job_id']}:B-{n}"}
    total = sum(1 for r in requests if r["path"].endswith("/comments")
                and r["method"] == "POST" and r["effect"] == "created")
    assert total == TICKETS + BACKLOG

    # The example's own check agrees.
    check = subprocess.run([sys.executable, "client.py", "check"], cwd=EXAMPLE,
                           env=example.env(), capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{TICKETS + BACKLOG} tickets, 0 without exactly one comment" in check.stdout

    # The survivor is still up and stops cleanly on SIGTERM.
    assert survivor.popen.poll() is None
    assert survivor.terminate(60) == 0
    print(f"runs {len(rows)}, lost and resumed {len(lost)} ({sorted(settled.items())}), "
          f"comments landed {total}, comment requests "
          f"{sum(len(comment_requests(requests, t)) for t in runs)} for {TICKETS} tickets, "
          f"recovered {recovered:.1f}s after the kill, test {time.monotonic() - started:.1f}s")


# -- the worker inside the app's own ASGI process -------------------------------------


def uvicorn_url(proc: LiveProc) -> str | None:
    found = re.search(r"Uvicorn running on (http://[0-9.]+:\d+)", proc.stderr_text())
    return found.group(1) if found else None


def test_asgi_app_serves_its_route_the_front_and_the_gates(example: Example) -> None:
    server = example.spawn(
        "asgi", [sys.executable, "-m", "uvicorn", "asgi:api", "--port", "0"],
        TRIAGE_FROZEN_TICKETS="F-1")
    base = wait_until("uvicorn to listen", lambda: uvicorn_url(server), 30)
    with httpx.Client(base_url=base, timeout=10) as http:
        assert http.get("/ticketiq/healthz").json() == {"status": "ok"}
        tickets = {"N-1": ("Refund not received", "The refund was approved a week ago."),
                   "S-1": ("Phishing mail", "A mail pretending to be us asks for passwords."),
                   "F-1": ("Dark mode", "Please add a dark mode.")}
        entries = {}
        for ticket_id, (title, body) in tickets.items():
            made = httpx.post(f"{example.service_url}/tickets",
                              json={"id": ticket_id, "title": title, "body": body})
            assert made.status_code == 201
            asked = http.post(f"/tickets/{ticket_id}/triage-requests")
            assert (asked.status_code, asked.json()["created"]) == (202, True)
            entries[ticket_id] = asked.json()["entry_id"]
        again = http.post("/tickets/N-1/triage-requests")  # the same entry: no second run
        assert (again.status_code, again.json()) == (
            200, {"entry_id": entries["N-1"], "created": False})
        # The mounted front: a webhook's run, refused by check_run.
        assert http.post("/ticketiq/webhooks/alerts", headers={"X-Delivery-Id": "d-0"},
                         json={"ticket_id": "N-1"}).status_code == 401
        hook = http.post("/ticketiq/webhooks/alerts", json={"ticket_id": "N-1"}, headers={
            "X-Delivery-Id": "d-1", "Authorization": f"Bearer {example.api_key}"})
        assert hook.status_code == 202

        def entry(sender: str) -> tuple[Any, ...] | None:
            rows = example.query("select state, run_id::text from ticketiq.entries"
                                 " where sender_id = %s and state <> 'running'"
                                 " and state <> 'pending'", sender)
            return rows[0] if rows else None

        state, _ = wait_until("the webhook's run", lambda: entry("alerts:d-1"), 20)
        assert state == "failed"
        ((reason,),) = example.query(
            "select r.failure_reason from ticketiq.runs as r join ticketiq.entries as e"
            " using (run_id) where e.sender_id = 'alerts:d-1'")
        assert reason == "triage runs start from ticket events, not webhook"
        assert wait_until("N-1", lambda: entry("triage-requested:N-1"), 20)[0] == "answered"
        assert wait_until("F-1", lambda: entry("triage-requested:F-1"), 20)[0] == "answered"

        # S-1's comment waits for a person: approve it with the operator's command.
        def waiting() -> list[dict[str, Any]]:
            out = subprocess.run([*command("ticketiq-pg"), "approvals", "--json"],
                                 cwd=EXAMPLE, env=example.env(), capture_output=True,
                                 text=True, timeout=30, check=True).stdout
            return json.loads(out)

        (approval,) = wait_until("S-1's approval request", waiting, 20, 0.2)
        assert approval["tool"] == "tickets.comment"
        assert comment_requests(example.requests(), "S-1") == []
        subprocess.run([*command("ticketiq-pg"), "approve", approval["approval_id"],
                        "--actor", "dana", "--reason", "checked"], cwd=EXAMPLE,
                       env=example.env(), capture_output=True, timeout=30, check=True)
        assert wait_until("S-1", lambda: entry("triage-requested:S-1"), 20)[0] == "answered"

    requests = example.requests()
    landed = {t: [r["answer"]["comment"]["text"] for r in comment_requests(requests, t)
                  if r["effect"] == "created"] for t in tickets}
    assert landed == {"N-1": ["Triage: P3, for billing. (Refund not received)"],
                      "S-1": ["Triage: P3, for security. (Phishing mail)"], "F-1": []}
    notes = {r["path"].split("/")[2]: r["body"]["note"] for r in requests
             if r["path"].endswith("/triage") and r["effect"] == "created"}
    assert notes["N-1"].startswith("N-1 triaged: comment C-")
    assert notes["F-1"].startswith("F-1 not commented:") and "frozen" in notes["F-1"]
    assert sorted(notes) == ["F-1", "N-1", "S-1"]
    # SIGTERM: uvicorn ends the lifespan, which shuts the worker down, then exits by the
    # same signal.
    assert server.terminate(60) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in server.stderr_text()
    assert example.query("select count(*) from ticketiq.runs where status = 'running'") == [(0,)]


def test_the_ticket_service_refuses_a_fencing_token_older_than_one_it_has_seen(
        example: Example) -> None:
    """A POST of a run's older attempt (a stalled process taken over) applies nothing
    (the app's client sends its run's epoch: ticketiq_pg.vendors.fencing)."""
    example.start_service()
    service = example.service_url
    httpx.post(f"{service}/tickets", json={"id": "T-F", "title": "t", "body": "b"},
               ).raise_for_status()
    run = "5d1c0e3e-0000-4000-8000-000000000001"

    def comment(epoch: int, text: str) -> httpx.Response:
        return httpx.post(f"{service}/tickets/T-F/comments", json={"text": text},
                          headers={"TicketIQ-Fence": f"{run}:{epoch}"})

    assert comment(2, "by the attempt that took the run over").status_code == 201
    stale = comment(1, "by the stalled attempt")
    assert stale.status_code == 409 and stale.headers["TicketIQ-Fence-Refused"] == "1"
    assert comment(3, "a later attempt").status_code == 201
    texts = [c["text"] for c in httpx.get(f"{service}/tickets/T-F/comments").json()["comments"]]
    assert texts == ["by the attempt that took the run over", "a later attempt"]
    record = example.requests()
    assert [r["effect"] for r in record if r["path"] == "/tickets/T-F/comments"
            and r["method"] == "POST"] == [
        "created", "fenced", "created"]


# -- the example's own test (ticketiq_pg.testing, as the guide teaches) -----------------


@pytest.mark.parametrize("test_file", ["test_triage.py", "test_escalation.py"])
def test_the_examples_own_test_passes(pg_server_url: str, tmp_path: Path, test_file: str) -> None:
    """``examples/triage/test_triage.py`` (and the escalation workflow's
    ``test_escalation.py``) passes as an app author runs it, from its folder with a server
    URL, on a database it makes itself."""
    run_example_test(EXAMPLE, test_file, pg_server_url, tmp_path / "pytest",
                     passed=3 if test_file == "test_escalation.py" else 1)
