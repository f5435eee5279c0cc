"""The docs that are generated from the code are up to date."""

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
