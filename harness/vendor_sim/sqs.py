"""SQS FIFO: SendMessage, a deduplication id accepted once per queue within the window."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

from harness.vendor_sim.store import SQS_MESSAGE
from harness.vendor_sim.wire import Call, Outcome, Reject, Route, text_field

_SQS_ID = re.compile(r"^[!-~]{1,128}$")  # alphanumerics and punctuation, as SQS allows


def sqs_action(call: Call, _params: list[str]) -> Outcome:
    target = call.req.header("X-Amz-Target")
    if not target:
        raise Reject(
            400,
            "the X-Amz-Target header is required (AmazonSQS.SendMessage)",
            code="MissingAction",
        )
    if target != "AmazonSQS.SendMessage":
        raise Reject(
            400,
            f"{target} is not imitated: only AmazonSQS.SendMessage",
            code="UnsupportedOperation",
        )
    body = call.json_object()
    dedup_id = text_field(body, "MessageDeduplicationId", required=False)
    if dedup_id is not None:
        call.key, call.key_kind = dedup_id, "dedup_id"
    queue_url = text_field(body, "QueueUrl", required=True)
    assert queue_url is not None
    if not queue_url.endswith(".fifo"):
        raise Reject(
            400,
            f"{queue_url} is not a FIFO queue: only FIFO queues are imitated",
            code="InvalidParameterValue",
        )
    message_body = text_field(body, "MessageBody", required=True)
    assert message_body is not None
    if len(message_body.encode("utf-8")) > 262144:
        raise Reject(
            400, "MessageBody is longer than 262144 bytes", code="InvalidParameterValue"
        )
    group_id = body.get("MessageGroupId")
    if not isinstance(group_id, str) or not _SQS_ID.match(group_id):
        raise Reject(
            400,
            "The request must contain the parameter MessageGroupId "
            "(1-128 alphanumeric or punctuation characters).",
            code="MissingParameter",
        )
    if dedup_id is None:
        raise Reject(
            400,
            "The queue should either have ContentBasedDeduplication enabled "
            "or MessageDeduplicationId provided explicitly",
            code="InvalidParameterValue",
        )
    if not _SQS_ID.match(dedup_id):
        raise Reject(
            400,
            "MessageDeduplicationId must be 1-128 alphanumeric or punctuation characters",
            code="InvalidParameterValue",
        )
    earlier = call.latest(SQS_MESSAGE, queue_url, dedup_id, call.now - call.options.sqs_window)
    if earlier is not None:
        return Outcome(
            200,
            _sqs_reply(earlier),
            "deduplicated",
            SQS_MESSAGE,
            earlier["MessageId"],
            content_type="application/x-amz-json-1.0",
        )
    message = {
        "MessageId": str(uuid.uuid4()),
        "QueueUrl": queue_url,
        "MessageBody": message_body,
        "MD5OfMessageBody": hashlib.md5(message_body.encode("utf-8")).hexdigest(),
        "MessageGroupId": group_id,
        "MessageDeduplicationId": dedup_id,
        "SequenceNumber": f"{call.counter('sqs.sequence'):020d}",
        "SentTimestamp": str(int(call.now * 1000)),
    }
    call.insert(SQS_MESSAGE, message["MessageId"], queue_url, dedup_id, message)
    return Outcome(
        200,
        _sqs_reply(message),
        "created",
        SQS_MESSAGE,
        message["MessageId"],
        content_type="application/x-amz-json-1.0",
    )


def _sqs_reply(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in ("MessageId", "MD5OfMessageBody", "SequenceNumber")}


ROUTES = [Route("sqs", "POST", (), sqs_action)]
