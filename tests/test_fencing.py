"""Outside calls fenced by the lease and the run's epoch (ticketiq_pg.vendors.fencing).

Against the local vendor service (a real process with its own record), over a real
PostgreSQL where a run is involved:

* the vendor service keeps the newest fencing token it has seen per run and refuses a
  changing request with an older one: 409, effect ``fenced``, nothing applied (a read
  with an old token is answered; any request with a newer one raises the newest);
* the transport checks the call's lease as the request goes out: a call whose lease
  could lapse within the margin never reaches the vendor;
* a run's call refused by its vendor while the attempt is still the run's is settled
  as ``fenced``: audited, told to the model, the run goes on; an attempt taken over
  stops (LeaseLost) and writes nothing more.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from procs import SEAL_KEYS, Stack

from ticketiq_pg import CallContext, ModelStep, StepRequest, Tool, ToolCall, Tools
from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.errors import LeaseLost
from ticketiq_pg.runtime.leases import LeaseKeeper
from ticketiq_pg.runtime.run_state import RunState
from ticketiq_pg.runtime.runner import Runner
from ticketiq_pg.seal import Sealer
from ticketiq_pg.vendors.base import VendorFenced
from ticketiq_pg.vendors.clients import VendorClients
from ticketiq_pg.vendors.fencing import CallFence, fenced

START = {"owner": "alice", "run_as": "alice", "channel": "playground", "entry_point": "test"}


def ok(_: float) -> None:
    return None


def comments(stack: Stack, issue: str) -> list[dict[str, Any]]:
    return [r for r in stack.vendor.requests("jira", path_prefix=f"/jira/rest/api/3/issue/{issue}")
            if r["method"] == "POST"]


async def test_the_vendor_refuses_a_token_older_than_one_it_has_seen(stack: Stack) -> None:
    run = str(uuid.uuid4())
    async with VendorClients.local(stack.vendor.base_url) as v:
        with fenced(CallFence(run, 1, ok)):
            await v.jira.add_comment("OPS-1", "first, epoch 1")
        with fenced(CallFence(run, 2, ok)):
            await v.jira.get_issue("OPS-1")  # a read of the newer attempt raises the newest
        with fenced(CallFence(run, 1, ok)):
            await v.jira.get_issue("OPS-1")  # an old read is answered: it changes nothing
            with pytest.raises(VendorFenced) as refused:
                await v.jira.add_comment("OPS-1", "stale, epoch 1")
            with pytest.raises(VendorFenced):
                await v.incidentio.create_incident("stale", None, "key-stale")
        with fenced(CallFence(run, 2, ok)):
            await v.jira.add_comment("OPS-1", "second, epoch 2")
        with fenced(CallFence(str(uuid.uuid4()), 1, ok)):
            await v.jira.add_comment("OPS-1", "another run, its own epochs")
    assert refused.value.status == 409 and "older than 2" in refused.value.message
    posted = comments(stack, "OPS-1")
    assert [r["effect"] for r in posted] == ["created", "fenced", "created", "created"]
    assert [r["headers"].get("TicketIQ-Fence") for r in posted][:3] == [
        f"{run}:1", f"{run}:1", f"{run}:2"]
    assert all(float(r["headers"]["TicketIQ-Sent-At"]) > 0 for r in posted)
    assert not [r for r in stack.vendor.requests("incidentio") if r["effect"] == "created"]


async def test_a_call_whose_lease_could_lapse_as_it_goes_out_is_never_sent(
        stack: Stack) -> None:
    margins: list[float] = []

    def lapsing(margin: float) -> None:
        margins.append(margin)
        if margin > 0:  # passes the check before the request is built, not the last one
            raise LeaseLost("could lapse within the margin")

    async with VendorClients.local(stack.vendor.base_url) as v:
        with fenced(CallFence(str(uuid.uuid4()), 1, lapsing)), pytest.raises(LeaseLost):
            await v.jira.add_comment("OPS-2", "never sent")
    assert margins == [0.0, 0.5]  # the client's check, then the transport's with its margin
    assert comments(stack, "OPS-2") == []


class OneCall:
    """A model that asks for one Jira comment, then answers with what it was told."""

    def __init__(self) -> None:
        self.told: list[Any] = []

    async def step(self, request: StepRequest) -> ModelStep:
        if request.step == 1:
            return ModelStep(calls=(ToolCall("call_fence1", "jira.comment",
                                             {"issue": "OPS-3"}),))
        self.told.append(request.conversation[-1])
        return ModelStep(text="done")


async def test_a_fenced_call_of_the_live_attempt_is_audited_and_told_to_the_model(
    stack: Stack,
) -> None:
    async with VendorClients.local(stack.vendor.base_url) as v, \
            await TicketIQ.connect(stack.db_url) as db:

        async def comment(ctx: CallContext) -> Any:
            return await v.jira.add_comment(ctx.arguments["issue"], "from the run")

        tools = Tools([Tool("jira.comment", "write", comment)])
        model = OneCall()
        leases = LeaseKeeper(db, "proc-a", ttl=30, renew_interval=5, margin=1)
        runner = Runner(db, leases, Sealer(parse_seal_keys(SEAL_KEYS)), model, tools)
        state = await runner.start(**START, input={})
        assert isinstance(state, RunState), state  # started, not an outcome already
        # The vendor has seen a newer attempt of this run (as after a takeover).
        with fenced(CallFence(str(state.run_id), state.epoch + 1, ok)):
            await v.jira.get_issue("OPS-3")
        outcome = await runner.run(state)
    assert outcome.status == "completed", outcome
    assert [r["effect"] for r in comments(stack, "OPS-3")] == ["fenced"]
    told = model.told[0]["content"]
    assert told["outcome"] == "fenced" and told["sent_again"] is False
    audited = stack.query("select detail ->> 'call_id' from ticketiq.audit where run_id = %s "
                          "and event = 'agent.run.call_fenced'", state.run_id)
    assert audited == [("call_fence1",)]

