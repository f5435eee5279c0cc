"""Locate the SQL tree (migrations/, comments.sql, functions/, grants.sql, tests/).

In an editable checkout the files live in ``<repo>/sql``; an installed wheel carries
the same tree as ``ticketiq_pg/sql`` (hatch ``force-include``, see pyproject.toml).
``TICKETIQ_SQL_DIR`` overrides both (used by scripts and tests pointing at stub trees).
"""

from __future__ import annotations

from pathlib import Path

from ticketiq_pg.config import Environment

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

ENV_VAR = Environment.SQL_DIR


def repo_root() -> Path | None:
    """The source checkout this module runs from, or None when installed from a wheel."""
    root = _PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file() and (root / "sql").is_dir():
        return root
    return None


def sql_dir() -> Path:
    """Directory holding ``migrations/``, ``comments.sql``, ``functions/`` and ``grants.sql``."""
    override = Environment.current().get(ENV_VAR)
    if override:
        path = Path(override).expanduser().resolve()
        if not path.is_dir():
            raise FileNotFoundError(f"{ENV_VAR}={override!r} is not a directory")
        return path
    packaged = _PACKAGE_DIR / "sql"
    if packaged.is_dir():
        return packaged
    root = repo_root()
    if root is not None:
        return root / "sql"
    raise FileNotFoundError(
        f"no SQL directory: neither {packaged} (installed wheel) nor "
        f"{_PACKAGE_DIR.parent / 'sql'} (source checkout) exists"
    )
