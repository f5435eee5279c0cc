"""Async clients for the vendors agent runs write to, each sending the request the real
vendor receives.  One ``httpx.AsyncClient`` carries them all; each client has its own base
URL (the vendor's API root), so the same code talks to the real vendor or to the local
vendor service (the repository's ``harness.vendor_sim``, one prefix per vendor).

::

    async with VendorClients.local(service.base_url, timeout=5.0) as v:
        incident = await v.incidentio.create_incident("DB down", "p1", idempotency_key=key)

Errors
======

:class:`VendorError` is the base.  :class:`VendorRejected` is a 4xx: the vendor refused the
request, so it had no effect (``status``, ``message``, ``body``).  :class:`VendorUnavailable`
is a connection error, a dropped connection, a timeout or a 5xx: **the outcome may be
unknown** -- the write may have landed.  Its ``maybe_applied`` is False only when the
request certainly never left (the connection could not be opened); settle everything else.
Nothing here retries: a retry of a write is the settlement logic's decision.

Route properties
================

Each client class declares, for its write route, what the settlement of a write in doubt
needs (spec "Writes in flight"):

==============  ===========  =====================  ==========
client          takes_key    dedupe_window_seconds  has_reader
==============  ===========  =====================  ==========
IncidentIO      True         math.inf               False
Jira            False        None                   True
Teams           False        None                   True
Discord         True         120                    False
SQSFifo         True         300                    False
SNSFifo         True         300                    False
==============  ===========  =====================  ==========

* ``takes_key``: the write carries our step key to the vendor (idempotency key, nonce,
  deduplication id).
* ``dedupe_window_seconds``: how long the vendor dedupes on that key; ``math.inf`` for
  incident.io, which dedupes longer than any resume can take, so a keyed write in doubt is
  sent again with the same key.  Discord nonces and SQS and SNS FIFO dedup ids dedupe
  for *minutes* only (the spec promises no more); 120 s and 300 s are the values the local
  service imitates, so those writes are settled, not sent again.
* ``has_reader``: the outcome of a write in doubt can be read back by its step key
  (Jira: the comment property ``ticketiq.step_key``, see :meth:`Jira.find_comment_by_step_key`;
  Teams: a reply sent with ``key`` carries it in ``channelData``, see :meth:`Teams.find_reply`).

Authentication is left to ``headers`` (e.g. ``{"Authorization": "Bearer ..."}``), except
for SQS and SNS, whose requests are signed with AWS SigV4 by botocore
(:class:`~ticketiq_pg.vendors.aws.SigV4`, credentials from the standard AWS chain):
``SQSFifo.for_aws(http, "eu-west-1")``.  The local vendor service checks no signature, so
its clients are made unsigned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from ticketiq_pg.vendors.base import (
    Signer,
    TimeoutTypes,
    VendorClient,
    VendorError,
    VendorFenced,
    VendorRejected,
    VendorUnavailable,
)
from ticketiq_pg.vendors.fenced_transport import FencedTransport

__all__ = [
    "STEP_KEY_PROPERTY",
    "Discord",
    "IncidentIO",
    "Jira",
    "SNSFifo",
    "SQSFifo",
    "Teams",
    "VendorClient",
    "VendorClients",
    "VendorError",
    "VendorFenced",
    "VendorRejected",
    "VendorUnavailable",
    "adf_from_text",
]

STEP_KEY_PROPERTY = "ticketiq.step_key"
ADAPTIVE_CARD = "application/vnd.microsoft.card.adaptive"



class IncidentIO(VendorClient):
    """incident.io API v2: incident creates and edits dedupe on ``idempotency_key``."""

    vendor = "incidentio"
    local_prefix = "/incidentio"
    takes_key = True
    dedupe_window_seconds = math.inf
    has_reader = False

    async def create_incident(
        self,
        name: str,
        summary: str | None,
        idempotency_key: str,
        *,
        severity_id: str | None = None,
        visibility: str = "public",
    ) -> dict[str, Any]:
        """POST /v2/incidents; returns the incident (the same one for a repeated key)."""
        body: dict[str, Any] = {
            "idempotency_key": idempotency_key,
            "name": name,
            "visibility": visibility,
        }
        if summary is not None:
            body["summary"] = summary
        if severity_id is not None:
            body["severity_id"] = severity_id
        out = await self._request("create_incident", "POST", "/v2/incidents", json_body=body)
        return out["incident"]

    async def update_incident(
        self, incident_id: str, fields: Mapping[str, Any], idempotency_key: str
    ) -> dict[str, Any]:
        """POST /v2/incidents/{id}/actions/edit; applied once per key."""
        body = {"idempotency_key": idempotency_key, "incident": dict(fields)}
        out = await self._request(
            "update_incident",
            "POST",
            f"/v2/incidents/{quote(incident_id, safe='')}/actions/edit",
            json_body=body,
        )
        return out["incident"]

    async def get_incident(self, incident_id: str) -> dict[str, Any]:
        out = await self._request(
            "get_incident", "GET", f"/v2/incidents/{quote(incident_id, safe='')}"
        )
        return out["incident"]

    async def list_incidents(self) -> list[dict[str, Any]]:
        out = await self._request("list_incidents", "GET", "/v2/incidents")
        return out["incidents"]


def adf_from_text(text: str) -> dict[str, Any]:
    """Plain text as an Atlassian Document Format document (one paragraph per line)."""
    paragraphs = []
    for line in text.split("\n"):
        content = [{"type": "text", "text": line}] if line else []
        paragraphs.append({"type": "paragraph", "content": content})
    return {"type": "doc", "version": 1, "content": paragraphs}


class Jira(VendorClient):
    """Jira Cloud REST v3.  Comments have no idempotency; the step key rides along as the
    comment property ``ticketiq.step_key``, which :meth:`find_comment_by_step_key` reads."""

    vendor = "jira"
    local_prefix = "/jira"
    takes_key = False
    dedupe_window_seconds = None
    has_reader = True

    def _issue(self, issue_key: str) -> str:
        return f"/rest/api/3/issue/{quote(issue_key, safe='')}"

    async def add_comment(
        self, issue_key: str, text: str, step_key: str | None = None
    ) -> dict[str, Any]:
        """POST /rest/api/3/issue/{key}/comment (ADF body); a repeat is a second comment."""
        body: dict[str, Any] = {"body": adf_from_text(text)}
        if step_key is not None:
            body["properties"] = [{"key": STEP_KEY_PROPERTY, "value": step_key}]
        return await self._request(
            "add_comment", "POST", f"{self._issue(issue_key)}/comment", json_body=body
        )

    async def list_comments(
        self, issue_key: str, *, expand_properties: bool = True, page_size: int = 100
    ) -> list[dict[str, Any]]:
        """Every comment of the issue, oldest first (following the pages)."""
        comments: list[dict[str, Any]] = []
        start = 0
        while True:
            params: dict[str, Any] = {"startAt": start, "maxResults": page_size}
            if expand_properties:
                params["expand"] = "properties"
            page = await self._request(
                "list_comments", "GET", f"{self._issue(issue_key)}/comment", params=params
            )
            batch = page.get("comments") or []
            comments.extend(batch)
            start += len(batch)
            if not batch or start >= int(page.get("total", 0)):
                return comments

    async def find_comment_by_step_key(
        self, issue_key: str, step_key: str
    ) -> dict[str, Any] | None:
        """The reader: the first comment whose ``ticketiq.step_key`` property is the key."""
        for comment in await self.list_comments(issue_key, expand_properties=True):
            for prop in comment.get("properties") or []:
                if prop.get("key") == STEP_KEY_PROPERTY and prop.get("value") == step_key:
                    return comment
        return None

    async def get_issue(self, issue_key: str) -> dict[str, Any]:
        """GET /rest/api/3/issue/{key}: a read."""
        return await self._request("get_issue", "GET", self._issue(issue_key))


class Teams(VendorClient):
    """Bot Framework v3 (Microsoft Teams): a posted activity has no idempotency.

    A reply can carry our key in its ``channelData``; listing the
    conversation's messages (as Microsoft Graph does) finds it again, which
    makes the reply readable back (``find_reply``).
    """

    vendor = "teams"
    local_prefix = "/teams"
    takes_key = False
    dedupe_window_seconds = None
    has_reader = True

    async def list_activities(self, conversation_id: str) -> list[dict[str, Any]]:
        """GET the messages posted to a conversation."""
        data = await self._request(
            "list_activities",
            "GET",
            f"/v3/conversations/{quote(conversation_id, safe='')}/activities",
        )
        return list(data.get("activities", []))

    async def find_reply(self, conversation_id: str, key: str) -> dict[str, Any] | None:
        """The reply whose channelData carries ``ticketiq_key == key``, if posted."""
        for activity in await self.list_activities(conversation_id):
            if (activity.get("channelData") or {}).get("ticketiq_key") == key:
                return activity
        return None

    async def reply(
        self,
        conversation_id: str,
        text: str,
        cards: Iterable[Mapping[str, Any]] = (),
        reply_to_id: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """POST /v3/conversations/{id}/activities; returns {"id": activity id}.

        A card with a ``contentType`` is sent as the attachment it is; any other mapping is
        taken as an Adaptive Card's content.
        """
        attachments = [
            dict(card)
            if "contentType" in card
            else {"contentType": ADAPTIVE_CARD, "content": dict(card)}
            for card in cards
        ]
        body: dict[str, Any] = {"type": "message", "text": text}
        if attachments:
            body["attachments"] = attachments
        if reply_to_id is not None:
            body["replyToId"] = reply_to_id
        if key is not None:
            body["channelData"] = {"ticketiq_key": key}
        return await self._request(
            "reply",
            "POST",
            f"/v3/conversations/{quote(conversation_id, safe='')}/activities",
            json_body=body,
        )


    async def typing(self, conversation_id: str, reply_to_id: str) -> dict[str, Any]:
        """POST /v3/conversations/{id}/activities/{reply_to_id} a ``typing`` activity: the
        person who wrote ``reply_to_id`` sees the bot typing for a few seconds.  Nothing is
        kept in the conversation (``find_reply`` never finds one)."""
        return await self._request(
            "typing",
            "POST",
            f"/v3/conversations/{quote(conversation_id, safe='')}/activities/"
            f"{quote(reply_to_id, safe='')}",
            json_body={"type": "typing", "replyToId": reply_to_id},
        )


class Discord(VendorClient):
    """Discord API v10: with a nonce, ``enforce_nonce`` dedupes for a few minutes only."""

    vendor = "discord"
    local_prefix = "/discord"
    takes_key = True
    dedupe_window_seconds = 120.0  # "minutes" (spec); the local service's default window
    has_reader = False

    async def create_message(
        self, channel_id: str, content: str, nonce: str | int | None = None
    ) -> dict[str, Any]:
        """POST /api/v10/channels/{id}/messages (enforce_nonce when a nonce is given)."""
        body: dict[str, Any] = {"content": content}
        if nonce is not None:
            body["nonce"] = nonce
            body["enforce_nonce"] = True
        return await self._request(
            "create_message",
            "POST",
            f"/api/v10/channels/{quote(channel_id, safe='')}/messages",
            json_body=body,
        )


class _AWSClient(VendorClient):
    """An AWS service's client: SigV4-signed when made by :meth:`for_aws`."""

    @classmethod
    def for_aws(cls, http: httpx.AsyncClient, region: str, *, credentials: Any = None,
                endpoint_url: str | None = None, timeout: TimeoutTypes = None) -> Any:
        """The client of the service in ``region`` (or at ``endpoint_url``), each request
        signed with SigV4; ``credentials`` (botocore's) default to the standard chain."""
        from ticketiq_pg.vendors.aws import SigV4

        url = endpoint_url or f"https://{cls.vendor}.{region}.amazonaws.com"
        return cls(http, url, timeout=timeout, signer=SigV4(cls.vendor, region, credentials))


class SQSFifo(_AWSClient):
    """Amazon SQS FIFO (JSON protocol): a dedup id dedupes for 5 minutes on its queue."""

    vendor = "sqs"
    local_prefix = "/sqs"
    takes_key = True
    dedupe_window_seconds = 300.0
    has_reader = False

    async def send_message(
        self, queue_url: str, body: str, group_id: str, dedup_id: str
    ) -> dict[str, Any]:
        """AmazonSQS.SendMessage; returns {MessageId, MD5OfMessageBody, SequenceNumber}."""
        payload = {
            "QueueUrl": queue_url,
            "MessageBody": body,
            "MessageGroupId": group_id,
            "MessageDeduplicationId": dedup_id,
        }
        return await self._request(
            "send_message",
            "POST",
            "/",
            json_body=payload,
            headers={"X-Amz-Target": "AmazonSQS.SendMessage"},
            content_type="application/x-amz-json-1.0",
        )


class SNSFifo(_AWSClient):
    """Amazon SNS FIFO topics (query protocol, JSON answers): a dedup id dedupes for
    5 minutes on its topic, as SQS FIFO's."""

    vendor = "sns"
    local_prefix = "/sns"
    takes_key = True
    dedupe_window_seconds = 300.0
    has_reader = False

    async def publish(
        self, topic_arn: str, message: str, group_id: str, dedup_id: str
    ) -> dict[str, Any]:
        """Publish; returns {MessageId, SequenceNumber}."""
        form = {
            "Action": "Publish",
            "Version": "2010-03-31",
            "TopicArn": topic_arn,
            "Message": message,
            "MessageGroupId": group_id,
            "MessageDeduplicationId": dedup_id,
        }
        out = await self._request(
            "publish", "POST", "/", form_body=form, headers={"Accept": "application/json"}
        )
        return out["PublishResponse"]["PublishResult"]  # JSON, or XML as AWS answers


class VendorClients:
    """All six clients over one ``httpx.AsyncClient``; closing it closes the client
    when this object created it."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_urls: Mapping[str, str],
        *,
        timeout: TimeoutTypes = None,
        headers: Mapping[str, Mapping[str, str]] | None = None,
        owns_http: bool = False,
        signers: Mapping[str, Signer] | None = None,
    ) -> None:
        """``base_urls`` maps vendor name (incidentio, jira, teams, discord, sqs, sns) to its
        API root; ``headers`` maps vendor name to extra headers (auth); ``signers`` vendor
        name to its request signer (``{"sqs": SigV4("sqs", region)}``)."""
        self.http = http
        self._owns_http = owns_http
        headers = headers or {}

        def make(cls: type[Any]) -> Any:
            return cls(http, base_urls[cls.vendor], timeout=timeout,
                       headers=headers.get(cls.vendor), signer=(signers or {}).get(cls.vendor))

        self.incidentio: IncidentIO = make(IncidentIO)
        self.jira: Jira = make(Jira)
        self.teams: Teams = make(Teams)
        self.discord: Discord = make(Discord)
        self.sqs: SQSFifo = make(SQSFifo)
        self.sns: SNSFifo = make(SNSFifo)

    @classmethod
    def local(
        cls, base_url: str, *, timeout: TimeoutTypes = 10.0, http: httpx.AsyncClient | None = None
    ) -> VendorClients:
        """Clients for the local vendor service at ``base_url`` (each vendor under its
        prefix).  Creates (and then owns) the AsyncClient unless ``http`` is given."""
        root = base_url.rstrip("/")
        urls = {
            c.vendor: root + c.local_prefix
            for c in (IncidentIO, Jira, Teams, Discord, SQSFifo, SNSFifo)
        }
        owns = http is None
        client = (
            http
            if http is not None
            else httpx.AsyncClient(timeout=timeout if timeout is not None else 10.0,
                                   transport=FencedTransport())
        )
        return cls(client, urls, timeout=timeout, owns_http=owns)

    def by_vendor(self) -> dict[str, VendorClient]:
        return {
            c.vendor: c
            for c in (self.incidentio, self.jira, self.teams, self.discord, self.sqs, self.sns)
        }

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> VendorClients:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
