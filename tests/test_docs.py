"""The docs agree with the code: the generated references are up to date, the guide names
every public name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_sql_api_reference_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sql_api_doc.py"), "--check"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_function_file_has_a_header() -> None:
    for path in sorted((ROOT / "sql" / "functions").glob("*.sql")):
        first = path.read_text().splitlines()[0]
        assert first.startswith(f"-- ticketiq.{path.stem}("), path.name


def test_the_guide_names_every_public_name() -> None:
    """docs/guide.md, *Every public name*, lists each name of ``ticketiq_pg.__all__`` and
    the guide teaches each of ``ticketiq_pg.testing.__all__``."""
    import re

    import ticketiq_pg
    import ticketiq_pg.testing

    guide = (ROOT / "docs" / "guide.md").read_text()
    table = guide.split("## Every public name", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([A-Za-z_]+)`", table))
    assert sorted(set(ticketiq_pg.__all__) - listed) == []
    testing = guide.split("## Testing your app", 1)[1].split("\n## ", 1)[0]
    assert [n for n in ticketiq_pg.testing.__all__ if f"`{n}" not in testing] == []
