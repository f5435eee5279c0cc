"""Runs with a provider adapter: retried within the runner's budget, resumed after a kill.

The adapters' real SDK clients talk to the local provider server (no network); the runs
are real, over a real PostgreSQL:

* in-process (a :class:`Runner`, as tests/test_failures.py builds one): a multi-step run
  with parallel tool calls, a tool that fails, a 429 with ``Retry-After``, a 500 and a
  timeout, judged from what the provider server received, the checkpoints and the
  durable attempt counts; a run whose steps are streamed (someone listens to its events)
  and whose first stream is cut mid-way;
* in real ``ticketiq-pg worker`` processes (the app is tests/adapter_app.py): a run
  killed right after its first checkpoint (``TICKETIQ_FAULTS=after_checkpoint@1``) and
  resumed by a second process, which asks the provider for the later steps only, counted
  at the provider server by the steps each request had answered; and a run whose worker
  is SIGKILLed while its first step streams (the provider server holds the stream),
  whose survivor asks that step again, streamed, and no other twice.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from procs import KILLED, SEAL_KEYS, Stack, spawn_cli_worker
from provider_cases import IDS, PROVIDERS, Provider

from harness.provider_sim import ProviderServer, Recorded, Reply, assistant_turns
from ticketiq_pg import CallContext, ModelStep, RetryPolicy, StepRequest, TicketIQ, Tool, Tools
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.seal import Sealer

TESTS = Path(__file__).resolve().parent
START = {"owner": "alice", "run_as": "alice", "channel": "playground", "entry_point": "test"}
FAST = RetryPolicy(attempts=4, first_delay=0.01, max_delay=0.05, timeout=5)


def tools_for(made: list[str]) -> Tools:
    tools = Tools()

    @tools.function("jira.get_issue")
    async def get_issue(call: CallContext, key: str) -> dict[str, Any]:
        """Read a Jira issue by its key."""
        made.append(f"jira:{key}")
        return {"key": key, "status": "open"}

    async def get_ticket(call: CallContext) -> Any:
        made.append(f"ticket:{call.arguments['ticket_id']}")
        raise ValueError("the ticket service answered nonsense")

    tools.add(Tool("tickets.get", "read", invoke=get_ticket, description="Read a ticket.",
                   parameters={"type": "object", "properties": {"ticket_id": {"type": "string"}},
                               "required": ["ticket_id"]}))
    return tools


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


async def run_in_process(db_url: str, model: Any, tools: Tools, input: Any,
                         asked: Any = None) -> Any:
    """One run to its end with a :class:`Runner` in this process, asking ``asked`` (the
    adapter itself unless given); the adapter's client closed after."""
    async with await TicketIQ.connect(db_url) as db:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), asked or model,
                        tools, model_retry=FAST, tool_retry=FAST)
        outcome = await runner.start_and_run(**START, input=input)
        await model.aclose()
    return outcome


@pytest.fixture
def sim() -> Any:
    with ProviderServer.start() as server:
        yield server


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_run_through_an_adapter_survives_429_500_and_a_timeout(
    db_url: str, sim: ProviderServer, p: Provider,
) -> None:
    made: list[str] = []
    tools = tools_for(made)
    model = p.make(sim, tools=tools, system="You triage tickets.", timeout=0.5)
    a, b, c = p.call_id(), p.call_id(), p.call_id()
    step1 = p.answer("Looking.", [(a, "jira_get_issue", {"key": "OPS-7"}),
                                  (b, "tickets_get", {"ticket_id": "T-1"})])
    step2 = p.answer(None, [(c, "jira_get_issue", {"key": "OPS-8"})])
    step3 = p.answer("OPS-7 and OPS-8 are open; T-1 could not be read.")
    sim.script(p.name, p.error(429, retry_after=0.3), step1, p.error(500),
               Reply(200, {}, delay=1.5), step2, step3)
    outcome = await run_in_process(db_url, model, tools, {"ticket_id": "T-1"})
    assert outcome.status == "completed", outcome
    assert outcome.answer["text"] == "OPS-7 and OPS-8 are open; T-1 could not be read."
    attempts = query(db_url, "select step, target, attempts from ticketiq.attempts "
                     "where run_id = %s order by step", outcome.run_id)
    bodies = query(db_url, "select step, body from ticketiq.checkpoints where run_id = %s "
                   "order by step", outcome.run_id)

    got = sim.requests(p.name)
    assert [r.problems for r in got] == [[]] * 6
    assert [r.status for r in got[:3]] + [r.status for r in got[4:]] == [429, 200, 500, 200, 200]
    # the SDK did not retry on its own: every try is one request, asked by the runner
    assert [assistant_turns(r.body) for r in got] == [0, 0, 1, 1, 1, 2]
    assert got[1].at - got[0].at >= 0.3  # the Retry-After was honoured
    assert [tuple(row) for row in attempts] == [(1, "model", 1), (2, "model", 2)]
    # each read made once; the failing one told to the model as an error, linked by id
    assert made == ["jira:OPS-7", "ticket:T-1", "jira:OPS-8"]
    sent = got[-1].body
    assert p.calls_sent(sent) == [[(a, "jira_get_issue", {"key": "OPS-7"}),
                                   (b, "tickets_get", {"ticket_id": "T-1"})],
                                  [(c, "jira_get_issue", {"key": "OPS-8"})]]
    results = p.results_sent(sent)
    assert [(cid, error) for cid, _, error in results] == [(a, False), (b, True), (c, False)]
    assert "the ticket service answered nonsense" in results[1][1]["error"]
    # the checkpoints hold the provider's call ids, their step keys derived from them
    assert [[call["call_id"] for call in body["calls"]] for _, body in bodies] == [[a, b], [c]]
    assert all(call["step_key"] for _, body in bodies for call in body["calls"])
    for (_, body), reply in zip(bodies, (step1, step2), strict=True):
        if "usage" in body:  # stored by the runner (its part of the contract)
            assert body["usage"]["request_id"] == reply.headers[p.request_id_header]


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_arguments_against_the_schema_are_told_back_not_sent(
    db_url: str, sim: ProviderServer, p: Provider,
) -> None:
    made: list[str] = []
    tools = tools_for(made)
    model = p.make(sim, tools=tools)
    bad = p.call_id()
    sim.script(p.name, p.answer(None, [(bad, "jira_get_issue", {"key": 7})]), p.answer("ok"))
    outcome = await run_in_process(db_url, model, tools, {})
    assert outcome.status == "completed"
    assert made == []  # never sent to the vendor
    ((cid, result, error),) = p.results_sent(sim.requests(p.name)[-1].body)
    assert (cid, error) == (bad, True)
    assert "arguments.key: expected string, got integer" in str(result)


class Listening:
    """The adapter asked as the engine asks it when someone listens to the run's events:
    every step with ``on_text``; the pieces kept with their step."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.pieces: list[tuple[int, str]] = []

    async def step(self, request: StepRequest) -> ModelStep:
        def on_text(piece: str) -> None:
            self.pieces.append((request.step, piece))

        return await self.model.step(dataclasses.replace(request, on_text=on_text))

    def text(self, step: int) -> str:
        return "".join(piece for at, piece in self.pieces if at == step)


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_streamed_run_whose_stream_is_cut_is_asked_again_and_completes(
    db_url: str, sim: ProviderServer, p: Provider,
) -> None:
    made: list[str] = []
    tools = tools_for(made)
    model = p.make(sim, tools=tools, system="You triage tickets.")
    listening = Listening(model)
    a = p.call_id()
    first_text = "Looking at the issue first."
    cut = p.answer(first_text, [(a, "jira_get_issue", {"key": "OPS-7"})])
    cut.cut_after = 5
    step1 = p.answer(first_text, [(a, "jira_get_issue", {"key": "OPS-7"})])
    final = "OPS-7 is open and waiting on billing."
    sim.script(p.name, cut, step1, p.answer(final))
    outcome = await run_in_process(db_url, model, tools, {"ticket_id": "T-1"},
                                   asked=listening)
    assert outcome.status == "completed", outcome
    assert outcome.answer["text"] == final
    got = sim.requests(p.name)
    assert [(r.problems, r.streamed) for r in got] == [([], True)] * 3
    assert got[0].events == 5 and [assistant_turns(r.body) for r in got] == [0, 0, 1]
    # the cut stream is a transient failure, counted, and step 1 asked again
    attempts = query(db_url, "select step, target, attempts from ticketiq.attempts "
                     "where run_id = %s order by step", outcome.run_id)
    assert [tuple(row) for row in attempts] == [(1, "model", 1)]
    assert made == ["jira:OPS-7"]
    # step 1's pieces: the cut stream's first ones, then the whole text of the try that
    # succeeded; the last step's text, whole
    cut_short = listening.text(1)[:-len(first_text)]
    assert listening.text(1).endswith(first_text) and cut_short
    assert first_text.startswith(cut_short)
    assert listening.text(2) == final
    assert p.calls_sent(got[2].body) == [[(a, "jira_get_issue", {"key": "OPS-7"})]]


# -- a kill after the first checkpoint, in real worker processes -------------------------


FAST_LEASES = {
    "TICKETIQ_LEASE_TTL": "2",
    "TICKETIQ_RENEW_INTERVAL": "0.4",
    "TICKETIQ_SELF_FENCE_MARGIN": "0.3",
    "TICKETIQ_SWEEP_INTERVAL": "0.5",
    "TICKETIQ_POLL_INTERVAL": "0.2",
}

SURVIVOR_LEASES = {"TICKETIQ_LEASE_TTL": "8", "TICKETIQ_RENEW_INTERVAL": "1",
                   "TICKETIQ_SELF_FENCE_MARGIN": "1"}


class ThreeSteps:
    """The provider's side of the run: step 1 two calls, step 2 one, step 3 the answer,
    by how many steps the request had answered; every answer given is kept."""

    def __init__(self, p: Provider) -> None:
        self.p = p
        self.given: list[tuple[int, Reply]] = []

    def __call__(self, request: Recorded) -> Reply:
        done = assistant_turns(request.body)
        if done == 0:
            reply = self.p.answer("Reading the issue and the ticket.", [
                (self.p.call_id(), "jira_get_issue", {"key": "OPS-7"}),
                (self.p.call_id(), "tickets_get", {"ticket_id": "T-1"})])
        elif done == 1:
            reply = self.p.answer(None, [(self.p.call_id(), "jira_get_issue", {"key": "OPS-8"})])
        else:
            reply = self.p.answer("T-1 triaged.")
        self.given.append((done + 1, reply))
        return reply


def wait_for(stack: Stack, sql: str, *params: Any, timeout: float = 30.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = stack.query(sql, *params)
        if rows:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {sql}")


def accept_ticket(stack: Stack) -> str:
    """A webhook entry for ticket T-1; its sender id."""
    sender = f"adapter-{uuid.uuid4().hex[:8]}"
    stack.query("select * from ticketiq.accept_entry('webhook', %s, %s::jsonb, 'alice', "
                "'alice', 'webhook')", sender, '{"ticket_id": "T-1"}')
    return sender


def survivor_answers(stack: Stack, env: dict[str, str], sender: str) -> None:
    """A second worker takes the run over and answers the entry."""
    # The survivor holds its own lease for the default 8 s: a 2 s lease can lapse on a
    # busy machine, and a run lost again is rightly asked its unwritten step again.
    survivor = spawn_cli_worker(stack, "survivor", "--app-dir", str(TESTS),
                                app="adapter_app:app", **{**env, **SURVIVOR_LEASES})
    ((state, outcome),) = wait_for(
        stack, "select state, outcome from ticketiq.entries where sender_id = %s "
        "and state not in ('pending', 'running')", sender)
    assert (state, outcome["text"]) == ("answered", "T-1 triaged."), survivor.stderr_text()
    survivor.terminate()


@pytest.mark.slow
@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
def test_a_killed_run_resumes_without_asking_the_provider_again(
    stack: Stack, sim: ProviderServer, p: Provider,
) -> None:
    script = ThreeSteps(p)
    sim.respond(p.name, script)
    env = {**FAST_LEASES, "ADAPTER_PROVIDER": p.name, "ADAPTER_BASE_URL": p.url(sim)}
    sender = accept_ticket(stack)

    victim = spawn_cli_worker(stack, "victim", "--app-dir", str(TESTS), app="adapter_app:app",
                              TICKETIQ_FAULTS="after_checkpoint@1", **env)
    assert victim.wait(30) == KILLED, victim.stderr_text()
    ((run_id, epoch),) = stack.query(
        "select run_id, epoch from ticketiq.checkpoints where step = 1")
    assert [step for step, _ in script.given] == [1], victim.stderr_text()  # asked once, killed

    survivor_answers(stack, env, sender)

    # counted at the provider: each step asked once; step 1 never again after its checkpoint
    got = sim.requests(p.name)
    assert [r.problems for r in got] == [[]] * 3
    assert Counter(assistant_turns(r.body) + 1 for r in got) == Counter({1: 1, 2: 1, 3: 1})
    # the survivor sent the victim's step 1 back, with the provider's ids from the checkpoint
    first = [c for c in p.calls_sent(got[1].body)[0]]
    assert [cid for cid, _, _ in first] == call_ids(p, script.given[0][1])
    assert [cid for cid, _, _ in p.results_sent(got[1].body)] == call_ids(p, script.given[0][1])
    ((status, losses),) = stack.query(
        "select status, loss_count from ticketiq.runs where run_id = %s", run_id)
    assert (status, losses, epoch) == ("completed", 1, 1)
    assert stack.query("select count(*) from ticketiq.audit where run_id = %s "
                       "and event = 'agent.run.crash_resumed'", run_id) == [(1,)]


def call_ids(p: Provider, reply: Reply) -> list[str]:
    if p.name == "openai":
        return [c["id"] for c in reply.body["choices"][0]["message"]["tool_calls"]]
    return [b["id"] for b in reply.body["content"] if b["type"] == "tool_use"]


@pytest.mark.slow
@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
def test_a_run_killed_while_its_step_streams_is_asked_that_step_again(
    stack: Stack, sim: ProviderServer, p: Provider,
) -> None:
    script = ThreeSteps(p)
    held: list[Reply] = []

    def holding_the_first(request: Recorded) -> Reply:
        reply = script(request)
        if not held:
            reply.hold_after = 5  # within step 1's text, in both wire formats
            held.append(reply)
        return reply

    sim.respond(p.name, holding_the_first)
    env = {**FAST_LEASES, "ADAPTER_PROVIDER": p.name, "ADAPTER_BASE_URL": p.url(sim),
           "ADAPTER_STREAM": "1"}
    sender = accept_ticket(stack)
    victim = spawn_cli_worker(stack, "victim", "--app-dir", str(TESTS), app="adapter_app:app",
                              **env)
    deadline = time.monotonic() + 30
    while not (held and sim.requests(p.name)[0].events == 5):
        assert time.monotonic() < deadline, victim.stderr_text()
        time.sleep(0.02)
    victim.kill()  # SIGKILL, with step 1 half streamed
    # Released, the rest goes to a dead socket (the first write of it may still succeed).
    held[0].release.set()
    assert victim.wait(10) == KILLED
    assert stack.query("select count(*) from ticketiq.checkpoints") == [(0,)]

    survivor_answers(stack, env, sender)

    got = sim.requests(p.name)
    assert [(r.problems, r.streamed) for r in got] == [([], True)] * 4
    # step 1 asked again (its answer was never written), every later step once
    assert [assistant_turns(r.body) + 1 for r in got] == [1, 1, 2, 3]
    # the survivor went on with the answer it was streamed, not the victim's
    second = call_ids(p, script.given[1][1])
    assert [cid for cid, _, _ in p.calls_sent(got[2].body)[0]] == second
    ((run_id, status, losses),) = stack.query(
        "select run_id, status, loss_count from ticketiq.runs")
    assert (status, losses) == ("completed", 1)
    assert stack.query("select count(*) from ticketiq.audit where run_id = %s "
                       "and event = 'agent.run.crash_resumed'", run_id) == [(1,)]
