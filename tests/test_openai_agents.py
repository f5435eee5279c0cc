"""An OpenAI Agents SDK agent as a ticketiq-pg app (ticketiq_pg.integrations.openai_agents).

Offline, through the SDK itself: its ``OpenAIChatCompletionsModel`` on an ``AsyncOpenAI``
client pointed at the local OpenAI-wire server (harness.provider_sim), which answers from
a script and records every request.  Each run beside the SDK's own ``Runner.run`` on the
same agent and the same script: the same answer, the same tools made; here each step is
checkpointed and a write marked in doubt before it is sent, and a handoff is a child run
found by its delegation key.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    GuardrailFunctionOutput,
    InputGuardrail,
    InputGuardrailTripwireTriggered,
    OpenAIChatCompletionsModel,
    OutputGuardrail,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    Runner,
    WebSearchTool,
    function_tool,
)
from helpers import run_app, run_example_test  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from procs import SEAL_KEYS  # noqa: E402

from harness.provider_sim import (  # noqa: E402
    ProviderServer,
    Recorded,
    Reply,
    assistant_turns,
    openai_call_id,
    openai_completion,
)
from ticketiq_pg.integrations.openai_agents import (  # noqa: E402
    agent_app,
    current_call,
    read,
    write,
)
from ticketiq_pg.testing import calls, checkpoints, runs  # noqa: E402

PLAIN = RunConfig(tracing_disabled=True)


def sdk_model(sim: ProviderServer) -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=sim.openai_url, api_key="test-key", max_retries=0)
    return OpenAIChatCompletionsModel("gpt-4o-mini", openai_client=client)


def system_of(request: Recorded) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "system")


async def run(db_url: str, app: Any, input: Any) -> Any:
    return await run_app(db_url, app, input, SEAL_KEYS)


def triage_agent(sim: ProviderServer, made: list[tuple[str, Any]]) -> Agent[Any]:
    @function_tool
    async def get_ticket(ticket_id: str) -> str:
        """Read a ticket by its id."""
        made.append(("get_ticket", ticket_id))
        return json.dumps({"id": ticket_id, "title": "Checkout down"})

    @function_tool
    async def post_comment(ticket_id: str, text: str) -> str:
        """Post a comment on a ticket."""
        try:
            key = current_call().step_key
        except LookupError:  # the SDK's own run: no ticketiq-pg call
            key = None
        made.append(("post_comment", (ticket_id, text, key)))
        return "posted"

    return Agent(name="triage", instructions="You triage tickets.", model=sdk_model(sim),
                 tools=[get_ticket, post_comment])


def triage_script(request: Recorded) -> Reply:
    done = assistant_turns(request.body)
    if done == 0:
        return openai_completion(None, [(openai_call_id(), "get_ticket", {"ticket_id": "T-1"})])
    if done == 1:
        return openai_completion(None, [(openai_call_id(), "post_comment",
                                         {"ticket_id": "T-1", "text": "Triage: P2."})])
    return openai_completion("T-1 triaged.")


async def test_an_agent_with_function_tools_runs_as_the_sdk_runs_it(db_url: str) -> None:
    with ProviderServer.start() as sim:
        sim.respond("openai", triage_script)
        made: list[tuple[str, Any]] = []
        agent = triage_agent(sim, made)
        plain = await Runner.run(agent, "T-1", run_config=PLAIN)
        by_sdk, made[:] = list(made), []
        asked_by_sdk = len(sim.requests("openai"))

        app = agent_app(agent, routes={
            "get_ticket": read(), "post_comment": write(takes_key=True, dedupe_window=math.inf)})
        outcome = await run(db_url, app, "T-1")
        assert outcome.status == "completed", outcome
        assert outcome.answer["text"] == plain.final_output == "T-1 triaged."
        assert [(t, a if t == "get_ticket" else a[:2]) for t, a in made] == [
            (t, a if t == "get_ticket" else a[:2]) for t, a in by_sdk]
        assert made[1][1][2] is not None  # the write was sent with its step key
        # asked once per step, as the SDK asks; the agent's instructions as its system prompt
        ours = sim.requests("openai")[asked_by_sdk:]
        assert len(ours) == asked_by_sdk == 3
        assert {system_of(r) for r in ours} == {"You triage tickets."}
        assert [c.step for c in checkpoints(db_url, outcome.run_id)] == [1, 2]
        (comment,) = [c for c in calls(db_url, outcome.run_id) if c.tool == "post_comment"]
        assert (comment.classification, comment.state) == ("write", "done")
        assert comment.marked_at is not None and comment.step_key == made[1][1][2]


async def test_a_handoff_is_a_delegation_to_a_child_run(db_url: str) -> None:
    with ProviderServer.start() as sim:
        def script(request: Recorded) -> Reply:
            if system_of(request) == "You handle billing.":
                return openai_completion("Refund issued for T-1.")
            return openai_completion(None, [(openai_call_id(), "transfer_to_billing", {})])

        sim.respond("openai", script)
        billing = Agent(name="billing", instructions="You handle billing.", model=sdk_model(sim))
        triage = Agent(name="triage", instructions="You route tickets.", model=sdk_model(sim),
                       handoffs=[billing])
        plain = await Runner.run(triage, "T-1 wants a refund", run_config=PLAIN)
        outcome = await run(db_url, agent_app(triage), "T-1 wants a refund")
        assert outcome.status == "completed", outcome
        assert outcome.answer["text"] == plain.final_output == "Refund issued for T-1."
        (child,) = [r for r in runs(db_url) if r["parent_run_id"] == outcome.run_id]
        assert (child["status"], child["entry_point"]) == ("completed", "delegation")
        (over,) = calls(db_url, outcome.run_id)
        assert (over.tool, over.classification) == ("transfer_to_billing", "delegation")
        assert over.step_key  # the delegation key a resume finds the child by
        # the child was given the conversation so far
        assert over.arguments["agent"] == "billing"
        assert over.arguments["input"][0]["content"] == "T-1 wants a refund"


async def test_guardrails_run_in_the_step_and_a_tripwire_fails_the_run(db_url: str) -> None:
    async def no_refunds(ctx: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(None, tripwire_triggered="refund" in json.dumps(input))

    async def no_secrets(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(None, tripwire_triggered="secret" in str(output))

    with ProviderServer.start() as sim:
        sim.respond("openai", lambda request: openai_completion("The secret is 42."))
        agent = Agent(name="triage", instructions="You triage tickets.", model=sdk_model(sim),
                      input_guardrails=[InputGuardrail(no_refunds, run_in_parallel=False)],
                      output_guardrails=[OutputGuardrail(no_secrets)])
        for prompt, tripped in (("I want a refund", InputGuardrailTripwireTriggered),
                                ("Tell me", OutputGuardrailTripwireTriggered)):
            with pytest.raises(tripped) as plain:
                await Runner.run(agent, prompt, run_config=PLAIN)
            asked = len(sim.requests("openai"))
            outcome = await run(db_url, agent_app(agent), prompt)
            assert (outcome.status, outcome.reason) == ("failed", str(plain.value)), outcome
            # the input guardrail tripped before the model was asked; the output one after
            assert len(sim.requests("openai")) - asked == (
                0 if tripped is InputGuardrailTripwireTriggered else 1)
            assert checkpoints(db_url, outcome.run_id) == []


def test_what_cannot_be_carried_is_refused_with_why() -> None:
    with pytest.raises(ValueError, match="tool_use_behavior"):
        agent_app(Agent(name="a", tool_use_behavior="stop_on_first_tool"))
    with pytest.raises(TypeError, match="WebSearchTool is not a function tool"):
        agent_app(Agent(name="a", tools=[WebSearchTool()]))
    with pytest.raises(ValueError, match=r"routes name tools the agents do not have: \['x'\]"):
        agent_app(Agent(name="a"), routes={"x": read()})


def test_the_examples_own_test_passes(pg_server_url: str, tmp_path: Any) -> None:
    """``examples/openai_agents/test_agent.py`` (the SDK's chat-completions model against
    the local OpenAI-wire server, two workers, the holder SIGKILLed with a write in flight
    over 10 runs and mid model step over 6: none lost, no write doubled by the service's
    own record, no finished step asked again) passes as an app author runs it."""
    example = Path(__file__).resolve().parents[1] / "examples" / "openai_agents"
    run_example_test(example, "test_agent.py", pg_server_url, tmp_path / "pytest", passed=2)
