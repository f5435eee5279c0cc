"""Model errors a model or a person can mend, through the OpenAI SDK against the local
provider server, over a real PostgreSQL:

* malformed tool arguments (not JSON, a JSON array) are skipped with their reason,
  told to the model and audited with the step; the run goes on, and a model that sends
  them ``max_malformed`` steps in a row fails the run with that reason;
* a provider outage of 60 s answered 529 to every request: with the default model
  retry policy every run rides it out, keeps its lease (no loss, its first epoch) and
  is listed retrying, with the provider's last status, by ``ticketiq-pg status``;
* opted in (``RetryPolicy(suspend=True)``), a run whose provider stays down past the
  budget is suspended, not failed, and a later model step that succeeds wakes it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import psycopg
import pytest
from procs import SEAL_KEYS
from provider_cases import OPENAI
from psycopg.rows import dict_row
from test_adapter_runs import FAST, START, query, tools_for

from harness.provider_sim import ProviderServer, Recorded, Reply, openai_error
from ticketiq_pg import RetryPolicy, TicketIQ, Tools
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db import inspect
from ticketiq_pg.ops.render import render_status
from ticketiq_pg.retries import MODEL_RETRY
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.outage import WAIT_KEY
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.seal import Sealer


@pytest.fixture
def sim() -> Any:
    with ProviderServer.start() as server:
        yield server


def with_raw_arguments(reply: Reply, raw: str) -> Reply:
    """The completion with its first tool call's ``arguments`` string replaced by ``raw``."""
    body = json.loads(json.dumps(reply.body))
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = raw
    return Reply(reply.status, body, reply.headers, reply.delay)


def runner_for(db: TicketIQ, model: Any, tools: Tools, **options: Any) -> Runner:
    leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
    options.setdefault("model_retry", FAST)
    return Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), model, tools,
                  tool_retry=FAST, **options)


@pytest.mark.parametrize("raw", ['{"key": "OPS-7"', '["OPS-7"]'], ids=["not_json", "array"])
async def test_malformed_arguments_are_told_to_the_model_which_mends_them(
    db_url: str, sim: ProviderServer, raw: str,
) -> None:
    made: list[str] = []
    tools = tools_for(made)
    model = OPENAI.make(sim, tools=tools)
    bad, good = OPENAI.call_id(), OPENAI.call_id()
    sim.script("openai",
               with_raw_arguments(OPENAI.answer(None, [(bad, "jira_get_issue", {})]), raw),
               OPENAI.answer(None, [(good, "jira_get_issue", {"key": "OPS-7"})]),
               OPENAI.answer("OPS-7 is open."))
    async with await TicketIQ.connect(db_url) as db:
        outcome = await runner_for(db, model, tools).start_and_run(**START, input={})
        await model.aclose()
    assert outcome.status == "completed", outcome
    got = sim.requests("openai")
    assert len(got) == 3  # each step asked once: the malformed one was not asked again
    assert made == ["jira:OPS-7"]  # the malformed call never reached its tool
    results = OPENAI.results_sent(got[1].body)
    ((cid, result, error),) = results
    assert (cid, error) == (bad, True)
    why = "not JSON" if raw.startswith("{") else "a JSON array, not an object"
    assert why in result["error"] and "invalid arguments" in result["error"]
    # recorded with its step: audited, and the step's checkpoint holds the reason
    audited = query(db_url, "select detail from ticketiq.audit where run_id = %s and "
                    "event = 'agent.run.malformed_arguments'", outcome.run_id)
    assert [(d["step"], d["call_id"]) for (d,) in audited] == [(1, bad)]
    ((calls,),) = query(db_url, "select body -> 'calls' from ticketiq.checkpoints "
                        "where run_id = %s and step = 1", outcome.run_id)
    assert why in calls[0]["malformed"]


async def test_malformed_arguments_in_a_row_fail_the_run_with_the_reason(
    db_url: str, sim: ProviderServer,
) -> None:
    made: list[str] = []
    tools = tools_for(made)
    model = OPENAI.make(sim, tools=tools)
    sim.script("openai", *(
        with_raw_arguments(OPENAI.answer(None, [(OPENAI.call_id(), "jira_get_issue", {})]),
                           "key=OPS-7") for _ in range(3)))
    async with await TicketIQ.connect(db_url) as db:
        runner = runner_for(db, model, tools)
        assert runner.max_malformed == 3
        outcome = await runner.start_and_run(**START, input={})
        await model.aclose()
    assert outcome.status == "failed"
    assert "malformed tool arguments in 3 steps in a row" in outcome.reason
    assert "not JSON" in outcome.reason
    assert len(sim.requests("openai")) == 3 and made == []
    ((reason,),) = query(db_url, "select failure_reason from ticketiq.runs where run_id = %s",
                         outcome.run_id)
    assert "malformed tool arguments" in reason


def outage_until(until: float, then: Any) -> Any:
    """A responder: 529 overloaded for every request before ``until``, then ``then()``."""

    def respond(_: Recorded) -> Reply:
        if time.time() < until:
            return openai_error(529, "Overloaded")
        return then()

    return respond


async def test_a_60s_outage_of_529s_is_ridden_out_by_the_default_policy(
    db_url: str, sim: ProviderServer,
) -> None:
    """Every run completes, keeps its lease throughout and shows as retrying meanwhile."""
    outage = 60.0
    tools = tools_for([])
    model = OPENAI.make(sim, tools=tools)
    started = time.time()
    sim.respond("openai", outage_until(started + outage, lambda: OPENAI.answer("done")))
    seen: list[dict[str, Any]] = []

    def look() -> None:
        with psycopg.connect(db_url, autocommit=True, row_factory=dict_row) as conn:
            report = inspect.status(conn)
        seen.append(report)

    async with await TicketIQ.connect(db_url) as db:
        runner = runner_for(db, model, tools, model_retry=MODEL_RETRY)
        runner.leases.start()
        try:
            runs = [asyncio.create_task(runner.start_and_run(**START, input={"n": n}))
                    for n in range(4)]
            await asyncio.sleep(outage / 2)
            await asyncio.to_thread(look)
            outcomes = await asyncio.gather(*runs)
        finally:
            await runner.leases.stop()
            await model.aclose()
    assert [o.status for o in outcomes] == ["completed"] * 4, outcomes
    got = sim.requests("openai")
    overloaded = [r for r in got if r.status == 529]
    # The runs tried through the whole outage: each run's tries are at most a wait apart
    # (MODEL_RETRY.max_delay, 10 s) and its first success came after the outage, so its
    # last 529 came within a wait of the end (all four may have waited from 54 s to 60 s).
    assert overloaded and overloaded[-1].at - started >= outage - MODEL_RETRY.max_delay - 1
    assert max(r.at for r in got) - started >= outage  # ...and the answers after it
    ids = [o.run_id for o in outcomes]
    rows = query(db_url, "select epoch, loss_count from ticketiq.runs where run_id = any(%s)",
                 ids)
    assert rows == [(1, 0)] * 4  # the lease was kept: never lost, never taken over
    # Half-way through, status listed every run as retrying, with the provider's 529.
    retrying = seen[0]["runs_retrying"]
    assert retrying["count"] == 4
    assert {r["run_id"] for r in retrying["rows"]} == set(ids)
    assert {r["last_status"] for r in retrying["rows"]} == {529}
    assert all(r["lease_holder"] == "proc-a" and r["tries"] >= 2 for r in retrying["rows"])
    assert "runs retrying the model: 4" in render_status(seen[0])


async def test_opted_in_a_run_past_its_budget_is_suspended_and_woken_by_a_later_success(
    db_url: str, sim: ProviderServer,
) -> None:
    tools = tools_for([])
    model = OPENAI.make(sim, tools=tools)
    policy = RetryPolicy(attempts=100, first_delay=0.01, max_delay=0.05, timeout=5,
                         max_elapsed=0.5, suspend=True)
    up = {"now": False}
    sim.respond("openai", lambda _: OPENAI.answer("done") if up["now"]
                else openai_error(503, "down"))
    async with await TicketIQ.connect(db_url) as db:
        runner = runner_for(db, model, tools, model_retry=policy)
        first = await runner.start_and_run(**START, may_wait=True, input={"n": 1})
        assert first.status == "suspended", first
        ((status, wait_key, failure),) = query(
            db_url, "select status::text, wait_key, failure_reason from ticketiq.runs "
            "where run_id = %s", first.run_id)
        assert (status, wait_key, failure) == ("suspended", WAIT_KEY, None)
        # A run that may not wait is failed past the same budget, as before.
        other = await runner.start_and_run(**START, input={"n": 2})
        assert other.status == "failed" and "the model failed" in other.reason
        up["now"] = True
        later = await runner.start_and_run(**START, input={"n": 3})
        assert later.status == "completed"
        # The later success woke the suspended run: claimed, and adopted it completes.
        sent = runner.leases.sent_at()
        adopted = await db.adopt_runs(runner.holder, runner.leases.ttl)
        assert [a.run_id for a in adopted] == [first.run_id]
        resumed = await runner.resume(adopted[0], sent)
        await model.aclose()
    assert resumed.status == "completed", resumed
    events = [e for (e,) in query(db_url, "select event from ticketiq.audit where run_id = %s"
                                  " order by audit_id", first.run_id)]
    assert "agent.run.suspended" in events
