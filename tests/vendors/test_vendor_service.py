"""The local vendor service, proven against the real server process.

Each test starts ``python -m harness.vendor_sim.server`` on its own SQLite
file, talks to it through the async clients (or raw HTTP for requests the clients would
never send), and judges by what the service recorded: duplicates are counted where they would land.
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import send_torn_request

from harness.vendor_sim.process import VendorService, VendorServiceError
from ticketiq_pg.retries import is_transient, retry_after
from ticketiq_pg.vendors.clients import (
    STEP_KEY_PROPERTY,
    Discord,
    IncidentIO,
    Jira,
    SNSFifo,
    SQSFifo,
    Teams,
    VendorClients,
    VendorError,
    VendorRejected,
    VendorUnavailable,
)

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/runs.fifo"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "vendors"


@pytest.fixture
def vendors(workdir: Path) -> Iterator[VendorService]:
    with VendorService.start(workdir) as service:
        yield service


@pytest.fixture
async def clients(vendors: VendorService) -> AsyncIterator[VendorClients]:
    async with VendorClients.local(vendors.base_url, timeout=5.0) as v:
        yield v


def objects(vendors: VendorService, kind: str) -> list[dict[str, Any]]:
    return vendors.effects()["objects"][kind]


def effects_of(vendors: VendorService, vendor: str) -> list[str]:
    return [r["effect"] for r in vendors.requests(vendor)]


# --------------------------------------------------------------------------- incident.io


async def test_incident_create_dedupes_on_key_forever(
    vendors: VendorService, clients: VendorClients
) -> None:
    first = await clients.incidentio.create_incident("DB down", "p1", idempotency_key="step-1")
    again = await clients.incidentio.create_incident("DB down!", "p2", idempotency_key="step-1")
    other = await clients.incidentio.create_incident("DB down", "p1", idempotency_key="step-2")

    assert again == first  # the same incident, untouched by the repeat's fields
    assert other["id"] != first["id"]
    assert [i["id"] for i in objects(vendors, "incidents")] == [first["id"], other["id"]]
    recorded = vendors.requests("incidentio")
    assert [(r["status"], r["effect"], r["key"]) for r in recorded] == [
        (201, "created", "step-1"),
        (200, "deduplicated", "step-1"),
        (201, "created", "step-2"),
    ]

    # Kept forever: long after any Discord/SQS-like window the key still dedupes.
    vendors.advance_clock(30 * 24 * 3600)
    later = await clients.incidentio.create_incident("DB down", "p1", idempotency_key="step-1")
    assert later["id"] == first["id"]
    assert vendors.effects()["by_kind"]["incidents"] == 2
    assert (await clients.incidentio.get_incident(first["id"]))["name"] == "DB down"


async def test_incident_edit_applies_once_per_key(
    vendors: VendorService, clients: VendorClients
) -> None:
    inc = await clients.incidentio.create_incident("Queue stuck", None, idempotency_key="c-1")
    first = await clients.incidentio.update_incident(inc["id"], {"summary": "one"}, "edit-1")
    second = await clients.incidentio.update_incident(inc["id"], {"summary": "two"}, "edit-2")
    repeat = await clients.incidentio.update_incident(inc["id"], {"summary": "one"}, "edit-1")

    assert first["summary"] == "one" and second["summary"] == "two"
    assert repeat == first  # the first result, again
    # ...and no second effect: the later edit stands.
    assert (await clients.incidentio.get_incident(inc["id"]))["summary"] == "two"
    edits = objects(vendors, "incident_edits")
    assert [e["idempotency_key"] for e in edits] == ["edit-1", "edit-2"]
    assert effects_of(vendors, "incidentio") == [
        "created",
        "created",
        "created",
        "deduplicated",
        "read",
    ]

    other = await clients.incidentio.create_incident("Other", None, idempotency_key="c-2")
    with pytest.raises(VendorRejected) as rejected:
        await clients.incidentio.update_incident(other["id"], {"summary": "x"}, "edit-1")
    assert rejected.value.status == 409
    with pytest.raises(VendorRejected) as missing:
        await clients.incidentio.update_incident("01NOSUCHINCIDENT", {"summary": "x"}, "e-9")
    assert missing.value.status == 404
    assert vendors.effects()["by_kind"]["incident_edits"] == 2


async def test_keyed_resend_after_a_lost_answer_makes_one_incident(
    vendors: VendorService, clients: VendorClients
) -> None:
    vendors.fault("incidentio", "drop_after_accept", path_regex=r"/v2/incidents$")
    with pytest.raises(VendorUnavailable) as lost:
        await clients.incidentio.create_incident("Disk full", None, idempotency_key="k-7")
    assert lost.value.maybe_applied
    resent = await clients.incidentio.create_incident("Disk full", None, idempotency_key="k-7")

    incidents = objects(vendors, "incidents")
    assert [i["id"] for i in incidents] == [resent["id"]]
    assert [(r["effect"], r["fault"], r["status"]) for r in vendors.requests("incidentio")] == [
        ("created", "drop_after_accept", None),
        ("deduplicated", None, 200),
    ]


async def test_concurrent_creates_with_one_key_make_one_incident(
    vendors: VendorService, clients: VendorClients
) -> None:
    results = await asyncio.gather(
        *(
            clients.incidentio.create_incident("Race", None, idempotency_key="same")
            for _ in range(20)
        )
    )
    assert len({r["id"] for r in results}) == 1
    assert vendors.effects()["by_kind"]["incidents"] == 1
    assert sorted(effects_of(vendors, "incidentio")) == ["created"] + ["deduplicated"] * 19

    comments = await asyncio.gather(
        *(clients.jira.add_comment("OPS-2", "hi", step_key="same") for _ in range(10))
    )
    assert len({c["id"] for c in comments}) == 10  # no idempotency at Jira, even when racing
    assert vendors.effects()["counts"]["jira"] == 10


# --------------------------------------------------------------------------- Jira


@pytest.mark.parametrize("sent", [0, 10], ids=["headers-only", "half-a-body"])
async def test_a_request_torn_by_a_killed_client_is_not_recorded(
    vendors: VendorService, clients: VendorClients, sent: int
) -> None:
    """A worker SIGKILLed mid-request sent nothing: only whole requests are recorded, so
    what landed is counted from requests that arrived."""
    body = json.dumps({"body": {"type": "doc", "version": 1, "content": []}}).encode()
    send_torn_request(vendors.base_url, "/jira/rest/api/3/issue/OPS-9/comment", body, sent)
    await clients.jira.add_comment("OPS-9", "whole", step_key="sk-9")
    assert [(r["method"], r["effect"]) for r in vendors.requests("jira")] == [
        ("POST", "created")]


async def test_jira_repeat_is_a_second_comment_and_the_reader_finds_it(
    vendors: VendorService, clients: VendorClients
) -> None:
    first = await clients.jira.add_comment("OPS-7", "Restarted the worker.", step_key="sk-1")
    second = await clients.jira.add_comment("OPS-7", "Restarted the worker.", step_key="sk-1")
    await clients.jira.add_comment("OPS-7", "Unrelated note")

    assert first["id"] != second["id"]
    comments = objects(vendors, "jira_comments")
    assert len(comments) == 3
    assert [c["_record"]["key"] for c in comments] == ["sk-1", "sk-1", None]
    assert first["properties"] == [{"key": STEP_KEY_PROPERTY, "value": "sk-1"}]
    assert first["body"]["type"] == "doc"  # v3 speaks ADF

    found = await clients.jira.find_comment_by_step_key("OPS-7", "sk-1")
    assert found is not None and found["id"] == first["id"]
    assert await clients.jira.find_comment_by_step_key("OPS-7", "sk-2") is None
    assert await clients.jira.find_comment_by_step_key("OPS-8", "sk-1") is None

    # Without expand=properties, Jira leaves the properties out.
    async with httpx.AsyncClient() as raw:
        resp = await raw.get(f"{vendors.base_url}/jira/rest/api/3/issue/OPS-7/comment")
    assert resp.status_code == 200
    assert resp.json()["total"] == 3
    assert all("properties" not in c for c in resp.json()["comments"])

    # The reader pages through long histories.
    for i in range(5):
        await clients.jira.add_comment("OPS-9", f"note {i}", step_key=f"page-{i}")
    comments_9 = await clients.jira.list_comments("OPS-9", page_size=2)
    assert [c["properties"][0]["value"] for c in comments_9] == [f"page-{i}" for i in range(5)]
    assert (await clients.jira.find_comment_by_step_key("OPS-9", "page-4")) is not None


async def test_jira_issue_read_is_deterministic_and_creates_nothing(
    vendors: VendorService, clients: VendorClients
) -> None:
    one = await clients.jira.get_issue("OPS-42")
    two = await clients.jira.get_issue("OPS-42")
    other = await clients.jira.get_issue("SUP-3")

    assert one == two
    assert one["key"] == "OPS-42" and other["key"] == "SUP-3"
    assert one["id"] != other["id"]
    for name in ("summary", "status", "priority"):
        assert one["fields"][name]
    assert one["fields"]["priority"]["name"] in {"Highest", "High", "Medium", "Low", "Lowest"}
    assert effects_of(vendors, "jira") == ["read", "read", "read"]
    assert vendors.effects()["counts"]["jira"] == 0
    with pytest.raises(VendorRejected) as bad:
        await clients.jira.get_issue("not a key")
    assert bad.value.status == 404


# --------------------------------------------------------------------------- Teams


async def test_teams_reply_has_no_dedupe(vendors: VendorService, clients: VendorClients) -> None:
    conversation = "19:abc@thread.tacv2;messageid=1700000000000"
    card = {"type": "AdaptiveCard", "version": "1.5", "body": [{"type": "TextBlock"}]}
    one = await clients.teams.reply(conversation, "Done.", cards=[card], reply_to_id="act-1")
    two = await clients.teams.reply(conversation, "Done.", cards=[card], reply_to_id="act-1")

    assert one["id"] != two["id"]
    replies = objects(vendors, "teams_replies")
    assert [r["id"] for r in replies] == [one["id"], two["id"]]
    assert replies[0]["conversation"]["id"] == conversation
    assert replies[0]["replyToId"] == "act-1"
    assert replies[0]["attachments"] == [
        {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
    ]
    assert effects_of(vendors, "teams") == ["created", "created"]


# --------------------------------------------------------------------------- Discord


async def test_discord_nonce_dedupes_inside_the_window_only(
    vendors: VendorService, clients: VendorClients
) -> None:
    first = await clients.discord.create_message("111", "Deployed.", nonce="n-1")
    again = await clients.discord.create_message("111", "Deployed.", nonce="n-1")
    assert again["id"] == first["id"]
    other_channel = await clients.discord.create_message("222", "Deployed.", nonce="n-1")
    assert other_channel["id"] != first["id"]
    plain = [await clients.discord.create_message("111", "No nonce") for _ in range(2)]
    assert plain[0]["id"] != plain[1]["id"]
    assert vendors.effects()["by_kind"]["discord_messages"] == 4

    vendors.advance_clock(100)  # still inside the 120 s window
    inside = await clients.discord.create_message("111", "Deployed.", nonce="n-1")
    assert inside["id"] == first["id"]
    vendors.advance_clock(21)  # 121 s after the first: outside
    after = await clients.discord.create_message("111", "Deployed.", nonce="n-1")
    assert after["id"] != first["id"]

    assert vendors.effects()["by_kind"]["discord_messages"] == 5
    keyed = [(r["effect"], r["key"]) for r in vendors.requests("discord") if r["key"]]
    assert keyed == [
        ("created", "n-1"),
        ("deduplicated", "n-1"),
        ("created", "n-1"),
        ("deduplicated", "n-1"),
        ("created", "n-1"),
    ]


async def test_discord_nonce_without_enforce_is_not_deduped(vendors: VendorService) -> None:
    async with httpx.AsyncClient(base_url=vendors.base_url) as raw:
        path = "/discord/api/v10/channels/333/messages"
        a = await raw.post(path, json={"content": "x", "nonce": "n-2"})
        b = await raw.post(path, json={"content": "x", "nonce": "n-2"})
    assert a.status_code == b.status_code == 200
    assert a.json()["id"] != b.json()["id"]
    assert vendors.effects()["by_kind"]["discord_messages"] == 2


# --------------------------------------------------------------------------- SQS FIFO


async def test_sqs_fifo_dedupes_inside_the_window_only(
    vendors: VendorService, clients: VendorClients
) -> None:
    first = await clients.sqs.send_message(QUEUE, '{"run": 1}', "run-1", "d-1")
    again = await clients.sqs.send_message(QUEUE, '{"run": 1}', "run-1", "d-1")
    assert again["MessageId"] == first["MessageId"]
    assert again["SequenceNumber"] == first["SequenceNumber"]
    other_queue = await clients.sqs.send_message(QUEUE.replace("runs", "jobs"), "x", "g", "d-1")
    assert other_queue["MessageId"] != first["MessageId"]
    assert vendors.effects()["by_kind"]["sqs_messages"] == 2

    vendors.advance_clock(280)  # inside the 300 s window
    inside = await clients.sqs.send_message(QUEUE, '{"run": 1}', "run-1", "d-1")
    assert inside["MessageId"] == first["MessageId"]
    vendors.advance_clock(21)  # 301 s after the first: outside
    after = await clients.sqs.send_message(QUEUE, '{"run": 1}', "run-1", "d-1")
    assert after["MessageId"] != first["MessageId"]
    assert int(after["SequenceNumber"]) > int(first["SequenceNumber"])

    messages = objects(vendors, "sqs_messages")
    assert [m["MessageId"] for m in messages] == [
        first["MessageId"],
        other_queue["MessageId"],
        after["MessageId"],
    ]
    assert effects_of(vendors, "sqs") == [
        "created",
        "deduplicated",
        "created",
        "deduplicated",
        "created",
    ]
    recorded = vendors.requests("sqs")
    assert recorded[0]["headers"]["X-Amz-Target"] == "AmazonSQS.SendMessage"
    assert recorded[0]["key_kind"] == "dedup_id"


TOPIC = "arn:aws:sns:eu-west-1:123456789012:runs.fifo"


async def test_sns_fifo_dedupes_inside_the_window_only(
    vendors: VendorService, clients: VendorClients
) -> None:
    first = await clients.sns.publish(TOPIC, '{"run": 1}', "run-1", "d-1")
    again = await clients.sns.publish(TOPIC, '{"run": 1}', "run-1", "d-1")
    assert again == first
    other_topic = await clients.sns.publish(TOPIC.replace("runs", "jobs"), "x", "g", "d-1")
    assert other_topic["MessageId"] != first["MessageId"]
    vendors.advance_clock(280)  # inside the 300 s window
    assert (await clients.sns.publish(TOPIC, "y", "run-1", "d-1")) == first
    vendors.advance_clock(21)  # 301 s after the first: outside
    after = await clients.sns.publish(TOPIC, '{"run": 1}', "run-1", "d-1")
    assert after["MessageId"] != first["MessageId"]
    assert int(after["SequenceNumber"]) > int(first["SequenceNumber"])
    assert [m["MessageId"] for m in objects(vendors, "sns_messages")] == [
        first["MessageId"], other_topic["MessageId"], after["MessageId"]]
    assert effects_of(vendors, "sns") == [
        "created", "deduplicated", "created", "deduplicated", "created"]
    recorded = vendors.requests("sns")
    assert recorded[0]["key"] == "d-1" and recorded[0]["key_kind"] == "dedup_id"
    assert "Action=Publish" in recorded[0]["body"]


@pytest.mark.parametrize(("form", "needs"), [
    ({"TopicArn": "arn:aws:sns:eu-west-1:1:runs", "Message": "m", "MessageGroupId": "g",
      "MessageDeduplicationId": "d"}, "FIFO topic"),
    ({"TopicArn": TOPIC, "Message": "m", "MessageDeduplicationId": "d"}, "MessageGroupId"),
    ({"TopicArn": TOPIC, "Message": "m", "MessageGroupId": "g"}, "MessageDeduplicationId"),
    ({"TopicArn": TOPIC, "MessageGroupId": "g", "MessageDeduplicationId": "d"}, "Message"),
])
async def test_sns_fifo_refuses_a_publish_it_would_not_dedupe(
    vendors: VendorService, form: dict[str, str], needs: str
) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(vendors.base_url + "/sns/", data={"Action": "Publish", **form})
    assert response.status_code == 400 and needs in response.json()["Error"]["Message"]
    assert effects_of(vendors, "sns") == ["rejected"]
    assert objects(vendors, "sns_messages") == []


# --------------------------------------------------------------------------- faults


async def test_drop_after_accept_lands_once_and_the_client_cannot_tell(
    vendors: VendorService, clients: VendorClients
) -> None:
    vendors.fault("jira", "drop_after_accept", path_regex=r"/comment$", method="POST")
    with pytest.raises(VendorUnavailable) as lost:
        await clients.jira.add_comment("OPS-1", "Escalated.", step_key="sk-drop")
    assert lost.value.maybe_applied
    assert lost.value.status is None

    comments = objects(vendors, "jira_comments")
    assert len(comments) == 1
    (recorded,) = vendors.requests("jira")
    assert (recorded["effect"], recorded["fault"], recorded["status"]) == (
        "created",
        "drop_after_accept",
        None,
    )
    assert recorded["object_id"] == comments[0]["id"]
    # Settlement reads the outcome back instead of sending again.
    found = await clients.jira.find_comment_by_step_key("OPS-1", "sk-drop")
    assert found is not None and found["id"] == comments[0]["id"]

    # The fault applied to one request only.
    await clients.jira.add_comment("OPS-1", "Next.", step_key="sk-next")
    assert vendors.effects()["counts"]["jira"] == 2
    assert vendors.faults()[0]["remaining"] == 0


async def test_fail_gives_unavailable_and_no_effect(
    vendors: VendorService, clients: VendorClients
) -> None:
    vendors.fault("teams", "fail", count=2)
    for _ in range(2):
        with pytest.raises(VendorUnavailable) as failed:
            await clients.teams.reply("conv-1", "Hello")
        assert failed.value.status == 503
    assert vendors.effects()["counts"]["teams"] == 0
    assert [(r["status"], r["effect"], r["fault"]) for r in vendors.requests("teams")] == [
        (503, "failed", "fail"),
        (503, "failed", "fail"),
    ]
    await clients.teams.reply("conv-1", "Hello")
    assert vendors.effects()["counts"]["teams"] == 1


async def test_drop_before_accept_has_no_effect(
    vendors: VendorService, clients: VendorClients
) -> None:
    vendors.fault("discord", "drop_before_accept")
    with pytest.raises(VendorUnavailable):
        await clients.discord.create_message("111", "hi", nonce="n-9")
    assert vendors.effects()["counts"]["discord"] == 0
    (recorded,) = vendors.requests("discord")
    assert (recorded["effect"], recorded["status"], recorded["key"]) == ("dropped", None, "n-9")


async def test_faults_match_vendor_and_path_only(
    vendors: VendorService, clients: VendorClients
) -> None:
    vendors.fault("jira", "fail", path_regex=r"/comment$", method="POST", count=5)
    await clients.jira.get_issue("OPS-1")  # a read on another path: untouched
    await clients.teams.reply("c", "x")  # another vendor: untouched
    with pytest.raises(VendorUnavailable):
        await clients.jira.add_comment("OPS-1", "x")
    assert vendors.faults()[0]["remaining"] == 4
    vendors.clear_faults()
    await clients.jira.add_comment("OPS-1", "x")
    assert vendors.effects()["counts"] == {
        "incidentio": 0,
        "jira": 1,
        "teams": 1,
        "discord": 0,
        "sqs": 0,
        "sns": 0,
    }


async def test_throttle_is_a_429_with_retry_after_and_no_effect(
    vendors: VendorService, clients: VendorClients
) -> None:
    vendors.fault("incidentio", "throttle", method="POST", seconds=0.25)
    with pytest.raises(VendorRejected) as throttled:
        await clients.incidentio.create_incident("Slow down", None, "k-429")
    assert throttled.value.status == 429
    # The vendor's Retry-After reaches the retry policy, which waits that long.
    assert (throttled.value.retry_after, retry_after(throttled.value)) == ("0.25", 0.25)
    assert is_transient(throttled.value)
    vendors.fault("jira", "throttle")  # no seconds: Retry-After 1
    async with httpx.AsyncClient(base_url=vendors.base_url) as raw:
        answer = await raw.get("/jira/rest/api/3/issue/OPS-1")
    assert (answer.status_code, answer.headers["Retry-After"]) == (429, "1")
    assert vendors.effects()["counts"]["incidentio"] == 0
    assert [(r["status"], r["effect"], r["fault"]) for r in vendors.requests()] == [
        (429, "rejected", "throttle"),
        (429, "rejected", "throttle"),
    ]
    # Not applied: the same key creates the incident once the vendor takes it.
    await clients.incidentio.create_incident("Slow down", None, "k-429")
    assert vendors.effects()["counts"]["incidentio"] == 1


async def test_a_fault_with_a_probability_hits_some_requests_as_its_seed_says(
    vendors: VendorService, clients: VendorClients
) -> None:
    async def sample() -> list[bool]:
        hits = [False] * 40
        for n in range(len(hits)):
            try:
                await clients.jira.get_issue(f"OPS-{n + 1}")
            except VendorUnavailable as exc:
                assert exc.status == 503
                hits[n] = True
        return hits

    fault = vendors.fault("jira", "fail", method="GET", count=1000, probability=0.3, seed=11)
    assert (fault["probability"], fault["seed"]) == (0.3, 11)
    first = await sample()
    assert 0 < sum(first) < len(first)
    (row,) = vendors.faults()
    assert row["count"] - row["remaining"] == sum(first)  # a spared request used nothing
    assert [r["effect"] for r in vendors.requests("jira")] == [
        "failed" if hit else "read" for hit in first
    ]
    vendors.clear_faults()
    vendors.fault("jira", "fail", method="GET", count=1000, probability=0.3, seed=11)
    assert await sample() == first  # the same seed: the same requests hit
    vendors.clear_faults()
    assert not any(await sample())
    for bad in ({"probability": 0}, {"probability": 1.5}, {"probability": True},
                {"seed": "x"}, {"seed": 2**64}):
        with pytest.raises(VendorServiceError):
            vendors._call("POST", "faults", json={"vendor": "jira", "action": "fail", **bad})


async def test_delay_past_the_client_timeout_still_lands(vendors: VendorService) -> None:
    vendors.fault("sqs", "delay", seconds=1.0)
    async with VendorClients.local(vendors.base_url, timeout=0.3) as impatient:
        with pytest.raises(VendorUnavailable) as timed_out:
            await impatient.sqs.send_message(QUEUE, "late", "g", "d-late")
    assert timed_out.value.maybe_applied
    assert "timed out" in timed_out.value.message
    for _ in range(100):
        if vendors.effects()["counts"]["sqs"]:
            break
        await asyncio.sleep(0.05)
    assert vendors.effects()["counts"]["sqs"] == 1
    (recorded,) = vendors.requests("sqs")
    assert recorded["effect"] == "created"


# --------------------------------------------------------------------------- malformed


async def test_malformed_requests_are_rejected_and_recorded(
    vendors: VendorService, clients: VendorClients
) -> None:
    with pytest.raises(VendorRejected) as no_name:
        await clients.incidentio.create_incident("", None, idempotency_key="k-bad")
    assert no_name.value.status == 400
    assert "name" in no_name.value.message
    with pytest.raises(VendorRejected) as empty:
        await clients.discord.create_message("111", "")
    assert empty.value.status == 400
    with pytest.raises(VendorRejected) as not_fifo:
        await clients.sqs.send_message(QUEUE.removesuffix(".fifo"), "x", "g", "d")
    assert not_fifo.value.status == 400 and "FIFO" in not_fifo.value.message

    async with httpx.AsyncClient(base_url=vendors.base_url) as raw:
        no_key = await raw.post("/incidentio/v2/incidents", json={"name": "x"})
        bad_json = await raw.post(
            "/jira/rest/api/3/issue/OPS-1/comment",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
        unknown = await raw.get("/pagerduty/incidents")
        wrong_method = await raw.delete("/incidentio/v2/incidents")

    assert no_key.status_code == 400
    assert "idempotency_key is required" in no_key.json()["errors"][0]["message"]
    assert bad_json.status_code == 400
    assert "not valid JSON" in bad_json.json()["errorMessages"][0]
    assert unknown.status_code == 404 and "error" in unknown.json()
    assert wrong_method.status_code == 405

    recorded = vendors.requests()
    assert [(r["vendor"], r["status"], r["effect"]) for r in recorded] == [
        ("incidentio", 400, "rejected"),
        ("discord", 400, "rejected"),
        ("sqs", 400, "rejected"),
        ("incidentio", 400, "rejected"),
        ("jira", 400, "rejected"),
        ("unknown", 404, "rejected"),
        ("incidentio", 405, "rejected"),
    ]
    assert all(r["error"] for r in recorded)
    assert recorded[0]["key"] == "k-bad"
    assert recorded[4]["body"] == "{not json"
    assert vendors.effects()["counts"] == dict.fromkeys(
        ("incidentio", "jira", "teams", "discord", "sqs", "sns"), 0
    )


# --------------------------------------------------------------------------- durability


async def test_records_survive_a_sigkill(vendors: VendorService, workdir: Path) -> None:
    async with VendorClients.local(vendors.base_url) as v:
        inc = await v.incidentio.create_incident("Kill me", None, idempotency_key="k-kill")
        await v.jira.add_comment("OPS-1", "before the kill", step_key="sk-kill")
        await v.discord.create_message("111", "hi", nonce="n-kill")
        vendors.fault("teams", "drop_after_accept")
        with pytest.raises(VendorUnavailable):
            await v.teams.reply("conv", "answer lost")
    vendors.advance_clock(50)
    requests_before = vendors.requests()
    effects_before = vendors.effects()
    assert len(requests_before) == 4

    assert vendors.kill() == -signal.SIGKILL
    with VendorService.start(workdir) as again:
        assert again.pid != vendors.pid
        assert again.requests() == requests_before
        assert again.effects() == effects_before
        assert again.health()["clock_offset"] == 50
        async with VendorClients.local(again.base_url) as v:
            # Dedupe state survived too: the key and the nonce (still in its window).
            same = await v.incidentio.create_incident("Kill me", None, idempotency_key="k-kill")
            assert same["id"] == inc["id"]
            msg = await v.discord.create_message("111", "hi", nonce="n-kill")
            assert msg["id"] == effects_before["objects"]["discord_messages"][0]["id"]
        assert again.effects()["counts"] == effects_before["counts"]
        assert [r["effect"] for r in again.requests()][-2:] == ["deduplicated", "deduplicated"]


# --------------------------------------------------------------------------- control, process


async def test_control_filters_reset_and_clock(
    vendors: VendorService, clients: VendorClients
) -> None:
    await clients.jira.get_issue("OPS-1")
    await clients.jira.add_comment("OPS-1", "x")
    await clients.teams.reply("c", "x")
    vendors.health()
    vendors.effects()  # control calls are never recorded

    assert len(vendors.requests()) == 3
    assert len(vendors.requests("jira")) == 2
    assert [
        r["method"] for r in vendors.requests(path_prefix="/jira/rest/api/3/issue/OPS-1/c")
    ] == ["POST"]
    assert len(vendors.requests(effect="read")) == 1
    last_id = vendors.requests()[-1]["id"]
    assert vendors.requests(after_id=last_id) == []

    with pytest.raises(VendorServiceError):
        vendors.advance_clock(-1)
    with pytest.raises(VendorServiceError):
        vendors.fault("jira", "explode")
    vendors.fault("jira", "fail")
    vendors.advance_clock(10)
    vendors.reset()
    assert vendors.requests() == []
    assert vendors.effects()["counts"] == dict.fromkeys(
        ("incidentio", "jira", "teams", "discord", "sqs", "sns"), 0
    )
    assert vendors.faults() == []
    assert vendors.health()["clock_offset"] == 0
    comment = await clients.jira.add_comment("OPS-1", "after reset")  # no fault left
    assert comment["id"] != "10001"  # ids are never reused across a reset


async def test_unreachable_vendor_is_unavailable_and_not_applied(
    vendors: VendorService, clients: VendorClients
) -> None:
    assert vendors.stop() == 0  # SIGTERM: a clean exit
    with pytest.raises(VendorUnavailable) as down:
        await clients.teams.reply("c", "x")
    assert down.value.maybe_applied is False
    assert isinstance(down.value, VendorError)


def test_attach_and_ready_file(vendors: VendorService, workdir: Path) -> None:
    port = int((workdir / "vendors.ready").read_text())
    assert vendors.base_url == f"http://127.0.0.1:{port}"
    attached = VendorService.attach(vendors.base_url)
    try:
        assert attached.health()["pid"] == vendors.pid
        assert attached.pid is None
        assert attached.stop() is None  # not ours to stop
    finally:
        attached.stop()
    assert vendors.running


def test_start_failure_reports_the_servers_stderr(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(VendorServiceError) as failed:
        VendorService.start(tmp_path / "w", db_path=blocker / "vendors.sqlite3")
    assert "exited with status" in str(failed.value)
    assert "unable to open database file" in str(failed.value)


def test_windows_are_server_options(tmp_path: Path) -> None:
    with VendorService.start(tmp_path, discord_window=5, sqs_window=7, sns_window=9) as service:
        health = service.health()
    assert (health["discord_window"], health["sqs_window"], health["sns_window"]) == (5, 7, 9)


def test_route_properties() -> None:
    table = {
        cls.vendor: (cls.takes_key, cls.dedupe_window_seconds, cls.has_reader)
        for cls in (IncidentIO, Jira, Teams, Discord, SQSFifo, SNSFifo)
    }
    assert table == {
        "incidentio": (True, math.inf, False),
        "jira": (False, None, True),
        "teams": (False, None, True),
        "discord": (True, 120.0, False),
        "sqs": (True, 300.0, False),
        "sns": (True, 300.0, False),
    }


async def test_teams_reply_can_be_read_back_by_its_key(tmp_path: Path) -> None:
    with VendorService.start(tmp_path) as service:
        async with VendorClients.local(service.base_url) as clients:
            assert await clients.teams.find_reply("conv-1", "k-1") is None
            await clients.teams.reply("conv-1", "hello", key="k-1")
            await clients.teams.reply("conv-1", "other")
            found = await clients.teams.find_reply("conv-1", "k-1")
            assert found is not None and found["text"] == "hello"
            assert await clients.teams.find_reply("conv-2", "k-1") is None


async def test_a_teams_reply_records_the_key_it_carried(vendors: VendorService,
                                                        clients: VendorClients) -> None:
    await clients.teams.reply("conv-1", "hello", key="k-1")
    await clients.teams.reply("conv-1", "again", key="k-1")  # Teams dedupes nothing
    await clients.teams.reply("conv-1", "no key")
    recorded = vendors.requests("teams")
    assert [(r["effect"], r["key"], r["key_kind"]) for r in recorded] == [
        ("created", "k-1", "channel_data"), ("created", "k-1", "channel_data"),
        ("created", None, None)]


# --------------------------------------------------------------------------- counting


def _call(run_id: str, call_id: str, tool: str, arguments: dict[str, Any],
          step_key: str) -> Any:
    from ticketiq_pg.agent import CallContext, RunInfo

    run = RunInfo(run_id=uuid.UUID(run_id), owner="ops", run_as="ops", channel="cron",
                  entry_point="cron", may_wait=False, correlation_id="c")
    return CallContext(run=run, step=1, call_id=call_id, tool=tool, arguments=arguments,
                       classification="write", step_key=step_key)


async def test_a_resend_under_a_new_key_is_a_duplicate_by_what_landed(
    vendors: VendorService, workdir: Path
) -> None:
    """The count by what landed finds what the per-key count cannot: one call's write sent
    twice under two keys (a key-derivation bug) is two incidents and two comments, each
    under a key of its own.  A resend the vendor deduplicated on its key is no duplicate."""
    from procs import Stack

    from harness import landed
    from harness.scripted import vendor_tools

    tools = vendor_tools(vendors.base_url)
    run, other = str(uuid.uuid4()), str(uuid.uuid4())
    incident = {"name": "seed 1 step 1", "summary": "opened from OPS-1"}
    comment = {"issue_key": "OPS-1", "text": "seed 1 step 1"}
    for tool, arguments, call_id in (("incident.create", incident, "call_inc"),
                                     ("jira.comment", comment, "call_com")):
        invoke = tools.get(tool).invoke
        await invoke(_call(run, call_id, tool, arguments, f"key-a-{call_id}"))
        await invoke(_call(run, call_id, tool, arguments, f"key-b-{call_id}"))  # the bug
        await invoke(_call(other, call_id, tool, arguments, f"key-c-{call_id}"))
    # A resend under the same key: incident.io dedupes it, nothing more lands.
    invoke = tools.get("incident.create").invoke
    await invoke(_call(other, "call_inc", "incident.create", incident, "key-c-call_inc"))

    stack = Stack(db_url="", workdir=workdir, vendor=vendors)
    # The old count, per key: every key created one object; it sees nothing.
    assert stack.created_per_key() and set(stack.created_per_key().values()) == {1}
    assert landed.duplicates_per_key(vendors.requests()) == {}
    # The new one, per run and call from the content that landed: both of run's calls.
    assert stack.duplicates() == {f"run {run} step 1 call call_inc": 2,
                                  f"run {run} step 1 call call_com": 2}
    assert landed.duplicates(stack.writes()) == stack.duplicates()
    # Every write is listed with its run, call and key, the deduplicated one too.
    listed = [(w["vendor"], w["effect"], w["run_id"], w["call_id"], w["key"])
              for w in stack.writes()]
    assert listed[-1] == ("incidentio", "deduplicated", other, "call_inc", "key-c-call_inc")
    assert {(w[2], w[3]) for w in listed} == {(r, c) for r in (run, other)
                                             for c in ("call_inc", "call_com")}
    assert landed.unattributed(stack.writes()) == 0
    # What the tools return carries no run id (the answers' digests stay comparable).
    result = await invoke(_call(run, "call_x", "incident.create", incident, "key-x"))
    assert result == {"incident": "seed 1 step 1", "status": "created"}


def test_an_unmarked_write_is_counted_by_its_key() -> None:
    from harness import landed

    requests = [{"id": i, "vendor": "jira", "method": "POST", "path": "/jira/x",
                 "effect": "created", "key": key, "body": {"body": "no mark"}}
                for i, key in enumerate(("k1", "k1", "k2", None))]
    assert landed.duplicates(landed.writes(requests)) == {"jira key k1 (unmarked)": 2}
    assert landed.unattributed(landed.writes(requests)) == 1
