"""The liveness scenario of docs/operators.md: two workers, one SIGKILLed mid-run.

    .venv/bin/python scripts/liveness_scenario.py [ADMIN_URL]

Creates a database ``tiq_livedemo_*`` on the server (default: TICKETIQ_TEST_DATABASE_URL
or postgresql://postgres@127.0.0.1:5432/postgres), starts the vendor service and two
``ticketiq-pg worker`` processes, starts two webhook runs (3 steps, 2 s model steps) on
``worker-b`` (``worker-a`` leaves fresh inbox entries to it), SIGKILLs it 3 s later,
waits 6 s, prints the outputs the doc shows (``ticketiq-pg status``, ``ticketiq-pg
audit``, and the psql queries) and drops the database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

from harness.trials import SEAL_KEYS
from harness.vendor_sim.process import VendorService
from ticketiq_pg.db.keys import create_api_key_sync
from ticketiq_pg.db.migrate import install_sync
from ticketiq_pg.testing.postgres import create_database, drop_database

TOKENS = """
select p.process_id, p.liveness_key, p.liveness_backend_pid, p.ended_reason,
    exists (
        select 1 from pg_locks as l
        where l.locktype = 'advisory' and l.classid = 29809 and l.objsubid = 2
            and l.objid = p.liveness_key::text::oid and l.granted
    ) as token_held
from ticketiq.processes as p
order by p.process_id;
"""
ENDED = """
select at, actor, detail ->> 'process_id' as process, detail ->> 'backend_pid' as backend_pid
from ticketiq.audit
where event = 'process.session_ended'
order by audit_id;
"""


def main() -> int:
    admin = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "TICKETIQ_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"))
    work = Path(tempfile.mkdtemp(prefix="tiq-liveness-"))
    url = create_database(admin, "tiq_livedemo")
    vendor = VendorService.start(work / "vendor")
    procs: dict[str, tuple[subprocess.Popen[str], int]] = {}
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            install_sync(conn)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETIQ_")}
        env.update(TICKETIQ_DATABASE_URL=url, TICKETIQ_SEAL_KEYS=SEAL_KEYS,
                   TICKETIQ_VENDOR_URL=vendor.base_url, TICKETIQ_MODEL_LOG=str(work / "model.log"))
        for name in ("worker-a", "worker-b"):
            # worker-a leaves fresh inbox entries to worker-b, so worker-b runs them.
            delay = {"TICKETIQ_ENTRY_CLAIM_DELAY": "10"} if name == "worker-a" else {}
            proc = subprocess.Popen(
                [sys.executable, "-m", "ticketiq_pg.ops.cli", "worker", "--app",
                 "harness.scripted:app", "--process-id", name, "--http-port", "0",
                 "--log-level", "WARNING"],
                env={**env, **delay}, stdout=subprocess.PIPE,
                stderr=open(work / f"{name}.log", "w"),
                text=True)
            assert proc.stdout is not None
            for line in proc.stdout:
                event = json.loads(line)
                if event.get("event") == "http":
                    procs[name] = (proc, event["port"])
                    break
        time.sleep(1.0)
        port = procs["worker-b"][1]
        key = create_api_key_sync(url, "docs", run_as=["*"])
        for i in range(2):
            httpx.post(f"http://127.0.0.1:{port}/webhooks/docs",
                       json={"steps": 3, "plan": "mixed", "model_delay": 2.0, "seed": i},
                       headers={"X-Delivery-Id": f"doc-{i}",
                                "Authorization": f"Bearer {key}"}).raise_for_status()
        time.sleep(3.0)
        procs["worker-b"][0].send_signal(signal.SIGKILL)
        time.sleep(6.0)
        cli = [sys.executable, "-m", "ticketiq_pg.ops.cli"]
        for args in (["status"], ["audit", "--event", "process.*", "--event",
                                  "agent.run.lease_lapsed", "--event", "agent.run.crash_resumed"]):
            print(f"$ ticketiq-pg {' '.join(args)}")
            print(subprocess.run([*cli, *args, "--database-url", url], capture_output=True,
                                 text=True, check=True).stdout)
        for query in (TOKENS, ENDED):
            print(subprocess.run(["psql", url, "-c", query], capture_output=True, text=True,
                                 check=True).stdout)
    finally:
        for proc, _ in procs.values():
            proc.kill()
            proc.wait()
        vendor.stop()
        drop_database(admin, url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
