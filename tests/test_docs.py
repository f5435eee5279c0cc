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


def test_every_refusal_reason_the_front_can_count_is_in_the_table() -> None:
    """docs/front.md's refusal table names every reason the front counts (the first
    argument of ``note_refusal``, the reason of an ``AuthError`` or a ``Refused``, their
    defaults), read from the source; and names none the code no longer has."""
    import ast
    import importlib
    import re

    reasons: set[str] = set()
    places = {"note_refusal": 0, "AuthError": 2, "Refused": 2}
    for path in sorted((ROOT / "ticketiq_pg" / "front").glob("*.py")):
        module = importlib.import_module(f"ticketiq_pg.front.{path.stem}")

        def resolve(node: ast.expr, module: object = module) -> str | None:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return node.value
            if isinstance(node, ast.Name) and isinstance(getattr(module, node.id, None), str):
                return str(getattr(module, node.id))
            return None  # a variable passed on (counted where it was made)

        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name not in places:
                    continue
                args = [k.value for k in node.keywords if k.arg == "reason"]
                if len(node.args) > places[name]:
                    args.append(node.args[places[name]])
                reasons.update(r for r in map(resolve, args) if r)
            elif isinstance(node, ast.ClassDef) and node.name in ("AuthError", "Refused"):
                init = next(n for n in node.body if isinstance(n, ast.FunctionDef)
                            and n.name == "__init__")
                named = [a.arg for a in init.args.args][-len(init.args.defaults):]
                reasons.update(r for a, d in zip(named, init.args.defaults, strict=True)
                               if a == "reason" and (r := resolve(d)))
    assert {"bad_api_key", "value_postgres_refuses", "key_in_use", "slow_client",
            "bad_credential", "nested_too_deep", "console_forbidden"} <= reasons, reasons
    page = (ROOT / "docs" / "front.md").read_text()
    table = page.split("## Security", 1)[1].split("\n\n**", 1)[0]
    documented = {r for line in table.splitlines() if line.startswith("| 4")
                  for r in re.findall(r"`([a-z_]+)`", line.split("|")[3])}
    assert reasons - documented == set(), "reasons the table does not name"
    assert documented - reasons == set(), "reasons the table names that nothing counts"
