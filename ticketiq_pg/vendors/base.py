"""The errors and the base client every vendor client shares (one ``httpx.AsyncClient``).

:class:`VendorRejected` is a 4xx: no effect.  :class:`VendorUnavailable` is a connection
error, a timeout or a 5xx: the write may have landed (``maybe_applied``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from typing import Any, ClassVar
from urllib.parse import urlencode

import httpx

from ticketiq_pg.vendors import fencing

TimeoutTypes = float | httpx.Timeout | None
#: Signs a request: ``(method, url, headers, body)`` to the headers to send
#: (:class:`ticketiq_pg.vendors.aws.SigV4`).
Signer = Callable[[str, str, Mapping[str, str], "bytes | None"], Mapping[str, str]]


class VendorError(Exception):
    """A vendor call did not succeed.  ``retry_after`` is the vendor's ``Retry-After``
    header as it came (seconds, or an HTTP date), which the retry policy honours."""

    def __init__(
        self,
        vendor: str,
        operation: str,
        message: str,
        *,
        status: int | None = None,
        body: Any = None,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(f"{vendor} {operation}: {message}")
        self.vendor = vendor
        self.operation = operation
        self.message = message
        self.status = status
        self.body = body
        self.retry_after = retry_after


class VendorUnavailable(VendorError):
    """No usable answer (connection error, dropped connection, timeout, 5xx): the outcome may
    be unknown.  ``maybe_applied`` is False only when the request certainly never left."""

    def __init__(
        self,
        vendor: str,
        operation: str,
        message: str,
        *,
        status: int | None = None,
        body: Any = None,
        maybe_applied: bool = True,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(vendor, operation, message, status=status, body=body,
                         retry_after=retry_after)
        self.maybe_applied = maybe_applied


class VendorRejected(VendorError):
    """The vendor refused the request (4xx): it had no effect."""

    status: int


def _xml_body(text: str) -> Any:
    """An XML answer as nested dicts by local tag name (``{"PublishResponse":
    {"PublishResult": {"MessageId": ...}}}``); the text when it is not XML."""
    def node(el: ElementTree.Element) -> Any:
        children = list(el)
        if not children:
            return el.text
        return {child.tag.rpartition("}")[2]: node(child) for child in children}

    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return text
    return {root.tag.rpartition("}")[2]: node(root)}


class VendorFenced(VendorRejected):
    """409: the vendor refused the call's fencing token (its run's epoch) as older than
    one it has seen for the run: a newer attempt has taken the run over.  Nothing was
    applied (:mod:`ticketiq_pg.vendors.fencing`)."""

    fenced = True


def _error_message(body: Any, fallback: str) -> str:
    """The human message out of a vendor's error body, whatever its shape."""
    if isinstance(body, dict) and isinstance(body.get("ErrorResponse"), dict):  # AWS XML
        body = body["ErrorResponse"].get("Error") or {}
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            msg = errors[0].get("message")  # incident.io
            if isinstance(msg, str):
                return msg
        msgs = body.get("errorMessages")  # Jira
        if isinstance(msgs, list) and msgs:
            field_errors = errors if isinstance(errors, dict) else {}
            return "; ".join([*map(str, msgs), *(f"{k}: {v}" for k, v in field_errors.items())])
        if isinstance(errors, dict) and errors:
            return "; ".join(f"{k}: {v}" for k, v in errors.items())
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):  # Teams
            return err["message"]
        if isinstance(err, str):
            return err
        for name in ("message", "Message"):  # Discord, SQS
            if isinstance(body.get(name), str):
                return body[name]
    return fallback


class VendorClient:
    """Base: one vendor's API root over a shared ``httpx.AsyncClient``."""

    vendor: ClassVar[str] = ""
    local_prefix: ClassVar[str] = ""  # the vendor's prefix on the local vendor service
    takes_key: ClassVar[bool] = False
    dedupe_window_seconds: ClassVar[float | None] = None
    has_reader: ClassVar[bool] = False

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        *,
        timeout: TimeoutTypes = None,
        headers: Mapping[str, str] | None = None,
        signer: Signer | None = None,
    ) -> None:
        self.http = http
        self.signer = signer
        self.base_url = base_url.rstrip("/")
        # None: the AsyncClient's own timeout applies.
        self.timeout: Any = httpx.USE_CLIENT_DEFAULT if timeout is None else timeout
        self.headers = dict(headers or {})

    async def _request(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        form_body: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = None,
    ) -> Any:
        url = self.base_url + path
        all_headers = {"Accept": "application/json", **self.headers, **(headers or {})}
        content: bytes | None = None
        if json_body is not None:
            content = json.dumps(json_body, separators=(",", ":")).encode("utf-8")
            all_headers["Content-Type"] = content_type or "application/json"
        elif form_body is not None:
            content = urlencode(dict(form_body)).encode("utf-8")
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        fence = fencing.current()
        if fence is not None:
            # Also through a client of the app's own whose transport is not fenced.
            fence.check(0.0)
            all_headers[fencing.FENCE_HEADER] = fence.token
        if self.signer is not None:
            url = str(httpx.URL(url, params=params))
            params = None
            all_headers = dict(self.signer(method, url, all_headers, content))
        try:
            resp = await self.http.request(
                method,
                url,
                content=content,
                params=params,
                headers=all_headers,
                timeout=self.timeout,
            )
        except (
            httpx.ConnectError,
            httpx.ConnectTimeout,
            httpx.PoolTimeout,
            httpx.UnsupportedProtocol,
        ) as exc:
            raise VendorUnavailable(
                self.vendor,
                operation,
                f"could not connect ({type(exc).__name__}: {exc})",
                maybe_applied=False,
            ) from exc
        except httpx.TimeoutException as exc:
            raise VendorUnavailable(
                self.vendor, operation, f"timed out waiting for the answer ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise VendorUnavailable(
                self.vendor,
                operation,
                f"connection lost before an answer ({type(exc).__name__}: {exc})",
            ) from exc
        try:
            body = resp.json() if resp.content else None
        except ValueError:
            body = resp.text
            if "xml" in resp.headers.get("content-type", ""):  # AWS's query protocol
                body = _xml_body(body)
        status = resp.status_code
        if status >= 400:
            error = VendorUnavailable if status >= 500 else VendorRejected
            if status == 409 and resp.headers.get(fencing.REFUSED_HEADER):
                error = VendorFenced
            raise error(
                self.vendor,
                operation,
                f"HTTP {status}: {_error_message(body, resp.reason_phrase)}",
                status=status,
                body=body,
                retry_after=resp.headers.get("retry-after"),
            )
        if status < 200 or status >= 300 or not isinstance(body, (dict, list)):
            raise VendorUnavailable(
                self.vendor,
                operation,
                f"unreadable answer (HTTP {status}): {resp.text[:200]!r}",
                status=status,
                body=body,
            )
        return body
