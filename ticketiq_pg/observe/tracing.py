"""Traces through OpenTelemetry (the ``otel`` extra): filled in below."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ENABLED = False


def attach(worker: Any) -> None:
    return None


def on_statement(function: str, args: Sequence[Any], seconds: float,
                 rows: list[dict[str, Any]] | None, error: BaseException | None) -> None:
    return None
