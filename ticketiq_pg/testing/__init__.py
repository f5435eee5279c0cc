"""The helpers for an app's own tests (:mod:`ticketiq_pg.testing.apps`, exported here), and
the throwaway PostgreSQL server :func:`fresh_database` starts when no server is named
(:mod:`ticketiq_pg.testing.postgres`).  The library's own harness (the vendor and model
provider stand-ins, the kill trials, the clusters) is the repository's ``harness``
folder, not part of the package.

::

    from ticketiq_pg.testing import WorkerProcess, fresh_database, wait_for_runs
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ticketiq_pg.testing.apps import (
        Call,
        Checkpoint,
        WorkerProcess,
        calls,
        checkpoints,
        crash_resumes,
        fresh_database,
        make_api_key,
        runs,
        wait_for,
        wait_for_runs,
    )

__all__ = ["Call", "Checkpoint", "WorkerProcess", "calls", "checkpoints", "crash_resumes",
           "fresh_database", "make_api_key", "runs", "wait_for", "wait_for_runs"]


def __getattr__(name: str) -> Any:
    # Imported on use: the scripts that start a server import .postgres (standard library
    # only) without the helpers and their psycopg.
    if name in __all__:
        return getattr(importlib.import_module("ticketiq_pg.testing.apps"), name)
    raise AttributeError(f"module 'ticketiq_pg.testing' has no attribute {name!r}")
