#!/usr/bin/env python3
"""Run a command with TICKETIQ_TEST_DATABASE_URL pointing at a PostgreSQL server.

    scripts/with_test_server.py [--fast] -- COMMAND [ARGS...]

If TICKETIQ_TEST_DATABASE_URL is already set it is passed through untouched; otherwise a
private cluster (ticketiq_pg.testing.postgres.PrivateCluster) is started for the duration
of the command and stopped afterwards, also on failure, Ctrl-C or SIGTERM.  The exit
code is the command's (128+N if a signal N ended it).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ticketiq_pg.testing.postgres import ENV_URL, ClusterError, PrivateCluster  # noqa: E402


def _run(cmd: list[str], env: dict[str, str]) -> int:
    proc = subprocess.Popen(cmd, env=env)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        # the child got the same SIGINT from the terminal; give it time to finish
        try:
            rc = proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            proc.kill()
            rc = proc.wait()
    except SystemExit:  # SIGTERM (see main): pass it on
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    return 128 - rc if rc < 0 else rc


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(description="Run a command against a test server.")
    parser.add_argument("--fast", action="store_true", help="fsync=off etc. for the cluster")
    opts = parser.parse_args(argv[:split])
    cmd = argv[split + 1 :]
    if not cmd:
        parser.error("no command after --")

    def on_term(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)

    if os.environ.get(ENV_URL):
        return _run(cmd, dict(os.environ))

    cluster = PrivateCluster(fast=opts.fast)
    try:
        try:
            cluster.start()
        except ClusterError as exc:
            print(f"with_test_server: could not start a private cluster: {exc}", file=sys.stderr)
            return 2
        print(f"with_test_server: private cluster at {cluster.admin_url}", file=sys.stderr)
        env = dict(os.environ)
        env[ENV_URL] = cluster.admin_url
        return _run(cmd, env)
    except KeyboardInterrupt:
        return 130
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
