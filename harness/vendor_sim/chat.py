"""Teams replies (no idempotency; the key a reply carries in its channelData is recorded
as its key, nothing is deduped on it), Teams typing activities (shown, kept nowhere) and
Discord messages (a nonce, when enforced, dedupes within the window)."""

from __future__ import annotations

import json
import re
import uuid

from harness.vendor_sim.store import DISCORD_MESSAGE, TEAMS_REPLY, iso
from harness.vendor_sim.wire import Call, Outcome, Reject, Route, text_field

_SNOWFLAKE = re.compile(r"^[0-9]{1,20}$")
_DISCORD_EPOCH_MS = 1420070400000


def teams_activity(call: Call, params: list[str], reply_to_id: str | None = None) -> Outcome:
    conversation_id = params[0]
    body = call.json_object()
    if reply_to_id is not None:
        body.setdefault("replyToId", reply_to_id)
    if body.get("type") != "message":
        raise Reject(400, "type must be 'message'", field="type")
    text = text_field(body, "text", required=False, nullable=True)
    attachments = body.get("attachments") or []
    if not isinstance(attachments, list):
        raise Reject(400, "attachments must be a list", field="attachments")
    for i, att in enumerate(attachments):
        if not isinstance(att, dict) or not isinstance(att.get("contentType"), str):
            raise Reject(
                400,
                f"attachments[{i}] must be an object with a contentType",
                field="attachments",
            )
    if not (text and text.strip()) and not attachments:
        raise Reject(400, "a message needs text or attachments", field="text")
    reply_to = text_field(body, "replyToId", required=False, nullable=True)
    channel_data = body.get("channelData")
    if channel_data is not None and not isinstance(channel_data, dict):
        raise Reject(400, "channelData must be an object", field="channelData")
    key = (channel_data or {}).get("ticketiq_key")
    if isinstance(key, str) and key:
        # Recorded as what the reply carried; Teams dedupes nothing on it.
        call.key, call.key_kind = key, "channel_data"
    activity_id = f"1:{call.counter('teams.activity')}{uuid.uuid4().hex[:12]}"
    activity = {
        "id": activity_id,
        "type": "message",
        "conversation": {"id": conversation_id},
        "text": text,
        "attachments": attachments,
        "replyToId": reply_to,
        "channelData": channel_data or {},
        "timestamp": iso(call.now),
    }
    call.insert(TEAMS_REPLY, activity_id, conversation_id, call.key, activity)
    return Outcome(201, {"id": activity_id}, "created", TEAMS_REPLY, activity_id)


def teams_reply_to(call: Call, params: list[str]) -> Outcome:
    """A reply to activity ``params[1]``: a ``typing`` one is shown and kept nowhere
    (effect ``shown``); a message is posted as to the conversation."""
    body = call.json_object()
    if body.get("type") == "typing":
        return Outcome(200, {"id": f"typing:{uuid.uuid4().hex[:12]}"}, "shown")
    return teams_activity(call, params[:1], reply_to_id=params[1])


def teams_activities(call: Call, params: list[str]) -> Outcome:
    """The messages posted to a conversation (as Microsoft Graph lists a chat's
    messages): what a reader of Teams replies reads back."""
    rows = call.conn.execute(
        "SELECT data FROM objects WHERE kind = ? AND scope = ? ORDER BY seq",
        (TEAMS_REPLY, params[0]),
    ).fetchall()
    return Outcome(200, {"activities": [json.loads(row[0]) for row in rows]}, "read")


def discord_message(call: Call, params: list[str]) -> Outcome:
    channel_id = params[0]
    if not _SNOWFLAKE.match(channel_id):
        raise Reject(404, "Unknown Channel", code="10003")
    body = call.json_object()
    nonce = body.get("nonce")
    if nonce is not None:
        if isinstance(nonce, bool) or not isinstance(nonce, (int, str)):
            raise Reject(400, "nonce must be an integer or a string", field="nonce")
        if isinstance(nonce, str) and len(nonce) > 25:
            raise Reject(400, "nonce must be at most 25 characters", field="nonce")
        call.key, call.key_kind = str(nonce), "nonce"
    enforce = body.get("enforce_nonce", False)
    if not isinstance(enforce, bool):
        raise Reject(400, "enforce_nonce must be a boolean", field="enforce_nonce")
    content = text_field(body, "content", required=False, max_len=2000, nullable=True)
    embeds = body.get("embeds") or []
    if not isinstance(embeds, list):
        raise Reject(400, "embeds must be a list", field="embeds")
    if not (content and content.strip()) and not embeds:
        raise Reject(400, "Cannot send an empty message", field="content")
    if enforce and nonce is not None:
        earlier = call.latest(
            DISCORD_MESSAGE, channel_id, str(nonce), call.now - call.options.discord_window
        )
        if earlier is not None:
            return Outcome(200, earlier, "deduplicated", DISCORD_MESSAGE, earlier["id"])
    ms = int(call.now * 1000)
    message_id = str(
        ((ms - _DISCORD_EPOCH_MS) << 22) | (call.counter("discord.message") & 0x3FFFFF)
    )
    message = {
        "id": message_id,
        "type": 0,
        "channel_id": channel_id,
        "content": content or "",
        "embeds": embeds,
        "nonce": nonce,
        "author": {"id": "1", "username": "ticketiq", "bot": True},
        "timestamp": iso(call.now),
    }
    call.insert(
        DISCORD_MESSAGE, message_id, channel_id, None if nonce is None else str(nonce), message
    )
    return Outcome(200, message, "created", DISCORD_MESSAGE, message_id)


ROUTES = [
    Route("teams", "POST", ("v3", "conversations", "{}", "activities"), teams_activity),
    Route("teams", "GET", ("v3", "conversations", "{}", "activities"), teams_activities),
    Route("teams", "POST", ("v3", "conversations", "{}", "activities", "{}"), teams_reply_to),
    Route("discord", "POST", ("api", "v10", "channels", "{}", "messages"), discord_message),
]
