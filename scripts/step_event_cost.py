"""What a checkpoint's run_events row costs: ``write_checkpoint`` timed in arms, alternating.

    scripts/with_test_server.py -- .venv/bin/python scripts/step_event_cost.py

Arms, on one run at a time, each 1,000 checkpoints of a step of one read: ``shipped``
(the function as installed), ``without`` (its run_events insert left out), ``inline``
(the event's body built in the statement itself, no helper).  Prints the median wall of
one call per arm and round (the server's work, on a local socket, one connection).
"""

from __future__ import annotations

import os
import re
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ticketiq_pg.db.migrate import install_sync

SQL = Path(__file__).resolve().parent.parent / "sql" / "functions"
BODY = {"chain": "link", "conversation": [{"role": "assistant", "content": "step"}],
        "calls": [{"call_id": "c1", "tool": "jira.get_issue", "classification": "read",
                   "arguments": {"issue_key": "OPS-1"}, "step_key": None}],
        "counters": {"model_steps": 1}, "history": [], "delegation_keys": {}}


def arms() -> dict[str, str]:
    shipped = (SQL / "write_checkpoint.sql").read_text()
    event = re.search(r",\n\n            -- The run's event stream.*?"
                      r"where f.lease_expires_at > f.locked_at\n            \)", shipped, re.S)
    helper = (SQL / "_step_event.sql").read_text()
    body = re.search(r"return (jsonb_build_object\(.*?\n    \));", helper, re.S)
    assert event and body, "write_checkpoint.sql or _step_event.sql changed shape"
    return {"shipped": shipped, "without": shipped.replace(event.group(0), ""),
            "inline": shipped.replace("ticketiq._step_event(p_body)", body.group(1))}


def arm(conn: psycopg.Connection[Any], sql: str, n: int) -> float:
    conn.execute(sql)
    run_id, epoch = conn.execute(
        "select run_id, epoch from ticketiq.start_run('h', 'o', 'r', 'c', 'e', false, 3600, "
        "'{}', null, null, '{}')").fetchone()
    walls = []
    for step in range(1, n + 1):
        started = time.perf_counter()
        conn.execute("select * from ticketiq.write_checkpoint(%s, %s, %s, %s, 's', 'k')",
                     (run_id, epoch, step, Jsonb(BODY)))
        walls.append(time.perf_counter() - started)
    return statistics.median(walls) * 1e6


def main() -> None:
    url = os.environ["TICKETIQ_TEST_DATABASE_URL"]
    name = "step_event_" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"create database {name}")
        try:
            db_url = url.rsplit("/", 1)[0] + "/" + name
            with psycopg.connect(db_url, autocommit=True) as conn:
                install_sync(conn)
                found = arms()
                arm(conn, found["without"], 300)  # warm up
                walls: dict[str, list[float]] = {k: [] for k in found}
                for rnd in range(3):
                    for label in (list(found) if rnd % 2 == 0 else list(reversed(found))):
                        walls[label].append(arm(conn, found[label], 1000))
                    conn.execute((SQL / "write_checkpoint.sql").read_text())
            for label, values in walls.items():
                print(f"{label:8} median {statistics.median(values):6.1f} us "
                      f"(rounds {', '.join(f'{v:.1f}' for v in values)})")
        finally:
            admin.execute(f"drop database {name}")


if __name__ == "__main__":
    main()
