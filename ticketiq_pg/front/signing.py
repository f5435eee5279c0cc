"""A webhook's signature, as a sender computes it and the front checks it (docs/front.md)."""

from __future__ import annotations

import hashlib
import hmac


def sign_webhook(secret: str, timestamp: str, delivery_id: str, body: bytes) -> str:
    """The hex HMAC-SHA256 a sender puts in ``X-Signature`` (after ``sha256=``)."""
    message = timestamp.encode() + b"." + delivery_id.encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
