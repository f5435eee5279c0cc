"""``ticketiq-pg`` command line: migrate, version, demo."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import inspect
import os
import sys
from importlib import metadata
from pathlib import Path

import psycopg

from ticketiq_pg.migrate import InstallError, install_sync, schema_version_sync

ENV_URL = "TICKETIQ_DATABASE_URL"


def _package_version() -> str:
    try:
        return metadata.version("ticketiq-pg")
    except metadata.PackageNotFoundError:
        return "unknown"


def _url(opts: argparse.Namespace, required: bool = True) -> str | None:
    url = opts.database_url or os.environ.get(ENV_URL)
    if not url and required:
        raise SystemExit(f"ticketiq-pg: set {ENV_URL} or pass --database-url")
    return url


def _install(url: str, sql_dir: Path | None) -> int:
    with psycopg.connect(url) as conn:
        return install_sync(conn, sql_dir)


def cmd_migrate(opts: argparse.Namespace) -> int:
    url = _url(opts)
    assert url is not None
    print(f"schema installed at version {_install(url, opts.sql_dir)}")
    return 0


def cmd_version(opts: argparse.Namespace) -> int:
    print(f"ticketiq-pg {_package_version()}")
    url = _url(opts, required=False)
    if url:
        with psycopg.connect(url) as conn:
            version = schema_version_sync(conn)
        print(f"schema version: {version if version is not None else 'not installed'}")
    return 0


def cmd_demo(opts: argparse.Namespace) -> int:
    handle = None
    url = _url(opts, required=False)
    if not url:
        from ticketiq_pg.embedded import start_embedded

        url, handle = start_embedded(opts.data_dir)
    try:
        version = _install(url, opts.sql_dir)
        if importlib.util.find_spec("ticketiq_pg.demo") is None:
            print(f"schema installed at version {version}")
            return 0
        result = importlib.import_module("ticketiq_pg.demo").run(url)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return result if isinstance(result, int) else 0
    finally:
        if handle is not None:
            handle.stop()


async def _await(awaitable: object) -> object:
    return await awaitable  # type: ignore[misc]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ticketiq-pg", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--database-url", help=f"default: ${ENV_URL}")
        p.add_argument("--sql-dir", type=Path, help="SQL tree (default: the package's)")

    p = sub.add_parser("migrate", help=f"install or upgrade the schema in ${ENV_URL}")
    common(p)
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("version", help="package version and the database's schema version")
    common(p)
    p.set_defaults(func=cmd_version)

    p = sub.add_parser("demo", help=f"run the demo (on ${ENV_URL} or an embedded server)")
    common(p)
    p.add_argument("--data-dir", type=Path, help="embedded server data (.ticketiq/embedded-pg)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    try:
        return int(opts.func(opts))
    except KeyboardInterrupt:
        return 130
    except (InstallError, psycopg.OperationalError) as exc:
        print(f"ticketiq-pg: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
