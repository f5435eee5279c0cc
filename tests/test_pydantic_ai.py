"""A Pydantic AI agent as a ticketiq-pg app (ticketiq_pg.integrations.pydantic_ai), offline.

Driven by Pydantic AI's own test models over a real PostgreSQL, in a :class:`Runner` as
tests/test_adapter_runs.py builds one: ``TestModel`` (calls every tool, then answers) and
``FunctionModel`` (a scripted model that sees what the agent would show a provider).
Judged from the checkpoints, the calls' rows and what the tools did.  The runs through
Pydantic AI's OpenAI model, with a SIGKILL, are examples/pydantic_ai/test_agent.py's
(tests/test_example_app.py runs it).
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

import psycopg  # noqa: E402
from helpers import run_app, run_example_test  # noqa: E402
from procs import SEAL_KEYS  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, ModelRetry, RunContext  # noqa: E402
from pydantic_ai import Tool as PydanticTool  # noqa: E402
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded  # noqa: E402
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
from pydantic_ai.tools import ToolDefinition  # noqa: E402
from pydantic_ai.toolsets import (  # noqa: E402
    ApprovalRequiredToolset,
    ExternalToolset,
    FunctionToolset,
    PrefixedToolset,
)
from pydantic_ai.usage import UsageLimits  # noqa: E402

from ticketiq_pg.agent import StepRequest, user_message  # noqa: E402
from ticketiq_pg.integrations.pydantic_ai import (  # noqa: E402
    AgentModel,
    agent_app,
    agent_input,
    agent_tools,
    current_call,
    read,
    write,
)
from ticketiq_pg.testing import calls, checkpoints  # noqa: E402


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
    return await run_app(db_url, app, input, SEAL_KEYS)


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
    # each result linked to its call by the id the model gave; ModelRetry told back as
    # Pydantic AI tells it (a retried tool return)
    assert [(p.tool_name, p.tool_call_id, p.outcome) for p in returns] == [
        ("get_ticket", "c-1a", "success"), ("post_comment", "c-2a", "retried")]
    assert returns[1].content == "say more than that"
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
    # judged by the tool's own Pydantic validator, as Pydantic AI judges it
    assert post.validate({"ticket_id": 1, "text": "x"}) is not None
    assert "string_type" in post.validate({"ticket_id": 1, "text": "x"})
    with pytest.raises(ValueError, match=r"routes name tools the agent does not have: \['nope'\]"):
        agent_tools(agent, {"nope": read()})
    assert isinstance(agent_app(agent).model, AgentModel)
    with pytest.raises(LookupError):
        current_call()


def test_the_examples_own_test_passes(pg_server_url: str, tmp_path: Any) -> None:
    """``examples/pydantic_ai/test_agent.py`` (Pydantic AI's OpenAI model against the local
    OpenAI-wire server, two workers, the holder SIGKILLed mid model step over 6 runs and
    mid tool call over 10: none lost, no write doubled by the service's own record, no
    finished step asked again) passes as an app author runs it."""
    example = Path(__file__).resolve().parents[1] / "examples" / "pydantic_ai"
    run_example_test(example, "test_agent.py", pg_server_url, tmp_path / "pytest", passed=3)


# -- issue 44: each finding beside plain Pydantic AI on the same agent --------------------


class Verdict(BaseModel):
    label: str
    score: int


class NewTicket(BaseModel):
    title: str
    priority: int


async def plain(agent: Agent[Any, Any], prompt: Any, **kwargs: Any) -> Any:
    """Plain Pydantic AI: the run's output, or the exception it ended with."""
    try:
        return (await agent.run(prompt, **kwargs)).output
    except Exception as exc:  # noqa: BLE001 - compared with the durable run's reason
        return exc


def counters(db_url: str, run_id: Any) -> list[dict[str, Any]]:
    with psycopg.connect(db_url) as conn:
        return [row[0] for row in conn.execute(
            "select body -> 'counters' from ticketiq.checkpoints where run_id = %s "
            "order by step", (run_id,))]


def kinds(message: ModelMessage) -> list[str]:
    """A message as its parts' kinds (and a tool return's outcome), to compare what the
    model was shown."""
    return [type(p).__name__ + (f":{p.outcome}" if isinstance(p, ToolReturnPart) else "")
            for p in message.parts]


async def test_1_structured_output_is_validated_and_a_refused_answer_asked_again(
        db_url: str) -> None:
    asked: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(messages)
        tries = sum(isinstance(m, ModelResponse) for m in messages)
        score: Any = "very high" if tries == 0 else 9
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name,
                                                 {"label": "bug", "score": score}, f"o-{tries}")])

    agent = Agent(FunctionModel(model), output_type=Verdict)
    assert await plain(agent, "T-1") == Verdict(label="bug", score=9)
    by_plain, asked[:] = list(asked), []
    outcome = await run(db_url, agent_app(agent), "T-1")
    assert outcome.status == "completed", outcome
    assert json.loads(outcome.answer["text"]) == {"label": "bug", "score": 9}
    # asked twice, as Pydantic AI asks: the second time told why, as Pydantic AI tells it
    assert len(asked) == len(by_plain) == 2
    assert [kinds(m) for m in asked[1]] == [kinds(m) for m in by_plain[1]]
    assert kinds(asked[1][-1]) == ["ToolReturnPart:retried"]
    # the refused answer is a checkpointed step; its count rides in the counters
    assert [c.calls for c in checkpoints(db_url, outcome.run_id)] == [0]
    assert counters(db_url, outcome.run_id)[0]["refused_answers"] == 1


async def test_1_an_answer_refused_past_the_agents_output_retries_fails_the_run(
        db_url: str) -> None:
    asked: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(len(messages))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name,
                                                 {"label": "bug", "score": "high"})])

    agent = Agent(FunctionModel(model), output_type=Verdict, retries=2)
    failed = await plain(agent, "T-1")
    assert isinstance(failed, UnexpectedModelBehavior)
    by_plain, asked[:] = len(asked), []
    outcome = await run(db_url, agent_app(agent), "T-1")
    assert outcome.status == "failed" and str(failed) in outcome.reason, outcome
    assert len(asked) == by_plain == 3
    assert [c.step for c in checkpoints(db_url, outcome.run_id)] == [1, 2]


async def test_2_an_output_validator_is_run_and_its_model_retry_asks_again(
        db_url: str) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tries = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[TextPart("bad" if tries == 0 else "good")])

    agent = Agent(FunctionModel(model))
    seen: list[str] = []

    @agent.output_validator
    def not_bad(ctx: RunContext[None], output: str) -> str:
        seen.append(output)
        if output == "bad":
            raise ModelRetry("not bad, please")
        return output.upper()

    assert await plain(agent, "T-1") == "GOOD"
    outcome = await run(db_url, agent_app(agent), "T-1")
    assert (outcome.status, outcome.answer["text"]) == ("completed", "GOOD"), outcome
    assert seen == ["bad", "good", "bad", "good"]


async def test_3_tool_arguments_are_judged_as_pydantic_ai_judges_them(db_url: str) -> None:
    made: list[tuple[Any, ...]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done == 0:  # lax: "4" is 4
            return ModelResponse(parts=[ToolCallPart(
                "create", {"t": {"title": "Export", "priority": "4"}}, "c-1")])
        if done == 1:  # not a number at all: refused, told, counted
            return ModelResponse(parts=[ToolCallPart(
                "create", {"t": {"title": "Export", "priority": "high"}}, "c-2")])
        return ModelResponse(parts=[TextPart("created")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def create(t: NewTicket) -> str:
        made.append((t.title, t.priority))
        return "T-9"

    assert await plain(agent, "T-1") == "created"
    by_plain, made[:] = list(made), []
    app = agent_app(agent, routes={"create": write()})
    outcome = await run(db_url, app, "T-1")
    assert (outcome.status, outcome.answer["text"]) == ("completed", "created"), outcome
    assert made == by_plain == [("Export", 4)]
    # the refused call was never marked nor made: the model was told Pydantic AI's errors
    rows = {c.call_id: c for c in calls(db_url, outcome.run_id)}
    assert rows["c-1"].state == "done" and rows["c-2"].marked_at is None


async def test_3_a_tools_retries_are_counted_as_pydantic_ai_counts_them(db_url: str) -> None:
    asked: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(messages)
        return ModelResponse(parts=[ToolCallPart("create", {"t": {"title": "x"}})])

    agent = Agent(FunctionModel(model), retries=2)

    @agent.tool_plain
    def create(t: NewTicket) -> str:
        return "T-9"

    failed = await plain(agent, "T-1")
    assert isinstance(failed, UnexpectedModelBehavior)
    by_plain, asked[:] = list(asked), []
    outcome = await run(db_url, agent_app(agent, routes={"create": write()}), "T-1")
    assert outcome.status == "failed" and str(failed).split(".")[0] in outcome.reason, outcome
    assert len(asked) == len(by_plain) == 3
    assert kinds(asked[-1][-1]) == kinds(by_plain[-1][-1]) == ["ToolReturnPart:retried"]


async def test_4_a_dynamic_system_prompt_is_evaluated_for_each_run(db_url: str) -> None:
    shown: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        shown.append(next(p.content for p in messages[0].parts
                          if isinstance(p, SystemPromptPart)))
        return ModelResponse(parts=[TextPart("ok")])

    day = ["Monday"]
    agent = Agent(FunctionModel(model))

    @agent.system_prompt(dynamic=True)
    def today() -> str:
        return f"Today is {day[0]}."

    app = agent_app(agent)
    for today_is in ("Monday", "Tuesday"):
        day[0] = today_is
        assert await plain(agent, "T-1") == "ok"
        assert (await run(db_url, app, "T-1")).status == "completed"
    assert shown == ["Today is Monday."] * 2 + ["Today is Tuesday."] * 2


async def test_5_a_message_history_is_passed_as_history(db_url: str) -> None:
    shown: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        shown.append(messages)
        return ModelResponse(parts=[TextPart(f"answer {len(messages)}")])

    agent = Agent(FunctionModel(model), system_prompt="You triage tickets.")
    first = await agent.run("T-1 is down")
    assert await plain(agent, "And now?", message_history=first.all_messages()) == "answer 3"
    by_plain = shown[-1]
    outcome = await run(db_url, agent_app(agent),
                        agent_input("And now?", message_history=first.all_messages()))
    assert (outcome.status, outcome.answer["text"]) == ("completed", "answer 3"), outcome
    assert [kinds(m) for m in shown[-1]] == [kinds(m) for m in by_plain]
    assert shown[-1][0].parts[-1].content == "T-1 is down"
    assert shown[-1][-1].parts[-1].content == "And now?"


async def test_5_usage_limits_are_honoured(db_url: str) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[ToolCallPart("get", {"n": done}, f"a-{done}"),
                                    ToolCallPart("get", {"n": done}, f"b-{done}")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def get(n: int) -> int:
        return n

    for limits, reason in ((UsageLimits(request_limit=2), "limit of 2 model steps"),
                           (UsageLimits(tool_calls_limit=3), None)):
        failed = await plain(agent, "T-1", usage_limits=limits)
        assert isinstance(failed, UsageLimitExceeded)
        outcome = await run(db_url, agent_app(agent, routes={"get": read()},
                                              usage_limits=limits), "T-1")
        assert outcome.status == "failed", outcome
        assert (reason or str(failed)) in outcome.reason, (failed, outcome)
    with pytest.raises(ValueError, match="total_tokens_limit: a run's token and cost totals"):
        agent_app(agent, usage_limits=UsageLimits(total_tokens_limit=100))


async def test_5_toolsets_wrapping_function_tools_are_carried(db_url: str) -> None:
    made: list[str] = []

    def lookup(ticket_id: str) -> str:
        made.append(ticket_id)
        return "Checkout down"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("crm_lookup", {"ticket_id": "T-1"})])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model),
                  toolsets=[PrefixedToolset(FunctionToolset([lookup]), prefix="crm")])
    assert await plain(agent, "T-1") == "done"
    outcome = await run(db_url, agent_app(agent, routes={"crm_lookup": read()}), "T-1")
    assert outcome.status == "completed" and made == ["T-1", "T-1"], (outcome, made)


async def test_5_a_step_streams_its_text_to_the_runs_events(db_url: str) -> None:
    """With the run watched (``StepRequest.on_text``), a step is asked through Pydantic
    AI's streaming API and each piece of its text handed on as it comes; a model that
    only streams (a FunctionModel with only a stream function) runs as Pydantic AI runs
    it, watched or not."""
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        for piece in ("the ", "ticket ", "is ", "fixed"):
            yield piece

    agent = Agent(FunctionModel(stream_function=stream))
    async with agent.run_stream("T-1") as streamed:  # plain Pydantic AI streams it so
        assert await streamed.get_output() == "the ticket is fixed"
    app = agent_app(agent)
    pieces: list[str] = []
    answer = await app.model.step(StepRequest(uuid.uuid4(), 1, [user_message("T-1")], "T-1",
                                              on_text=pieces.append))
    assert pieces == ["the ", "ticket ", "is ", "fixed"] and answer.text == "the ticket is fixed"
    outcome = await run(db_url, app, "T-1")
    assert outcome.status == "completed" and outcome.answer["text"] == "the ticket is fixed"


def test_5_what_cannot_be_carried_is_refused_with_why() -> None:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        yield "streamed"

    async def handler(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    handled = Agent(FunctionModel(stream_function=stream))
    handled._event_stream_handler = handler  # noqa: SLF001 - how Pydantic AI keeps it
    with pytest.raises(ValueError, match="event_stream_handler"):
        agent_app(handled)
    with pytest.raises(ValueError, match="end_strategy='exhaustive'"):
        agent_app(Agent(TestModel(), end_strategy="exhaustive"))
    external = ExternalToolset([ToolDefinition(name="ask_human")])
    with pytest.raises(TypeError, match="ExternalToolset cannot be checkpointed"):
        agent_app(Agent(TestModel(), toolsets=[external]))
    def close_ticket(ticket_id: str) -> str:
        return "closed"

    approve = ApprovalRequiredToolset(FunctionToolset([close_ticket]))
    with pytest.raises(TypeError, match="asks for approval"):
        agent_app(Agent(TestModel(), toolsets=[approve]))


async def test_6_an_unclassified_write_is_warned_about_once_at_start(
        db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    name = f"note_{uuid.uuid4().hex[:8]}"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(name, {"text": "P2"})])
        return ModelResponse(parts=[TextPart("noted")])

    def note(text: str) -> str:
        return "ok"

    agent = Agent(FunctionModel(model), tools=[PydanticTool(note, name=name)])
    with caplog.at_level(logging.DEBUG):
        app = agent_app(agent)
        at_start = [r for r in caplog.records if r.levelno == logging.WARNING
                    and name in r.getMessage()]
        for _ in range(3):
            assert (await run(db_url, app, "T-1")).status == "completed"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                and name in r.getMessage()]
    assert len(at_start) == 1 and warnings == at_start, [r.getMessage() for r in warnings]
    assert "would settle as unknown" in at_start[0].getMessage()


@pytest.mark.slow
def test_a_refused_answer_is_a_step_a_resume_does_not_ask_again(stack: Any) -> None:
    """Killed right after the step that holds a refused answer was written: the survivor
    asks only the next step, told the agent's retry prompt from the checkpoint, and the
    run ends with a valid output; the refusal's count rode in the checkpoint."""
    from procs import KILLED, spawn_cli_worker

    from harness.provider_sim import ProviderServer, Recorded, Reply, openai_completion

    def script(request: Recorded) -> Reply:
        asked = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
        score: Any = "very high" if asked == 0 else 9
        return openai_completion(None, [(f"call_{asked}", "final_result",
                                         {"label": "bug", "score": score})])

    fast = {"TICKETIQ_LEASE_TTL": "2", "TICKETIQ_RENEW_INTERVAL": "0.4",
            "TICKETIQ_SELF_FENCE_MARGIN": "0.3", "TICKETIQ_SWEEP_INTERVAL": "0.5",
            "TICKETIQ_POLL_INTERVAL": "0.2"}
    tests = str(Path(__file__).resolve().parent)
    with ProviderServer.start() as sim:
        sim.respond("openai", script)
        env = {**fast, "VERDICT_BASE_URL": sim.openai_url}
        sender = f"verdict-{uuid.uuid4().hex[:8]}"
        stack.query("select * from ticketiq.accept_entry('webhook', %s, %s::jsonb, 'alice', "
                    "'alice', 'webhook')", sender, '{"ticket_id": "T-1"}')
        victim = spawn_cli_worker(stack, "victim", "--app-dir", tests,
                                  app="pydantic_verdict_app:app",
                                  TICKETIQ_FAULTS="after_checkpoint@1", **env)
        assert victim.wait(60) == KILLED, victim.stderr_text()
        ((body,),) = stack.query("select body from ticketiq.checkpoints where step = 1")
        assert body["calls"] == [] and body["counters"]["refused_answers"] == 1
        survivor = spawn_cli_worker(stack, "survivor", "--app-dir", tests,
                                    app="pydantic_verdict_app:app",
                                    **{**env, "TICKETIQ_LEASE_TTL": "8",
                                       "TICKETIQ_RENEW_INTERVAL": "1",
                                       "TICKETIQ_SELF_FENCE_MARGIN": "1"})
        deadline = time.monotonic() + 60
        while not (done := stack.query(
                "select state, outcome from ticketiq.entries where sender_id = %s "
                "and state not in ('pending', 'running')", sender)):
            assert time.monotonic() < deadline, survivor.stderr_text()
            time.sleep(0.1)
        survivor.terminate()
        ((state, outcome),) = done
        assert state == "answered", (state, outcome)
        assert json.loads(outcome["text"]) == {"label": "bug", "score": 9}
        got = sim.requests("openai")
        assert len(got) == 2  # the refused step was not asked again
        # the survivor's request told the model why, as Pydantic AI tells it
        told = [m for m in got[1].body["messages"] if m["role"] == "tool"]
        assert len(told) == 1 and "score" in told[0]["content"], got[1].body["messages"]
