"""SNS FIFO: Publish to a ``.fifo`` topic, a deduplication id accepted once per topic
within the window (5 minutes, as SQS FIFO).

The query protocol as SNS speaks it: a form-encoded ``Action=Publish`` POST, answered in
JSON (the client asks with ``Accept: application/json``).
"""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import parse_qs

from harness.vendor_sim.store import SNS_MESSAGE
from harness.vendor_sim.wire import Call, Outcome, Reject, Route

_ID = re.compile(r"^[!-~]{1,128}$")  # alphanumerics and punctuation, as SNS allows


def form(body: bytes) -> dict[str, str]:
    """The form-encoded parameters of a query-protocol request (first value of each)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject(400, "the request body is not UTF-8", code="InvalidParameter") from None
    return {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}


def sns_action(call: Call, _params: list[str]) -> Outcome:
    params = form(call.req.body)
    action = params.get("Action")
    if action != "Publish":
        raise Reject(400, f"Action {action!r} is not imitated: only Publish",
                     code="InvalidAction")
    dedup_id = params.get("MessageDeduplicationId")
    if dedup_id is not None:
        call.key, call.key_kind = dedup_id, "dedup_id"
    topic = params.get("TopicArn") or ""
    if not topic.endswith(".fifo"):
        raise Reject(400, f"TopicArn {topic!r} is not a FIFO topic: only FIFO topics are "
                     "imitated", code="InvalidParameter")
    message = params.get("Message")
    if not message:
        raise Reject(400, "Message is required", code="InvalidParameter")
    if len(message.encode("utf-8")) > 262144:
        raise Reject(400, "Message is longer than 262144 bytes", code="InvalidParameter")
    group_id = params.get("MessageGroupId")
    if group_id is None or not _ID.match(group_id):
        raise Reject(400, "The MessageGroupId parameter is required for FIFO topics "
                     "(1-128 alphanumeric or punctuation characters)", code="InvalidParameter")
    if dedup_id is None:
        raise Reject(400, "The topic should either have ContentBasedDeduplication enabled "
                     "or MessageDeduplicationId provided explicitly", code="InvalidParameter")
    if not _ID.match(dedup_id):
        raise Reject(400, "MessageDeduplicationId must be 1-128 alphanumeric or punctuation "
                     "characters", code="InvalidParameter")
    earlier = call.latest(SNS_MESSAGE, topic, dedup_id, call.now - call.options.sns_window)
    if earlier is not None:
        return Outcome(200, _reply(earlier), "deduplicated", SNS_MESSAGE, earlier["MessageId"])
    published = {
        "MessageId": str(uuid.uuid4()),
        "TopicArn": topic,
        "Message": message,
        "MessageGroupId": group_id,
        "MessageDeduplicationId": dedup_id,
        "SequenceNumber": f"{call.counter('sns.sequence'):020d}",
    }
    call.insert(SNS_MESSAGE, published["MessageId"], topic, dedup_id, published)
    return Outcome(200, _reply(published), "created", SNS_MESSAGE, published["MessageId"])


def _reply(published: dict[str, Any]) -> dict[str, Any]:
    return {"PublishResponse": {
        "PublishResult": {k: published[k] for k in ("MessageId", "SequenceNumber")},
        "ResponseMetadata": {"RequestId": str(uuid.uuid4())},
    }}


ROUTES = [Route("sns", "POST", (), sns_action)]
