"""runtime/store.py: the engine's narrow interface to the database is the driver's own.

Every function of ``RunStore`` and ``WaitStore`` is a method of the driver (or of its
``waits`` part) with the same parameters (the driver's ``conn`` aside), and the engine's
parts reach the database through nothing else.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ticketiq_pg.db.driver import TicketIQ
from ticketiq_pg.db.waits import WaitFunctions
from ticketiq_pg.runtime import store

ENGINE = ("runner", "calls", "deciders", "resume", "ending", "waits", "call_rows",
          "call_fence", "outage", "malformed", "setup", "chain", "workflow_engine")
RUNTIME = Path(store.__file__).parent


def params(fn: object) -> list[tuple[str, object]]:
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    return [(p.name, p.default) for p in sig.parameters.values() if p.name not in ("self", "conn")]


def protocol_methods(proto: type) -> list[str]:
    return [n for n, v in vars(proto).items()
            if inspect.iscoroutinefunction(v) and not n.startswith("_")]


@pytest.mark.parametrize(("proto", "impl"), [(store.RunStore, TicketIQ),
                                             (store.WaitStore, WaitFunctions)])
def test_the_driver_is_the_store(proto: type, impl: type) -> None:
    names = protocol_methods(proto)
    assert len(names) >= 5
    for name in names:
        assert params(getattr(proto, name)) == params(getattr(impl, name)), name


def test_the_engine_reaches_the_database_only_through_the_store() -> None:
    """No part of the engine imports the driver, nor calls a store function the store
    does not name."""
    named = set(protocol_methods(store.RunStore)) | set(protocol_methods(store.WaitStore))
    for module in ENGINE:
        tree = ast.parse((RUNTIME / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "ticketiq_pg.db.driver", module
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                is_db = ((isinstance(owner, ast.Name) and owner.id == "db")
                         or (isinstance(owner, ast.Attribute) and owner.attr in ("db", "waits")
                             and ast.unparse(owner).endswith(("db", "db.waits"))))
                if is_db:
                    assert node.func.attr in named, f"{module}: {ast.unparse(node.func)}"
