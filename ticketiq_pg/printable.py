"""Stored text made safe to show a person: control characters neutralised.

Text a run, a caller or a vendor stored (a name, a reason, a tool's argument) may hold
control characters: an ESC that recolours or clears a terminal, a carriage return that
hides what came before it on the line, a bidirectional override that reorders what is
read.  Every rendering of stored text for a person (the CLI's tables and lines, the
text log format) passes it through :func:`printable`, which writes each such character
as its escape (``\\x1b``, ``\\u202e``) instead; a newline and a tab stay where the text
may span lines.  JSON output escapes them already.
"""

from __future__ import annotations

import unicodedata
from typing import TextIO

__all__ = ["printable", "say"]

_KEEP = frozenset("\n\t")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_lines: bool = True) -> str:
    """``text`` with every control and format character written as its escape.

    ``keep_lines``: a newline and a tab stay (a multi-line message); otherwise they are
    escaped too.
    """
    if text.isprintable():
        return text  # the common case, at C speed
    return "".join(
        ch if (keep_lines and ch in _KEEP) or unicodedata.category(ch) not in ("Cc", "Cf", "Zl",
                                                                              "Zp")
        else _escape(ch)
        for ch in text
    )


def say(*parts: object, file: TextIO | None = None) -> None:
    """``print`` for a person: each part's control characters neutralised (the CLI's one
    door to the terminal)."""
    print(*(printable(str(part)) for part in parts), file=file)
