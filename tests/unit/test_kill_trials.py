"""Kill trials: two local app processes over one PostgreSQL, a victim faulted at random.

Runs only when asked::

    LIYAGENT_KILL_TRIALS=200 .venv/bin/python -m pytest tests/unit/test_kill_trials.py -q

``LIYAGENT_KILL_SEED`` fixes the kill timings for a repeat run;
``LIYAGENT_KILL_MODE`` is kill (default), stop, backend or restart;
``LIYAGENT_KILL_REPORT`` names a file to write the result to as JSON.
Judged from the database and the vendor service's own record (see
:mod:`ticketiq_pg.trials`): no lost trial, no duplicate write, recovery
within 15 s, and in ``stop`` mode no write by the stalled process after the
takeover.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from ticketiq_pg.migrate import install_sync
from ticketiq_pg.testing.cluster import PrivateCluster, temporary_database
from ticketiq_pg.trials import percentile, run_trials

ROUNDS = int(os.environ.get("LIYAGENT_KILL_TRIALS", "0") or 0)
MODE = os.environ.get("LIYAGENT_KILL_MODE", "kill")
RECOVERY_BOUND = 15.0

pytestmark = pytest.mark.skipif(
    ROUNDS <= 0, reason="kill trials run only when asked: LIYAGENT_KILL_TRIALS=N"
)


def _seed() -> int:
    raw = os.environ.get("LIYAGENT_KILL_SEED")
    return int(raw) if raw else random.SystemRandom().randrange(1 << 31)


def test_kill_trials(pg_server_url: str, tmp_path: Path) -> None:
    import psycopg

    seed = _seed()
    cluster: PrivateCluster | None = None
    server = pg_server_url
    if MODE == "restart":
        # A restart needs a cluster of the harness's own.
        cluster = PrivateCluster()
        cluster.start()
        server = cluster.admin_url
    try:
        with temporary_database(server, prefix="tiq_trials") as url:
            with psycopg.connect(url, autocommit=True) as conn:
                install_sync(conn)
            report = run_trials(
                url, tmp_path / "arena", rounds=ROUNDS, seed=seed, mode=MODE,
                restart_cluster=cluster.restart if cluster is not None else None,
                on_round=lambda i, trials, _: print(
                    f"round {i}: " + ", ".join(
                        f"{t.kind} {t.outcome}"
                        + (f" {t.recovery_seconds:.1f}s" if t.recovery_seconds else "")
                        for t in trials), flush=True),
            )
    finally:
        if cluster is not None:
            cluster.stop()

    result = report.as_json()
    recovery = report.recovery_seconds
    result["recovery_p50"] = percentile(recovery, 0.5)
    result["recovery_p95"] = percentile(recovery, 0.95)
    result["recovery_max"] = max(recovery) if recovery else None
    if os.environ.get("LIYAGENT_KILL_REPORT"):
        Path(os.environ["LIYAGENT_KILL_REPORT"]).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}))

    lost = [t for t in report.trials if t.outcome != "answered"]
    assert not lost, f"seed {seed}: lost trials {lost}"
    assert report.duplicates == {}, f"seed {seed}: duplicate writes {report.duplicates}"
    slow = [t for t in report.trials if (t.recovery_seconds or 0) > RECOVERY_BOUND]
    assert not slow, f"seed {seed}: recovery over {RECOVERY_BOUND}s: {slow}"
    assert report.stalled_writes == 0, f"seed {seed}: the stalled process wrote after takeover"
    assert report.rounds == ROUNDS
