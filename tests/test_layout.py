"""The package's rooms and their arrows, read from the source: one way, no cycles; the
module sizes reported.

Layers, lowest first: the base (errors, seal, agent, workflow, config), the database layer
(``db``) and the real vendor clients (``vendors``), the runtime of one process
(``runtime``), the HTTP front (``front``) and the operator's tools (``ops``), the helpers
for an app's tests (``testing``), the package's ``__init__`` that re-exports the public
API, and above them all the repository's ``harness`` (not in the wheel): it may import
the library, the library never imports it.  (``ticketiq-pg demo`` finds the harness's
demo by name at run time, ``ops.cli.DEMO_MODULE``: no import arrow.)  A module may import
only from its own layer or below, and no module imports itself round a cycle.  Imports
inside functions count, and so do ``TYPE_CHECKING`` imports, for the cycles too: a type
named both ways is no cycle at run time, but it is two modules that each need the other
(a shared definition in the wrong place).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import ticketiq_pg

PACKAGE = Path(ticketiq_pg.__file__).resolve().parent
HARNESS = PACKAGE.parent / "harness"
ROOTS = ("ticketiq_pg", "harness")
#: How many of the largest modules the size report lists.
REPORTED = 10

LAYERS = {
    "ticketiq_pg.errors": 0, "ticketiq_pg.seal": 0, "ticketiq_pg.agent": 0,
    "ticketiq_pg.config": 0, "ticketiq_pg.retries": 0, "ticketiq_pg.workflow": 0,
    "ticketiq_pg.background": 0, "ticketiq_pg.printable": 0,
    "ticketiq_pg.db": 1, "ticketiq_pg.vendors": 1, "ticketiq_pg.adapters": 1,
    # the schema derivation and validator Tool uses (imports nothing of ticketiq_pg)
    "ticketiq_pg.adapters.schema": 0,
    "ticketiq_pg.runtime": 2, "ticketiq_pg.observe": 2,
    # agent frameworks as an App's model and tools (a layer as high as the runtime)
    "ticketiq_pg.integrations": 2,
    "ticketiq_pg.front": 3, "ticketiq_pg.ops": 3,
    "ticketiq_pg.testing": 4,
    # the package's __init__ (5, below) re-exports the API; the repository's harness
    # (simulators, kill trials, clusters) uses the library from above
    "harness": 6,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """The library's modules and the harness's."""
    paths = sorted(PACKAGE.rglob("*.py")) + sorted(HARNESS.rglob("*.py"))
    return {module_name(p): p for p in paths}


def layer(name: str) -> int:
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if name == prefix or name.startswith(prefix + "."):
            return LAYERS[prefix]
    if name == "ticketiq_pg":
        return 5
    raise AssertionError(f"{name} is in no layer: add it to LAYERS")


def imports(path: Path, known: set[str]) -> set[str]:
    """The modules of the package and the harness that ``path`` imports, anywhere in it
    (``TYPE_CHECKING`` blocks and function bodies too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(n for n in names if n in known and n.split(".")[0] in ROOTS)
    found.discard("ticketiq_pg")  # `import ticketiq_pg.x` names the package on the way
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports(path, known) - {name} for name, path in mods.items()}


def test_every_arrow_points_down() -> None:
    up = [
        f"{src} -> {dst}"
        for src, dsts in graph().items()
        for dst in sorted(dsts)
        if layer(dst) > layer(src)
    ]
    assert up == []


def test_the_library_never_imports_the_harness() -> None:
    # The wheel has no harness: not one arrow from the package to it, at any layer.
    into = [f"{src} -> {dst}" for src, dsts in graph().items() if src.startswith("ticketiq_pg")
            for dst in sorted(dsts) if dst.split(".")[0] == "harness"]
    assert into == []


def test_the_demo_the_cli_names_is_the_harness_s() -> None:
    # ``ticketiq-pg demo`` imports it by name (no arrow): the name must still be right.
    from ticketiq_pg.ops.cli import DEMO_MODULE

    assert DEMO_MODULE.split(".")[0] == "harness"
    assert callable(importlib.import_module(DEMO_MODULE).main)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of ``edges`` closes, as the path round it."""
    seen: dict[str, int] = {}  # 1: on the path, 2: done
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if seen.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in seen:
                visit(nxt, path + [nxt])
        seen[node] = 2

    for start in sorted(edges):
        if start not in seen:
            visit(start, [start])
    return found


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_module_sizes_are_reported(record_property: pytest.RecordProperty) -> None:
    """A figure, not a cap: the largest modules of the library and of the harness, in
    lines (shown with ``-s``; in the JUnit XML as the test's properties)."""
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    for root in ROOTS:
        mine = {n: k for n, k in sizes.items() if n.split(".")[0] == root}
        assert mine, f"no module of {root} found"
        largest = sorted(mine.items(), key=lambda item: (-item[1], item[0]))[:REPORTED]
        record_property(f"{root}_lines", sum(mine.values()))
        record_property(f"{root}_largest", ", ".join(f"{n} {k}" for n, k in largest))
        print(f"\n{root}: {len(mine)} modules, {sum(mine.values())} lines; largest:")
        for name, lines in largest:
            print(f"  {lines:5d}  {name}")


def test_the_checks_see_a_bad_arrow(tmp_path: Path) -> None:
    # The arrow test must be able to fail: a base module importing the runtime is caught,
    # and so is any library module importing the harness.
    bad = tmp_path / "bad.py"
    bad.write_text("from ticketiq_pg.runtime.worker import Worker\n"
                   "from harness.vendor_sim.process import VendorService\n")
    assert imports(bad, set(modules())) == {"ticketiq_pg.runtime.worker",
                                            "harness.vendor_sim.process"}
    assert layer("ticketiq_pg.runtime.worker") > layer("ticketiq_pg.errors")
    assert layer("harness.vendor_sim.process") > layer("ticketiq_pg")
    # and the cycle test: two modules each naming the other, if only for a type
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from harness.trials import Arena\n")
    assert imports(typed, set(modules())) == {"harness.trials"}
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"]]


def test_public_api_is_listed_typed_and_documented() -> None:
    assert (PACKAGE / "py.typed").is_file()
    missing = [n for n in ticketiq_pg.__all__ if not hasattr(ticketiq_pg, n)]
    assert missing == []
    undocumented = []
    for name in ticketiq_pg.__all__:
        value = getattr(ticketiq_pg, name)
        if not isinstance(value, type):
            continue
        if not (value.__doc__ or "").strip():
            undocumented.append(name)
        for attr in dir(value):
            owner = next((k for k in value.__mro__ if attr in vars(k)), None)
            if (attr.startswith("_") or owner is None or not callable(getattr(value, attr))
                    or not owner.__module__.startswith("ticketiq_pg")):
                continue
            doc = inspect.getdoc(getattr(value, attr)) or ""
            if not doc.strip() or doc == inspect.getdoc(owner):
                undocumented.append(f"{name}.{attr}")
    assert undocumented == []


@pytest.mark.parametrize("heavy", ["fastapi", "uvicorn", "httpx", "ticketiq_pg.testing",
                                   "harness"])
def test_importing_the_api_brings_no_web_stack_nor_harness(heavy: str) -> None:
    code = (
        "import sys, ticketiq_pg\n"
        "for name in ticketiq_pg.__all__:\n"
        # the front and the httpx transport are the web stack; the rest must not bring it
        "    if name not in ('create_front', 'FencedTransport'): getattr(ticketiq_pg, name)\n"
        f"print({heavy!r} in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "False"


def test_the_environment_is_read_in_one_place() -> None:
    """Configuration is read by ticketiq_pg.config alone: no other module of the library
    reads ``os.environ`` or ``os.getenv`` (the harness, which sets up processes, may)."""
    readers = []
    for name, path in modules().items():
        if name == "ticketiq_pg.config" or name.split(".")[0] == "harness" \
                or name.startswith("ticketiq_pg.testing"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                readers.append(f"{name}:{node.lineno}")
    assert readers == []
