"""The provider adapters through their real SDK clients, against the local provider server.

Each case runs through both adapters (``OpenAIChatModel``, ``AnthropicModel``), their
official SDKs pointed (``base_url``) at :class:`ProviderServer`, which records every
request, answers 400 to one that breaks the provider's documented rules, and answers
the rest from its script.  Judged from the requests it recorded (fields, roles, tool
definitions, results linked to calls by id) and the ``ModelStep``\\ s the adapters made.
No database, no network; the runs with a runner and a kill are in test_adapter_runs.py.
A step asked with ``on_text`` (someone listens to the run's events) is streamed: the
same cases run both ways where the answer must not differ.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from provider_cases import ANTHROPIC, IDS, OPENAI, PROVIDERS, Provider

from harness.provider_sim import (
    ProviderServer,
    Reply,
    anthropic_events,
    openai_chunks,
    text_pieces,
)
from harness.provider_sim.checks import check_chat_request, check_messages_request
from ticketiq_pg import CallContext, ModelStep, StepRequest, ToolCall, Tools
from ticketiq_pg.agent import assistant_message, tool_message, user_message
from ticketiq_pg.errors import TransientError
from ticketiq_pg.retries import is_transient, retry_after

INPUT = {"ticket_id": "T-1", "event": "created"}
tools = Tools()


@tools.function("jira.get_issue")
async def get_issue(call: CallContext, key: str) -> dict[str, Any]:
    """Read a Jira issue by its key."""
    return {"key": key}


@tools.read("tickets.get", description="Read a ticket.",
            parameters={"type": "object", "properties": {"ticket_id": {"type": "string"}},
                        "required": ["ticket_id"]})
async def get_ticket(call: CallContext) -> dict[str, Any]:
    return {}


@pytest.fixture
def sim() -> Iterator[ProviderServer]:
    with ProviderServer.start() as server:
        yield server


def request(step: int, conversation: list[dict[str, Any]], input: Any = INPUT,
            on_text: Callable[[str], None] | None = None) -> StepRequest:
    return StepRequest(uuid.UUID(int=7), step, conversation, input, on_text=on_text)


#: A step asked plainly, and asked with someone listening (streamed).
WAYS = [False, True]
WAY_IDS = ["plain", "streamed"]


def asked_as(sent: Any, streamed: bool, p: Provider) -> None:
    """The request was a stream exactly when someone listened."""
    assert sent.body.get("stream") is (True if streamed else None)
    if p is OPENAI:
        assert sent.body.get("stream_options") == ({"include_usage": True} if streamed
                                                   else None)


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_multi_step_conversation_with_parallel_calls_and_a_tool_error(
    sim: ProviderServer, p: Provider,
) -> None:
    model = p.make(sim, tools=tools, system="You triage tickets.", temperature=0.2,
                   max_tokens=300)
    first, second = p.call_id(), p.call_id()
    asking = p.answer("Reading both.", [(first, "jira_get_issue", {"key": "OPS-7"}),
                                        (second, "tickets_get", {"ticket_id": "T-1"})])
    sim.script(p.name, asking, p.answer("T-1 is P1 for billing."))
    conversation = [user_message(INPUT)]
    step1 = await model.step(request(1, conversation))
    # the provider's ids are the call ids; the library's names come back
    assert step1.calls == (ToolCall(first, "jira.get_issue", {"key": "OPS-7"}),
                           ToolCall(second, "tickets.get", {"ticket_id": "T-1"}))
    assert step1.text == "Reading both."
    assert step1.request_id == asking.headers[p.request_id_header]
    conversation += [assistant_message(step1), tool_message(first, {"key": "OPS-7"}),
                     tool_message(second, {"error": "TimeoutError: the ticket service"})]
    step2 = await model.step(request(2, conversation))
    assert step2.final and step2.text == "T-1 is P1 for billing."

    one, two = sim.requests(p.name)
    assert (one.problems, two.problems, one.status, two.status) == ([], [], 200, 200)
    body = two.body
    assert body["model"] == p.model and p.system(body) == "You triage tickets."
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens" if p is OPENAI else "max_tokens"] == 300
    # the tools under their provider names, with descriptions and object schemas
    assert p.tool_defs(body) == {
        "jira_get_issue": ("Read a Jira issue by its key.", {
            "type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"],
            "additionalProperties": False}),
        "tickets_get": ("Read a ticket.", {
            "type": "object", "properties": {"ticket_id": {"type": "string"}},
            "required": ["ticket_id"]}),
    }
    # step 1's calls replayed with the provider's ids, each result linked by its id
    assert p.calls_sent(body) == [[(first, "jira_get_issue", {"key": "OPS-7"}),
                                   (second, "tickets_get", {"ticket_id": "T-1"})]]
    assert p.results_sent(body) == [
        (first, {"key": "OPS-7"}, False),
        (second, {"error": "TimeoutError: the ticket service"}, True)]
    # the run's input is the first user message, as text
    user = body["messages"][1 if p is OPENAI else 0]
    text = user["content"] if p is OPENAI else user["content"][0]["text"]
    assert user["role"] == "user" and text == '{"ticket_id": "T-1", "event": "created"}'
    if p is ANTHROPIC:  # the step's text rides in the assistant turn before its tool_use
        assert body["messages"][1]["content"][0] == {"type": "text", "text": "Reading both."}
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    else:
        assert [m["role"] for m in body["messages"]] == [
            "system", "user", "assistant", "tool", "tool"]


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_usage_and_request_id_ride_on_the_step(sim: ProviderServer, p: Provider) -> None:
    model = p.make(sim, tools=tools)
    if p is OPENAI:
        reply = p.answer("ok", prompt_tokens=120, completion_tokens=30, cached_tokens=64,
                         reasoning_tokens=5)
        usage = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150,
                 "cached_tokens": 64, "reasoning_tokens": 5}
    else:
        reply = p.answer("ok", input_tokens=120, output_tokens=30, cache_read=64,
                         cache_creation=8)
        usage = {"input_tokens": 120, "output_tokens": 30, "cached_tokens": 64,
                 "cache_creation_tokens": 8}
    sim.script(p.name, reply)
    step = await model.step(request(1, [user_message("hello")]))
    assert step.usage == usage
    assert step.request_id == reply.headers[p.request_id_header]
    assert step.request_id.startswith("req_")


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_settings_per_app_and_per_run(sim: ProviderServer, p: Provider) -> None:
    model = p.make(sim, system="app prompt", temperature=0.5, params={"top_k": 4}
                   if p is ANTHROPIC else {"seed": 4})
    sim.script(p.name, p.answer("a"), p.answer("b"))
    await model.step(request(1, [user_message(INPUT)]))
    per_run = {**INPUT, "model_settings": {"model": "bigger-model", "temperature": 0,
                                           "system": "run prompt", "stop": ["END"]}}
    await model.step(request(1, [user_message(per_run)], per_run))
    app, run = (r.body for r in sim.requests(p.name))
    assert (app["model"], app["temperature"], p.system(app)) == (p.model, 0.5, "app prompt")
    assert (run["model"], run["temperature"], p.system(run)) == ("bigger-model", 0, "run prompt")
    assert run["stop" if p is OPENAI else "stop_sequences"] == ["END"]
    assert run["top_k" if p is ANTHROPIC else "seed"] == 4  # app params kept
    # the settings are not part of what the model is asked
    user = run["messages"][1 if p is OPENAI else 0]
    assert "model_settings" not in str(user["content"])
    with pytest.raises(ValueError, match="unknown model settings"):
        await model.step(request(1, [user_message("x")], {"model_settings": {"temp": 1}}))
    assert len(sim.requests(p.name)) == 2  # never sent


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_call_left_without_a_result_is_answered_as_an_error(
    sim: ProviderServer, p: Provider,
) -> None:
    model = p.make(sim, tools=tools)
    sim.script(p.name, p.answer("done"))
    lost = p.call_id()
    step = ModelStep("", (ToolCall(lost, "tickets.get", {"ticket_id": "T-1"}),))
    await model.step(request(2, [user_message("x"), assistant_message(step),
                                 tool_message("call_from_nowhere", {"x": 1})]))
    (sent,) = sim.requests(p.name)
    assert sent.problems == []
    assert p.results_sent(sent.body) == [
        (lost, {"error": "no result was recorded for this call"}, True)]


# -- errors: the SDKs' own, let through for the runner to judge ------------------------


@pytest.mark.parametrize("streamed", WAYS, ids=WAY_IDS)
@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
@pytest.mark.parametrize(("status", "name", "transient"), [
    (429, "RateLimitError", True), (500, "InternalServerError", True),
    (503, "InternalServerError", True), (529, "InternalServerError", True),
    (400, "BadRequestError", False),
    (401, "AuthenticationError", False), (404, "NotFoundError", False),
])
async def test_sdk_errors_pass_through_and_the_runner_judges_them(
    sim: ProviderServer, p: Provider, status: int, name: str, transient: bool,
    streamed: bool,
) -> None:
    """Streamed, the provider refuses before any event, with the same status."""
    model = p.make(sim)
    sim.script(p.name, p.error(status, retry_after=1.5 if status == 429 else None))
    pieces: list[str] = []
    with pytest.raises(Exception) as raised:
        await model.step(request(1, [user_message("x")],
                                 on_text=pieces.append if streamed else None))
    error = raised.value
    assert name in {k.__name__ for k in type(error).__mro__}
    assert type(error).__module__.split(".")[0] == p.name  # the SDK's own class
    assert getattr(error, "status_code", None) == status
    assert is_transient(error) is transient
    assert retry_after(error) == (1.5 if status == 429 else None)
    (sent,) = sim.requests(p.name)  # the SDK did not retry (max_retries=0)
    asked_as(sent, streamed, p)
    assert pieces == []


@pytest.mark.parametrize("streamed", WAYS, ids=WAY_IDS)
@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_timeout_and_a_dropped_connection_are_transient(
    sim: ProviderServer, p: Provider, streamed: bool,
) -> None:
    model = p.make(sim, timeout=0.3)
    sim.script(p.name, Reply(200, {}, delay=1.0), Reply(drop=True))
    on_text = [].append if streamed else None
    began = time.monotonic()
    with pytest.raises(Exception) as timed_out:
        await model.step(request(1, [user_message("x")], on_text=on_text))
    assert time.monotonic() - began < 0.9
    assert type(timed_out.value).__name__ == "APITimeoutError"
    with pytest.raises(Exception) as dropped:
        await model.step(request(1, [user_message("x")], on_text=on_text))
    assert "APIConnectionError" in {k.__name__ for k in type(dropped.value).__mro__}
    assert is_transient(timed_out.value) and is_transient(dropped.value)
    for sent in sim.requests(p.name):
        asked_as(sent, streamed, p)
    assert len(sim.requests(p.name)) == 2


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_an_app_client_gets_its_retries_turned_off(sim: ProviderServer, p: Provider
                                                         ) -> None:
    if p is OPENAI:
        from openai import AsyncOpenAI as Client
    else:
        from anthropic import AsyncAnthropic as Client
    client = Client(api_key="k", base_url=p.url(sim), max_retries=5)
    model = p.adapter(p.model, client=client)
    sim.script(p.name, p.error(503))
    with pytest.raises(Exception, match="503"):
        await model.step(request(1, [user_message("x")]))
    assert len(sim.requests(p.name)) == 1
    await model.aclose()


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_without_its_sdk_an_adapter_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, p: Provider,
) -> None:
    monkeypatch.setitem(sys.modules, p.name, None)
    model = p.adapter(p.model, api_key="k")
    with pytest.raises(ImportError, match=rf"pip install 'ticketiq-pg\[{p.name}\]'"):
        await model.step(request(1, [user_message("x")]))


@pytest.mark.parametrize("streamed", WAYS, ids=WAY_IDS)
@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_arguments_that_are_not_an_object_are_given_as_malformed_not_raised(
    sim: ProviderServer, p: Provider, streamed: bool,
) -> None:
    """The step is not asked again: the call comes with empty arguments and the reason,
    which the runner tells the model (tests/test_model_errors.py runs it)."""
    model = p.make(sim, tools=tools)
    call_id = p.call_id()
    bad = p.answer(None, [(call_id, "tickets_get", {})])
    if p is OPENAI:
        bad.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"ticket'
        why = "not JSON"
    else:
        bad.body["content"][0]["input"] = ["T-1"]
        why = "a JSON array, not an object"
    sim.script(p.name, bad)
    step = await model.step(request(1, [user_message("x")],
                                    on_text=[].append if streamed else None))
    ((call,),) = [step.calls]
    assert (call.call_id, call.tool, call.arguments) == (call_id, "tickets.get", {})
    assert call.malformed is not None and why in call.malformed
    (sent,) = sim.requests(p.name)
    asked_as(sent, streamed, p)
    assert sent.streamed is streamed


# -- streaming: the text as it comes, the same step at the end -----------------------


#: Usage with every count each provider reports (the stream carries it elsewhere).
FULL_USAGE = {"openai": {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 64,
                         "reasoning_tokens": 5},
              "anthropic": {"input_tokens": 120, "output_tokens": 30, "cache_read": 64,
                            "cache_creation": 8}}


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_streamed_step_hands_its_text_in_pieces_and_equals_the_whole_answer(
    sim: ProviderServer, p: Provider,
) -> None:
    model = p.make(sim, tools=tools, system="You triage tickets.")
    calls = [(p.call_id(), "jira_get_issue", {"key": "OPS-7", "fields": ["summary"]}),
             (p.call_id(), "tickets_get", {"ticket_id": "T-1"})]
    text = "Reading the issue and the ticket before I triage it."
    whole, streamed_reply = (p.answer(text, calls, **FULL_USAGE[p.name]) for _ in range(2))
    sim.script(p.name, whole, streamed_reply)
    plain = await model.step(request(1, [user_message(INPUT)]))
    pieces: list[str] = []
    streamed = await model.step(request(1, [user_message(INPUT)], on_text=pieces.append))

    assert len(pieces) == len(text_pieces(text)) > 1
    assert "".join(pieces) == streamed.text == plain.text == text
    assert streamed.calls == plain.calls == (
        ToolCall(calls[0][0], "jira.get_issue", {"key": "OPS-7", "fields": ["summary"]}),
        ToolCall(calls[1][0], "tickets.get", {"ticket_id": "T-1"}))
    assert streamed.usage == plain.usage and plain.usage is not None
    assert len(plain.usage) == (5 if p is OPENAI else 4)  # every count, none lost
    header = p.request_id_header
    assert (plain.request_id, streamed.request_id) == (whole.headers[header],
                                                       streamed_reply.headers[header])
    one, two = sim.requests(p.name)
    assert (one.problems, two.problems) == ([], [])
    assert (one.streamed, two.streamed) == (False, True)
    asked_as(one, False, p)
    asked_as(two, True, p)
    # nothing else differs in what was asked
    assert {k: v for k, v in two.body.items() if k not in ("stream", "stream_options")} \
        == one.body


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_stream_cut_mid_way_raises_a_transient_error_after_its_first_pieces(
    sim: ProviderServer, p: Provider,
) -> None:
    """The pieces handed before the cut are the stream's first: handed as they came, not
    at the end (the end never came)."""
    model = p.make(sim)
    text = "one two three four five six"
    cut = p.answer(text)
    cut.cut_after = 4
    sim.script(p.name, cut)
    pieces: list[str] = []
    with pytest.raises(Exception) as raised:
        await model.step(request(1, [user_message("x")], on_text=pieces.append))
    error = raised.value
    assert "APIConnectionError" in {k.__name__ for k in type(error).__mro__}
    assert type(error).__module__.split(".")[0] == p.name  # the SDK's own class
    assert is_transient(error)
    assert 0 < len(pieces) < len(text_pieces(text))
    assert text.startswith("".join(pieces))
    (sent,) = sim.requests(p.name)
    assert (sent.streamed, sent.events) == (True, 4)


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_the_text_is_handed_while_the_rest_of_the_stream_is_still_to_come(
    sim: ProviderServer, p: Provider,
) -> None:
    """The server holds the stream right after its first text event until the first
    piece is handed: an adapter that waited for the end would get it only when the hold
    lapsed (30 s), with every event sent."""
    model = p.make(sim, timeout=60)
    reply = p.answer("one two three four")
    reply.hold_after = 2 if p is OPENAI else 4  # the events up to the first text delta
    sim.script(p.name, reply)
    seen: list[tuple[str, int]] = []

    def on_text(piece: str) -> None:
        seen.append((piece, sim.requests(p.name)[0].events))
        reply.release.set()

    step = await model.step(request(1, [user_message("x")], on_text=on_text))
    # handed while the server still held the rest: no event past the hold was sent yet
    # (the server counts an event once it is written, so the count may lag the bytes)
    assert seen[0][0] == "one " and seen[0][1] <= reply.hold_after, seen
    assert [piece for piece, _ in seen] == text_pieces(step.text) == ["one ", "two ", "three ",
                                                                      "four"]
    assert sim.requests(p.name)[0].events > reply.hold_after + 3


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_stream_that_stops_before_its_end_is_transient(sim: ProviderServer,
                                                               p: Provider) -> None:
    """The body ends in order, but without the answer's finish: not an answer."""
    model = p.make(sim)
    stopped = p.answer("one two three four")
    stopped.cut_after, stopped.cut_cleanly = 4, True
    sim.script(p.name, stopped)
    with pytest.raises(TransientError, match="the stream ended before its"):
        await model.step(request(1, [user_message("x")], on_text=[].append))
    assert sim.requests(p.name)[0].events == 4


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
@pytest.mark.parametrize("server_side", [True, False], ids=["server-side", "refused"])
async def test_an_error_event_mid_stream_is_judged_by_its_type(
    sim: ProviderServer, p: Provider, server_side: bool,
) -> None:
    """The SDKs raise an error event with the stream's 200: an overload or a server error
    mid-stream is still transient (tried again), a refused request is not."""
    model = p.make(sim)
    failing = p.answer("one two three four")
    failing.cut_after = 3
    failing.error_event = p.error_event(p.server_side_error() if server_side
                                        else "invalid_request_error")
    sim.script(p.name, failing)
    with pytest.raises(Exception) as raised:
        await model.step(request(1, [user_message("x")], on_text=[].append))
    error = raised.value
    assert is_transient(error) is server_side
    if server_side:
        assert isinstance(error, TransientError)
        assert "the stream failed once begun" in str(error)
        cause = error.__cause__
        assert cause is not None and type(cause).__module__.split(".")[0] == p.name
        assert p.server_side_error() in str(cause)
    else:
        assert type(error).__module__.split(".")[0] == p.name
    assert sim.requests(p.name)[0].events == 4


async def test_a_streamed_refusal_is_handed_as_the_steps_text(sim: ProviderServer) -> None:
    """OpenAI's refusal stands for the text of a refused step, streamed or not."""
    model = OPENAI.make(sim)
    refusals = [OPENAI.answer(None) for _ in range(2)]
    for reply in refusals:
        reply.body["choices"][0]["message"]["refusal"] = "I can't help with that request."
    sim.script("openai", *refusals)
    plain = await model.step(request(1, [user_message("x")]))
    pieces: list[str] = []
    streamed = await model.step(request(1, [user_message("x")], on_text=pieces.append))
    assert len(pieces) > 1
    assert "".join(pieces) == streamed.text == plain.text == "I can't help with that request."


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_a_streamed_step_without_text_hands_nothing(sim: ProviderServer, p: Provider
                                                          ) -> None:
    model = p.make(sim, tools=tools)
    call_id = p.call_id()
    sim.script(p.name, p.answer(None, [(call_id, "tickets_get", {"ticket_id": "T-1"})]))
    pieces: list[str] = []
    step = await model.step(request(1, [user_message("x")], on_text=pieces.append))
    assert (pieces, step.text) == ([], "")
    assert step.calls == (ToolCall(call_id, "tickets.get", {"ticket_id": "T-1"}),)
    (sent,) = sim.requests(p.name)
    asked_as(sent, True, p)
    assert sent.streamed


# -- the server's checks can fail ------------------------------------------------------


def test_the_wire_checks_catch_what_the_providers_refuse() -> None:
    call = {"id": "call_abc", "type": "function",
            "function": {"name": "jira.get", "arguments": "{}"}}
    problems = check_chat_request({"model": "m", "messages": [
        {"role": "user", "content": "x"}, {"role": "assistant", "content": None,
                                           "tool_calls": [call]},
        {"role": "user", "content": "y"}, {"role": "tool", "tool_call_id": "call_zzz",
                                           "content": "{}"}], "tools": [{"type": "function"}],
        "bogus": 1})
    assert any("Unrecognized" in p or "unrecognized" in p for p in problems)
    assert any("function.name: invalid" in p for p in problems)
    assert any("must be followed by tool messages" in p for p in problems)
    assert any("must be a response to a preceding message" in p for p in problems)
    problems = check_messages_request({"model": "m", "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1x",
                                           "name": "a.b", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "tool_result", "tool_use_id": "toolu_1x",
                                      "content": "{}"}]},
        {"role": "system", "content": "x"}]}, {})
    for text in ("max_tokens", "first message must use the user role", "name: invalid",
                 "tool_result blocks must come first", "'user' or 'assistant'",
                 "anthropic-version", "x-api-key"):
        assert any(text in p for p in problems), (text, problems)
    user = [{"role": "user", "content": "x"}]
    assert check_chat_request({"model": "m", "messages": user, "stream": True,
                               "stream_options": {"include_usage": True}}) == []
    assert check_chat_request({"model": "m", "messages": user, "stream": "yes",
                               "stream_options": {"include_usage": 1}}) == [
        "stream: a boolean", "stream_options: only allowed when 'stream' is enabled",
        "stream_options.include_usage: a boolean"]
    assert check_messages_request({"model": "m", "max_tokens": 5, "messages": user,
                                   "stream": 1}) == ["stream: a boolean"]


def test_the_streamed_answers_are_in_pieces_and_put_together_give_the_answer() -> None:
    """What the local server streams: more than one text delta, a tool call's arguments
    in more than one piece, joined equal to the whole answer; usage only when asked."""
    import json

    calls = [("call_1", "jira_get_issue", {"key": "OPS-7", "fields": ["summary"]})]
    completion = OPENAI.answer("Reading the issue now.", calls).body
    chunks = [data for _, data in openai_chunks(completion, include_usage=True)]
    assert chunks[-1] == "[DONE]" and chunks[-2]["choices"] == []
    assert chunks[-2]["usage"] == completion["usage"]
    deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
    text = [d["content"] for d in deltas if d.get("content")]
    arguments = [t["function"]["arguments"] for d in deltas for t in d.get("tool_calls", ())]
    assert len(text) > 1 and "".join(text) == "Reading the issue now."
    assert len([a for a in arguments if a]) > 1
    assert json.loads("".join(arguments)) == calls[0][2]
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    assert all("usage" not in c for c in (d for _, d in openai_chunks(completion)[:-1]))

    message = ANTHROPIC.answer("Reading the issue now.", calls).body
    events = anthropic_events(message)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    text = [d["text"] for d in deltas if d["type"] == "text_delta"]
    partial = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert len(text) > 1 and "".join(text) == "Reading the issue now."
    assert len(partial) > 1 and json.loads("".join(partial)) == calls[0][2]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert events[-2][1]["usage"]["output_tokens"] == message["usage"]["output_tokens"]


# -- the example's setting -------------------------------------------------------------


def example_app(monkeypatch: pytest.MonkeyPatch, setting: str, base_url: str) -> Any:
    import importlib.util
    from pathlib import Path

    monkeypatch.setenv("TRIAGE_MODEL", setting)
    monkeypatch.setenv("TRIAGE_MODEL_BASE_URL", base_url)
    path = Path(__file__).resolve().parent.parent / "examples" / "triage" / "app.py"
    spec = importlib.util.spec_from_file_location(f"triage_app_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("p", PROVIDERS, ids=IDS)
async def test_the_example_switches_to_a_provider_by_its_setting(
    monkeypatch: pytest.MonkeyPatch, sim: ProviderServer, p: Provider,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY" if p is OPENAI else "ANTHROPIC_API_KEY", "test-key")
    example = example_app(monkeypatch, f"{p.name}:{p.model}", p.url(sim))
    assert isinstance(example.app.model, p.adapter)
    assert type(example_app(monkeypatch, "scripted", "").app.model).__name__ == "TriageModel"
    comment = example.tools.get("tickets.comment")
    assert comment.validate({"ticket_id": "T-1", "team": "sales", "text": "x"}) == (
        'arguments.team: "sales" is not one of ["support", "billing", "accounts", '
        '"security"]')
    sim.script(p.name, p.answer(None, [(p.call_id(), "tickets_get", {"ticket_id": "T-1"})]))
    event = {"event_id": "created:T-1", "ticket_id": "T-1", "type": "ticket.created"}
    step = await example.app.model.step(request(1, [user_message(event)], event))
    await example.app.model.aclose()
    assert step.calls[0].tool == "tickets.get"
    (sent,) = sim.requests(p.name)
    assert sent.problems == [] and sent.body["model"] == p.model
    assert p.system(sent.body).startswith("You triage support tickets.")
    offered = p.tool_defs(sent.body)
    assert sorted(offered) == ["tickets_comment", "tickets_get"]
    assert offered["tickets_comment"][1]["required"] == ["ticket_id", "team", "text"]
    with pytest.raises(ValueError, match="TRIAGE_MODEL='gemini:x'"):
        example.make_model("gemini:x")


def test_both_adapters_show_their_keywords_to_help() -> None:
    """help() and editors read the signature: every keyword the guide documents is in it,
    with the default ProviderModel gives it (not hidden behind ``**options``)."""
    import inspect

    from ticketiq_pg import AnthropicModel, OpenAIChatModel
    from ticketiq_pg.adapters.base import ProviderModel

    base = inspect.signature(ProviderModel.__init__).parameters
    for cls in (OpenAIChatModel, AnthropicModel):
        params = inspect.signature(cls).parameters
        assert not [p for p in params.values() if p.kind is p.VAR_KEYWORD], cls
        for name, param in base.items():
            if name != "self":
                assert params[name].default == param.default, (cls, name)
    assert inspect.signature(OpenAIChatModel).parameters["system_role"].default == "system"
    assert OpenAIChatModel("m", system_role="developer", api_key="k").system_role == "developer"
    with pytest.raises(ValueError, match="system_role must be one of system$"):
        AnthropicModel("m", system_role="developer", api_key="k")
