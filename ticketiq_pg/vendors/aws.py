"""AWS Signature Version 4 for the SQS and SNS clients, by botocore (extra ``vendors``).

:class:`SigV4` signs one request for one service and region with botocore's ``SigV4Auth``;
the credentials come from botocore's standard chain (``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE`` and ``~/.aws``, SSO, web identity, the
container or instance role) unless given.  Temporary credentials are refreshed by
botocore as they near expiry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SigV4"]


class SigV4:
    """A signer for ``VendorClient(signer=...)``: ``(method, url, headers, body)`` to the
    headers with ``Authorization``, ``X-Amz-Date`` (and ``X-Amz-Security-Token``) added."""

    def __init__(self, service: str, region: str, credentials: Any = None) -> None:
        try:
            import botocore.session
        except ImportError as exc:  # pragma: no cover - said once, where the client is made
            raise ImportError("SigV4 signing needs botocore: pip install "
                              "'ticketiq-pg[vendors]'") from exc
        self.service, self.region = service, region
        self.credentials = credentials or botocore.session.get_session().get_credentials()
        if self.credentials is None:
            raise ValueError("no AWS credentials found in the standard chain (environment, "
                             "~/.aws, SSO, container or instance role)")

    def __call__(self, method: str, url: str, headers: Mapping[str, str],
                 body: bytes | None) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
        frozen = self.credentials.get_frozen_credentials()
        SigV4Auth(frozen, self.service, self.region).add_auth(request)
        return dict(request.headers.items())
