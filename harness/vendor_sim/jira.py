"""Jira: comments on an issue (no idempotency: a repeat is a second comment) and the
deterministic issue behind a key."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from harness.vendor_sim.store import JIRA_COMMENT, STEP_KEY_PROPERTY, iso
from harness.vendor_sim.wire import Call, Outcome, Reject, Route, text_field

_ISSUE_KEY = re.compile(r"^[A-Z][A-Z0-9_]*-[1-9][0-9]*$")


def _issue_key(key: str) -> str:
    if not _ISSUE_KEY.match(key):
        raise Reject(404, "Issue does not exist or you do not have permission to see it.")
    return key


def jira_add_comment(call: Call, params: list[str]) -> Outcome:
    issue_key = _issue_key(params[0])
    body = call.json_object()
    properties = body.get("properties", [])
    if not isinstance(properties, list):
        raise Reject(400, "properties must be a list of {key, value}", field="properties")
    for i, prop in enumerate(properties):
        if not isinstance(prop, dict) or "value" not in prop:
            raise Reject(
                400, f"properties[{i}] must be an object with key and value", field="properties"
            )
        text_field(prop, "key", required=True, max_len=255, where=f"properties[{i}].")
        if prop["key"] == STEP_KEY_PROPERTY and isinstance(prop["value"], str):
            call.key, call.key_kind = prop["value"], "step_key_property"
    if "body" not in body:
        raise Reject(400, "body is required: comment text or an ADF document", field="body")
    text = body["body"]
    if isinstance(text, str):
        if not text.strip():
            raise Reject(400, "Comment body can not be empty!", field="comment")
    elif isinstance(text, dict):
        if text.get("type") != "doc" or not isinstance(text.get("content"), list):
            raise Reject(
                400,
                "body must be plain text or an ADF document "
                "({type: 'doc', version: 1, content: [...]})",
                field="comment",
            )
    else:
        raise Reject(400, "body must be plain text or an ADF document", field="comment")
    comment_id = str(10000 + call.counter("jira.comment"))
    base = "https://jira.local/rest/api/3"
    comment = {
        "id": comment_id,
        "self": f"{base}/issue/{issue_key}/comment/{comment_id}",
        "issueKey": issue_key,
        "author": {"accountId": "ticketiq", "displayName": "TicketIQ"},
        "body": text,
        "created": iso(call.now),
        "updated": iso(call.now),
        "properties": [{"key": p["key"], "value": p["value"]} for p in properties],
    }
    call.insert(JIRA_COMMENT, comment_id, issue_key, call.key, comment)
    return Outcome(201, comment, "created", JIRA_COMMENT, comment_id)


def jira_comments(call: Call, params: list[str]) -> Outcome:
    issue_key = _issue_key(params[0])
    try:
        start = int(call.req.param("startAt") or 0)
        size = int(call.req.param("maxResults") or 5000)
    except ValueError:
        raise Reject(400, "startAt and maxResults must be integers") from None
    if start < 0 or size < 0:
        raise Reject(400, "startAt and maxResults must not be negative")
    expand = {e.strip() for e in (call.req.param("expand") or "").split(",")}
    rows = call.conn.execute(
        "SELECT data FROM objects WHERE kind = ? AND scope = ? ORDER BY seq",
        (JIRA_COMMENT, issue_key),
    ).fetchall()
    comments = []
    for row in rows[start : start + size]:
        comment = json.loads(row[0])
        if "properties" not in expand:
            comment.pop("properties", None)
        comments.append(comment)
    return Outcome(
        200,
        {"startAt": start, "maxResults": size, "total": len(rows), "comments": comments},
        "read",
    )


def jira_issue(call: Call, params: list[str]) -> Outcome:
    return Outcome(200, jira_issue_for(_issue_key(params[0])), "read")


_SUMMARY_WORDS = (
    ("Login", "Checkout", "Search", "Billing", "Export", "Sync", "Webhook", "Report"),
    ("fails", "is slow", "times out", "shows stale data", "crashes", "returns 500"),
    ("for some users", "after the upgrade", "on mobile", "in the EU region", "intermittently"),
)
_STATUSES = (("1", "To Do"), ("3", "In Progress"), ("10001", "In Review"), ("10002", "Done"))
_PRIORITIES = (("1", "Highest"), ("2", "High"), ("3", "Medium"), ("4", "Low"), ("5", "Lowest"))


def jira_issue_for(issue_key: str) -> dict[str, Any]:
    """The deterministic issue behind a key: every field is derived by hashing the key."""
    digest = hashlib.sha256(issue_key.encode("utf-8")).digest()
    words = [seq[digest[i] % len(seq)] for i, seq in enumerate(_SUMMARY_WORDS)]
    status_id, status = _STATUSES[digest[3] % len(_STATUSES)]
    priority_id, priority = _PRIORITIES[digest[4] % len(_PRIORITIES)]
    issue_id = str(10000 + int.from_bytes(digest[5:8], "big") % 90000)
    return {
        "id": issue_id,
        "key": issue_key,
        "self": f"https://jira.local/rest/api/3/issue/{issue_id}",
        "fields": {
            "summary": " ".join(words),
            "status": {"id": status_id, "name": status},
            "priority": {"id": priority_id, "name": priority},
            "issuetype": {"name": "Bug" if digest[8] % 2 else "Task"},
            "project": {"key": issue_key.rsplit("-", 1)[0]},
        },
    }


_ISSUE = ("rest", "api", "3", "issue", "{}")
ROUTES = [
    Route("jira", "POST", (*_ISSUE, "comment"), jira_add_comment),
    Route("jira", "GET", (*_ISSUE, "comment"), jira_comments),
    Route("jira", "GET", _ISSUE, jira_issue),
]
