"""A step's calls made at once: reads overlap, writes are marked together just before
they are sent together, a serial tool is made alone; a process SIGKILLed while a
step's three writes are in flight loses nothing and sends nothing twice.

In-process runs time the calls' windows from inside the tools (overlap is judged by
order, not by a stopwatch bound); the kills are real worker processes
(``python -m harness.scripted``) with ``TICKETIQ_CALLS_AT_ONCE=8``, judged from the
resume's audit row and the vendor service's own record.

Invariants: I5 (write-ahead: every write marked before any is sent), I6 (settled,
never blindly resent), I14 (every resume audited).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from procs import KILLED, SEAL_KEYS, Stack

from ticketiq_pg.agent import CallContext, ModelStep, ToolCall, Tools
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.seal import Sealer

READ_SECONDS = 0.2


class OneStep:
    """A model that asks for ``calls`` at step 1 and answers at step 2."""

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls = tuple(calls)

    async def step(self, request: Any) -> ModelStep:
        return ModelStep(text="asked", calls=self.calls) if request.step == 1 else \
            ModelStep(text="done")


def timed_tools(windows: dict[str, tuple[float, float]]) -> Tools:
    tools = Tools()

    async def slow(call: CallContext) -> dict[str, Any]:
        began = time.monotonic()
        await asyncio.sleep(READ_SECONDS)
        windows[call.call_id] = (began, time.monotonic())
        return {"read": call.call_id}

    tools.read("slow.read")(slow)
    tools.read("slow.serial", serial=True)(slow)
    return tools


async def run_step(db_url: str, calls: list[ToolCall], tools: Tools,
                   calls_at_once: int = 8) -> Any:
    db = await TicketIQ.connect(db_url)
    try:
        leases = LeaseKeeper(db, "at-once", ttl=30, renew_interval=5, margin=1)
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), OneStep(calls), tools,
                        calls_at_once=calls_at_once)
        outcome = await runner.start_and_run(owner="o", run_as="o", channel="c",
                                             entry_point="test", input={})
        statements = dict(db.statements)
    finally:
        await db.close()
    assert outcome.status == "completed", outcome
    return statements


def overlapping(windows: dict[str, tuple[float, float]], ids: list[str]) -> bool:
    """Every one began before any ended: all were in flight together."""
    return max(windows[i][0] for i in ids) < min(windows[i][1] for i in ids)


async def test_a_steps_reads_are_made_at_once(db_url: str) -> None:
    windows: dict[str, tuple[float, float]] = {}
    ids = [f"r{i}" for i in range(4)]
    await run_step(db_url, [ToolCall(i, "slow.read", {}) for i in ids], timed_tools(windows))
    assert overlapping(windows, ids), windows
    # one after another, they do not overlap at all
    windows.clear()
    await run_step(db_url, [ToolCall(i, "slow.read", {}) for i in ids], timed_tools(windows),
                   calls_at_once=1)
    ordered = sorted(windows.values())
    assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:], strict=False)), windows


async def test_at_most_calls_at_once_are_in_flight(db_url: str) -> None:
    windows: dict[str, tuple[float, float]] = {}
    ids = [f"r{i}" for i in range(4)]
    await run_step(db_url, [ToolCall(i, "slow.read", {}) for i in ids], timed_tools(windows),
                   calls_at_once=2)
    in_flight = max(sum(1 for b, e in windows.values() if b <= t < e)
                    for t, _ in windows.values())
    assert in_flight == 2, windows


async def test_a_serial_tool_is_made_alone_after_the_calls_before_it(db_url: str) -> None:
    windows: dict[str, tuple[float, float]] = {}
    calls = [ToolCall("a", "slow.read", {}), ToolCall("b", "slow.read", {}),
             ToolCall("s", "slow.serial", {}), ToolCall("c", "slow.read", {}),
             ToolCall("d", "slow.read", {})]
    await run_step(db_url, calls, timed_tools(windows))
    assert overlapping(windows, ["a", "b"]) and overlapping(windows, ["c", "d"]), windows
    assert max(windows["a"][1], windows["b"][1]) <= windows["s"][0]
    assert windows["s"][1] <= min(windows["c"][0], windows["d"][0])


async def test_a_steps_writes_are_marked_in_one_statement(db_url: str) -> None:
    sent: list[str] = []
    tools = Tools()

    @tools.write("vendor.post")
    async def post(call: CallContext) -> dict[str, Any]:
        sent.append(call.call_id)
        return {"posted": call.call_id}

    calls = [ToolCall(f"w{i}", "vendor.post", {}) for i in range(3)]
    statements = await run_step(db_url, calls, tools)
    assert sorted(sent) == ["w0", "w1", "w2"]
    assert statements.get("mark_calls_in_doubt") == 1
    assert "mark_in_doubt" not in statements
    assert statements.get("record_outcome") == 3  # each recorded as it lands


# -- a kill while the writes are in flight ------------------------------------

THREE = ("--seed", "5", "--steps", "3", "--plan", "three_writes")
#: How each of the three writes is settled on resume by its route: the keyed incident
#: is sent again with its key (the vendor dedupes), the Jira comment is read back,
#: the Teams reply (no key, no reader) is reported unknown and not sent again.
BY_ROUTE = {"incident.create": "resent_same_key", "jira.comment": "read_back",
            "teams.reply": "unknown"}


@pytest.mark.parametrize("fault", ["after_mark@2", "after_call@2.1"],
                         ids=["marked-none-sent", "one-landed-two-in-flight"])
def test_a_process_killed_while_three_writes_are_in_flight_sends_none_twice(
    stack: Stack, fault: str,
) -> None:
    stack.settings["TICKETIQ_CALLS_AT_ONCE"] = "8"
    victim = stack.spawn("--start", "1", "--exit-after", "1", *THREE, faults=fault)
    run_id = victim.read_event("started")["run_id"]
    assert victim.wait(60) == KILLED, victim.stderr
    # all three were marked together, before any was sent
    marked = stack.query(
        "select tool, state, xmin::text from ticketiq.calls where run_id = %s and step = 2",
        run_id)
    assert {(tool, state) for tool, state, _ in marked} == {
        (tool, "in_doubt") for tool in BY_ROUTE}
    assert len({xid for _, _, xid in marked}) == 1  # marked by one transaction

    stack.sweep_as_if_later()
    resumer = stack.run("--exit-after", "1")
    (outcome,) = resumer.outcomes()
    assert outcome["status"] == "completed", outcome
    ((detail,),) = stack.query(
        "select detail from ticketiq.audit where run_id = %s "
        "and event = 'agent.run.crash_resumed'", run_id)
    tools = dict(stack.query("select call_id, tool from ticketiq.calls where run_id = %s "
                             "and step = 2", run_id))
    assert {tools[s["call_id"]]: s["settlement"] for s in detail["settlements"]} == BY_ROUTE
    assert stack.duplicates() == {}
