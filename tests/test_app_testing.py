"""ticketiq_pg.testing, the helpers an app's own tests use (examples/triage/test_triage.py
uses them against a real SIGKILL; tests/test_example_app.py runs it)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from ticketiq_pg import new_seal_key
from ticketiq_pg.testing import WorkerProcess, fresh_database, runs, wait_for, wait_for_runs


def test_a_fresh_database_has_the_schema_and_is_dropped_after(pg_server_url: str) -> None:
    with fresh_database(pg_server_url) as url:
        with psycopg.connect(url) as conn:
            (version,) = conn.execute("select ticketiq.schema_version()").fetchone()
            name = conn.info.dbname
        assert version > 0 and name.startswith("tiq_app_")
        assert runs(url) == []
    with psycopg.connect(pg_server_url) as conn:
        assert conn.execute("select 1 from pg_database where datname = %s",
                            (name,)).fetchall() == []


def test_a_worker_that_cannot_start_says_why(pg_server_url: str, tmp_path: Path) -> None:
    with fresh_database(pg_server_url) as url:
        worker = WorkerProcess("no_such_app_module:app", url, seal_keys=new_seal_key(),
                               app_dir=tmp_path, log_dir=tmp_path)
        with pytest.raises(RuntimeError, match="no module named 'no_such_app_module'"):
            worker.start()


def test_waiting_names_what_it_waited_for() -> None:
    with pytest.raises(TimeoutError, match="timed out after 0.1 s waiting for the moon"):
        wait_for("the moon", lambda: None, timeout=0.1)


def test_waiting_for_runs_that_do_not_exist_times_out(pg_server_url: str) -> None:
    with fresh_database(pg_server_url) as url:
        with pytest.raises(TimeoutError, match="waiting for 1 runs to end; not ended: \\[\\]"):
            wait_for_runs(url, 1, timeout=0.3)


def test_the_testing_extra_brings_pytest() -> None:
    """The guide's test template is a pytest file: ``ticketiq-pg[testing]`` installs it."""
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    extra = project["project"]["optional-dependencies"]["testing"]
    assert [r for r in extra if r.split("[")[0].split(">")[0].strip() == "pytest"], extra
