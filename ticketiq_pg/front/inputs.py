"""Values Python's ``json`` takes and PostgreSQL refuses, found before anything is written.

Python parses ``NaN``, ``Infinity`` and ``1e999`` (an infinite float), ``\\u0000`` and
lone surrogates (``\\ud800``); ``jsonb`` refuses the first three (22P02), and no text
or ``jsonb`` string holds NUL (22P05, or psycopg's "cannot contain NUL") or a lone
surrogate (22P02, or a UnicodeEncodeError).  Sent on, each would be a 500; the front
answers 422 instead, naming where the value is, and writes nothing (docs/front.md).
"""

from __future__ import annotations

import math
import re
from typing import Any

from fastapi import HTTPException

from ticketiq_pg.front.refusals import note_refusal

REASON = "value_postgres_refuses"
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


def refused_value(value: Any, *where: str | int) -> tuple[list[str | int], str] | None:
    """Where in ``value`` (parsed JSON, or a text) PostgreSQL would refuse it, and why;
    None when it can be stored."""
    stack: list[tuple[Any, list[str | int]]] = [(value, list(where))]
    while stack:
        item, at = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return at, f"{item!r} is not a number PostgreSQL's jsonb holds"
        if isinstance(item, str) and _BAD_CHAR.search(item):
            return at, "text with NUL (\\u0000) or a lone surrogate (\\ud800-\\udfff)"
        if isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str) and _BAD_CHAR.search(key):
                    return at, "a key with NUL (\\u0000) or a lone surrogate"
                stack.append((inner, [*at, key]))
        elif isinstance(item, list | tuple):
            stack.extend((inner, [*at, i]) for i, inner in enumerate(item))
    return None


class Refused(HTTPException):
    """422: a value the front refuses, with where it is (``detail[].loc``) and why;
    counted under ``reason`` (:mod:`.refusals`) when it is made."""

    def __init__(self, loc: list[str | int], problem: str, reason: str = REASON) -> None:
        message = (f"PostgreSQL cannot store this value: {problem}" if reason == REASON
                   else problem)
        super().__init__(status_code=422, detail=[{"loc": loc, "type": reason,
                                                   "msg": message}])
        self.loc, self.problem, self.reason, self.message = loc, problem, reason, message
        note_refusal(reason, f"{'.'.join(map(str, loc))}: {problem}")


def require_storable(where: str, **values: Any) -> None:
    """422 (:class:`Refused`, counted) if any value holds what PostgreSQL refuses;
    ``where`` is the ``loc`` they come from (``body``, ``header``, ``query``...)."""
    for name, value in values.items():
        found = refused_value(value, where, name)
        if found is not None:
            raise Refused(*found)
