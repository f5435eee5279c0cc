"""A Pydantic AI agent as a ticketiq-pg app (ticketiq_pg.integrations.pydantic_ai), offline.

Driven by Pydantic AI's own test models over a real PostgreSQL, in a :class:`Runner` as
tests/test_adapter_runs.py builds one: ``TestModel`` (calls every tool, then answers) and
``FunctionModel`` (a scripted model that sees what the agent would show a provider).
Judged from the checkpoints, the calls' rows and what the tools did.  The runs through
Pydantic AI's OpenAI model, with a SIGKILL, are examples/pydantic_ai/test_agent.py's
(tests/test_example_app.py runs it).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from helpers import run_example_test  # noqa: E402
from procs import SEAL_KEYS  # noqa: E402
from pydantic_ai import Agent, ModelRetry, RunContext  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from ticketiq_pg import RetryPolicy, TicketIQ  # noqa: E402
from ticketiq_pg.config import parse_seal_keys  # noqa: E402
from ticketiq_pg.integrations.pydantic_ai import (  # noqa: E402
    AgentModel,
    agent_app,
    agent_tools,
    current_call,
    read,
    write,
)
from ticketiq_pg.runtime.leases import LeaseKeeper  # noqa: E402
from ticketiq_pg.runtime.runner import Runner  # noqa: E402
from ticketiq_pg.seal import Sealer  # noqa: E402
from ticketiq_pg.testing import calls, checkpoints  # noqa: E402

START = {"owner": "alice", "run_as": "alice", "channel": "playground", "entry_point": "test"}
FAST = RetryPolicy(attempts=2, first_delay=0.01, max_delay=0.05, timeout=5)


def ticket_agent(model: Any, made: list[tuple[str, Any]]) -> Agent[str, str]:
    """The agent as Pydantic AI's docs write one: a prompt, deps, two tools."""
    agent = Agent(model, deps_type=str, system_prompt="You triage tickets.",
                  instructions="Answer in one line.")

    @agent.tool
    async def get_ticket(ctx: RunContext[str], ticket_id: str) -> dict[str, Any]:
        """Read a ticket by its id."""
        made.append(("get_ticket", (ctx.deps, ticket_id, ctx.tool_call_id)))
        return {"id": ticket_id, "title": "Checkout down"}

    @agent.tool_plain
    async def post_comment(ticket_id: str, text: str) -> str:
        """Post a comment on a ticket."""
        call = current_call()
        made.append(("post_comment", (ticket_id, call.step_key, call.classification)))
        if text == "retry":
            raise ModelRetry("say more than that")
        return "posted"

    return agent


async def run(db_url: str, app: Any, input: Any) -> Any:
    async with await TicketIQ.connect(db_url) as db:
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), app.model, app.tools,
                        model_retry=FAST, tool_retry=FAST)
        return await runner.start_and_run(**START, input=input)


async def test_an_agent_on_pydantic_ais_test_model_runs_as_a_ticketiq_run(db_url: str) -> None:
    made: list[tuple[str, Any]] = []
    app = agent_app(ticket_agent(TestModel(), made), deps="helpdesk",
                    routes={"get_ticket": read()})
    outcome = await run(db_url, app, {"ticket_id": "T-1"})
    assert outcome.status == "completed", outcome
    assert outcome.answer["text"].startswith('{"get_ticket":')  # TestModel's own answer
    # TestModel called each tool once in step 1; the agent's deps reached the tool
    ((_, (deps, _, call_id)), (_, (_, key, classification))) = sorted(made)
    assert deps == "helpdesk" and call_id and key and classification == "write"
    assert [c.step for c in checkpoints(db_url, outcome.run_id)] == [1]
    got = {c.tool: c for c in calls(db_url, outcome.run_id)}
    # the read has no row; the unclassified write was marked in doubt before it was made
    assert (got["get_ticket"].classification, got["get_ticket"].recorded) == ("read", False)
    assert got["post_comment"].classification == "write"
    assert got["post_comment"].marked_at is not None and got["post_comment"].state == "done"


async def test_a_function_model_is_shown_what_the_agent_shows_and_asked_each_step_once(
        db_url: str) -> None:
    asked: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(messages)
        assert info.instructions == "Answer in one line."
        assert [t.name for t in info.function_tools] == ["get_ticket", "post_comment"]
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done == 0:
            return ModelResponse(parts=[TextPart("Reading."),
                                        ToolCallPart("get_ticket", {"ticket_id": "T-1"}, "c-1a")])
        if done == 1:
            return ModelResponse(parts=[ToolCallPart(
                "post_comment", {"ticket_id": "T-1", "text": "retry"}, "c-2a")])
        return ModelResponse(parts=[TextPart("T-1 is for billing.")])

    made: list[tuple[str, Any]] = []
    app = agent_app(ticket_agent(FunctionModel(model), made), deps="helpdesk", routes={
        "get_ticket": read(),
        "post_comment": write(takes_key=True, dedupe_window=math.inf)})
    outcome = await run(db_url, app, {"ticket_id": "T-1"})
    assert outcome.status == "completed" and outcome.answer["text"] == "T-1 is for billing."
    assert len(asked) == 3  # one request per step, none asked again
    first = asked[0][0]
    assert isinstance(first, ModelRequest) and first.instructions == "Answer in one line."
    assert [p.content for p in first.parts if isinstance(p, SystemPromptPart)] == [
        "You triage tickets."]
    returns = [p for m in asked[2] if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, ToolReturnPart)]
    # each result linked to its call by the id the model gave; ModelRetry told back
    assert [(p.tool_name, p.tool_call_id) for p in returns] == [
        ("get_ticket", "c-1a"), ("post_comment", "c-2a")]
    assert '"say more than that"' in returns[1].content
    keyed = [c for c in calls(db_url, outcome.run_id) if c.tool == "post_comment"]
    assert len(keyed) == 1 and keyed[0].step_key and keyed[0].state == "done"


async def test_a_lost_connection_to_the_model_is_tried_again_within_the_budget(
        db_url: str) -> None:
    from pydantic_ai.exceptions import ModelConnectionError, UserError

    tries: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tries.append(len(messages))
        if len(tries) == 1:
            raise ModelConnectionError("test", "connection reset")
        return ModelResponse(parts=[TextPart("fine")])

    outcome = await run(db_url, agent_app(ticket_agent(FunctionModel(model), [])), "T-1")
    assert (outcome.status, outcome.answer["text"], tries) == ("completed", "fine", [1, 1])

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise UserError("a bug in the agent: not tried again")

    outcome = await run(db_url, agent_app(ticket_agent(FunctionModel(broken), [])), "T-2")
    assert outcome.status == "failed" and "a bug in the agent" in outcome.reason


def test_tools_keep_their_schemas_and_routes_are_checked() -> None:
    agent = ticket_agent(TestModel(), [])
    tools = agent_tools(agent, {"get_ticket": read()})
    get, post = tools.get("get_ticket"), tools.get("post_comment")
    assert get.classification == "read" and get.description == "Read a ticket by its id."
    assert get.parameters["required"] == ["ticket_id"]
    # not classified: a write without key or reader, never sent again when in doubt
    assert (post.classification, post.takes_key, post.read_back) == ("write", False, None)
    assert post.validate({"ticket_id": 1, "text": "x"}) == (
        "arguments.ticket_id: expected string, got integer")
    with pytest.raises(ValueError, match=r"routes name tools the agent does not have: \['nope'\]"):
        agent_tools(agent, {"nope": read()})
    assert isinstance(agent_app(agent).model, AgentModel)
    with pytest.raises(LookupError):
        current_call()


def test_the_examples_own_test_passes(pg_server_url: str, tmp_path: Any) -> None:
    """``examples/pydantic_ai/test_agent.py`` (Pydantic AI's OpenAI model against the local
    OpenAI-wire server, a worker SIGKILLed mid-run) passes as an app author runs it."""
    example = Path(__file__).resolve().parents[1] / "examples" / "pydantic_ai"
    run_example_test(example, "test_agent.py", pg_server_url, tmp_path / "pytest", passed=2)
