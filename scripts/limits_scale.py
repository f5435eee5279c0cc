#!/usr/bin/env python3
"""Issue 43's scale checks of vendor limits and fair shares, at full size, with figures.

    .venv/bin/python scripts/with_test_server.py -- .venv/bin/python scripts/limits_scale.py \
        [--only vendor|fair] [--runs 400] [--a-runs 1000] [--b-runs 10] [--owner-limit 10]

Each check gets a fresh database on TICKETIQ_TEST_DATABASE_URL's server (dropped after),
its own vendor service and two worker processes (harness/limits_scale.py); the figures
are printed as JSON, one line a check.  tests/test_limits_scale.py runs the same code
small.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from harness.limits_scale import fair_check, vendor_check  # noqa: E402
from ticketiq_pg.db.migrate import install_sync  # noqa: E402
from ticketiq_pg.testing.postgres import ENV_URL, temporary_database  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/limits_scale.py")
    parser.add_argument("--only", choices=("vendor", "fair"))
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--a-runs", type=int, default=1000)
    parser.add_argument("--b-runs", type=int, default=10)
    parser.add_argument("--owner-limit", type=int, default=10)
    args = parser.parse_args()
    import os

    admin = os.environ.get(ENV_URL)
    if not admin:
        raise SystemExit(f"{ENV_URL} is not set (run under scripts/with_test_server.py)")
    checks = {
        "vendor": lambda url, work: vendor_check(url, work, runs=args.runs),
        "fair": lambda url, work: fair_check(url, work, a_runs=args.a_runs,
                                             b_runs=args.b_runs,
                                             owner_limit=args.owner_limit),
    }
    for name, check in checks.items():
        if args.only and name != args.only:
            continue
        with temporary_database(admin, "tiq_scale") as url, \
                tempfile.TemporaryDirectory(prefix=f"limits-{name}-") as work:
            with psycopg.connect(url, autocommit=True) as conn:
                install_sync(conn)
            print(json.dumps({"check": name, **check(url, Path(work))}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
