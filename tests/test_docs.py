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


def test_the_architecture_page_names_what_exists() -> None:
    """docs/architecture.md: every file its guarantee table names exists, and every
    ``Class.method`` it names beside a Python file is defined there."""
    import importlib
    import re

    page = (ROOT / "docs" / "architecture.md").read_text()
    table = page.split("## Where each guarantee lives", 1)[1].split("\n## ", 1)[0]
    named = 0
    for cell in (c for line in table.splitlines()[2:] for c in line.split("|")[3:5]):
        for sql in re.findall(r"`([a-z_]+\.sql)`", cell):
            assert (ROOT / "sql" / "functions" / sql).is_file(), sql
            named += 1
        module = None
        for item in re.split(r"[;,]", cell):
            file = re.search(r"`((?:runtime|db|front)/[a-z_]+\.py)`", item)
            if file:
                path = ROOT / "ticketiq_pg" / file.group(1)
                assert path.is_file(), file.group(1)
                module = importlib.import_module(
                    "ticketiq_pg." + file.group(1)[:-3].replace("/", "."))
                named += 1
            for owner, attr in re.findall(r"`([A-Z]\w+)\.(\w+)`", item):
                assert module is not None, (owner, attr)
                assert hasattr(getattr(module, owner), attr), f"{owner}.{attr}"
                named += 1
    assert named > 30
