"""Duplicate writes counted by what landed: per run and tool call, whatever key it carried.

The scripted tools (:mod:`~harness.scripted`) put the run, the step and the
provider call id a write belongs to into the content they send (an incident's name, a
comment's text, a Teams reply's text), as :func:`mark` writes it; the step is part of a
call's identity, since a provider's call ids need only be unique within a step (they
may be bare positions, ``call_0``).  A scripted answer asked to (``"mark_answer": true``
in its script) carries its run, its step and the call ``answer``, so the reply that
delivers it to Teams is marked too.  The vendor service records every request it
receives with its body; :func:`writes` reads the mark back out of each recorded write,
and :func:`duplicates` counts the writes the vendor applied (effect ``created``) for one
call of a run: more than one is a duplicate, whatever keys they carried.  A request the
vendor deduplicated (effect ``deduplicated``) applied nothing and is no duplicate.

A write that carries no mark (another app's, a job's) is counted by its key, as before:
by (vendor, key) when it had one; a keyless unmarked write is listed, never counted.
So the count by what landed finds every duplicate the per-key count finds, and also a
resend under a new key (a key-derivation bug), which :func:`duplicates_per_key` (the
old count, kept for comparison) cannot see.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote_plus

#: What a marked write carries in its content.
MARK = re.compile(r"\[run=([0-9A-Za-z-]+) step=([0-9]+) call=([^\]\s]+)\]")
#: The call of a run's answer (delivered once, e.g. as its Teams reply).
ANSWER_CALL = "answer"
#: Vendor requests that never write.
READS = ("GET", "HEAD")


def mark(text: str, run_id: Any, step: int, call_id: str) -> str:
    """``text`` with its run, step and call appended, where the vendor keeps it."""
    return f"{text} [run={run_id} step={step} call={call_id}]"


def origin(body: Any) -> tuple[str, int, str] | None:
    """The (run, step, call) marked anywhere in a recorded request body, if any."""
    for text in _strings(body):
        found = MARK.search(text)
        if found:
            return found.group(1), int(found.group(2)), found.group(3)
    return None


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
        if "%5B" in value:  # a form-encoded body (SNS's query protocol)
            yield unquote_plus(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def writes(requests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every write the vendor service recorded (any effect), with its run, call and key.

    One dict a write: ``request`` (the vendor's request id), ``vendor``, ``method``,
    ``path``, ``effect``, ``key``, ``run_id``, ``step`` and ``call_id`` (None when
    unmarked), and ``wall_at``: enough for anyone to recount.
    """
    out = []
    for request in requests:
        if request["method"] in READS or request["vendor"] == "unknown":
            continue
        found = origin(request.get("body"))
        out.append({
            "request": request["id"], "vendor": request["vendor"],
            "method": request["method"], "path": request["path"],
            "effect": request["effect"], "key": request.get("key"),
            "run_id": found[0] if found else None, "step": found[1] if found else None,
            "call_id": found[2] if found else None,
            "wall_at": request.get("wall_at"),
        })
    return out


def label(write: Mapping[str, Any]) -> str | None:
    """What a write is counted under: its run's call, else its vendor and key."""
    if write["run_id"] is not None:
        return f"run {write['run_id']} step {write['step']} call {write['call_id']}"
    if write["key"]:
        return f"{write['vendor']} key {write['key']} (unmarked)"
    return None


def applied_per_call(listed: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """How many writes the vendor applied, per run and call (see :func:`label`)."""
    return Counter(label(w) for w in listed if w["effect"] == "created" and label(w))


def duplicates(listed: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The calls of runs written more than once where they landed, and how many times."""
    return {k: n for k, n in applied_per_call(listed).items() if n > 1}


def unattributed(listed: Iterable[Mapping[str, Any]]) -> int:
    """Applied writes that carry neither a mark nor a key (listed, never counted)."""
    return sum(1 for w in listed if w["effect"] == "created" and label(w) is None)


def duplicates_per_key(requests: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """The old count: keyed writes applied more than once per (vendor, key)."""
    per_key = Counter((r["vendor"], r["key"]) for r in requests
                      if r["effect"] == "created" and r.get("key"))
    return {k: n for k, n in per_key.items() if n > 1}
