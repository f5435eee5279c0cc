"""The operator's reports as the CLI prints them: read in one snapshot, then rendered.

Each ``*_text`` function opens a :func:`~ticketiq_pg.db.inspect.snapshot`, runs its query
(:mod:`ticketiq_pg.db.inspect`, :mod:`ticketiq_pg.db.inspect_run`) and returns the
``--json`` text or the tables of :mod:`ticketiq_pg.ops.render`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from ticketiq_pg.db.inspect import audit, runs, snapshot, status
from ticketiq_pg.db.inspect_run import show
from ticketiq_pg.ops.render import render_audit, render_runs, render_show, render_status, to_json


def _text(url: str, as_json: bool, query: Callable[[psycopg.Connection[Any]], dict[str, Any]],
          render: Callable[[dict[str, Any]], str]) -> str:
    with snapshot(url) as conn:
        report = query(conn)
    return to_json(report) if as_json else render(report)


def status_text(url: str, as_json: bool = False, **options: Any) -> str:
    return _text(url, as_json, lambda c: status(c, **options), render_status)


def runs_text(url: str, as_json: bool = False, **filters: Any) -> str:
    return _text(url, as_json, lambda c: runs(c, **filters), render_runs)


def show_text(url: str, run_id: uuid.UUID, as_json: bool = False) -> str:
    return _text(url, as_json, lambda c: show(c, run_id), render_show)


def audit_text(url: str, as_json: bool = False, **filters: Any) -> str:
    return _text(url, as_json, lambda c: audit(c, **filters), render_audit)
