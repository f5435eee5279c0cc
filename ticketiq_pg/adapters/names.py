"""The name map: the library's tool names (dots allowed) and the names a provider sees.

OpenAI and Anthropic take tool names matching ``^[a-zA-Z0-9_-]{1,64}$``; the library's
names may hold dots (``jira.get_issue``).  :class:`ToolNames` maps each library name to
one provider name and back, one to one: a name that is valid already is kept; any other
character becomes ``_`` (``jira.get_issue`` -> ``jira_get_issue``); a name that would
then collide with another tool's, or is longer than 64 characters, gets a short hash of
its library name as a suffix.  The map depends on the set of names only, not on the
order the tools were added, so every process of an app maps the same way.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["PROVIDER_NAME", "ToolNames", "provider_name"]

#: What OpenAI and Anthropic accept as a tool name.
PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64


def _sanitized(name: str) -> str:
    return _BAD.sub("_", name) or "tool"


def _hashed(name: str) -> str:
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{_sanitized(name)[:MAX_NAME - 9]}_{digest}"


def provider_name(name: str) -> str:
    """The provider name of ``name`` on its own (no other tool to collide with)."""
    if PROVIDER_NAME.match(name):
        return name
    plain = _sanitized(name)
    return plain if len(plain) <= MAX_NAME else _hashed(name)


class ToolNames:
    """A one-to-one map between library tool names and provider tool names."""

    def __init__(self, names: Iterable[str]) -> None:
        wanted = sorted(set(names))
        groups: dict[str, list[str]] = {}
        for name in wanted:
            groups.setdefault(provider_name(name), []).append(name)
        self._to_provider: dict[str, str] = {}
        for plain, members in groups.items():
            for name in members:
                keeps = len(members) == 1 or name == plain
                self._to_provider[name] = plain if keeps else _hashed(name)
        self._to_library = {p: n for n, p in self._to_provider.items()}
        if len(self._to_library) != len(self._to_provider):
            raise ValueError(f"tool names collide for the provider: {sorted(wanted)}")

    def provider(self, name: str) -> str:
        """The name the provider sees for the library tool ``name``."""
        found = self._to_provider.get(name)
        return found if found is not None else provider_name(name)

    def library(self, provider: str) -> str:
        """The library tool a provider's name stands for (an unknown name as it is)."""
        return self._to_library.get(provider, provider)

    def items(self) -> list[tuple[str, str]]:
        """``(library name, provider name)`` pairs, by library name."""
        return sorted(self._to_provider.items())

    def __len__(self) -> int:
        return len(self._to_provider)
