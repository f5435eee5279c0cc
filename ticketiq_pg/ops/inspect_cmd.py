"""``ticketiq-pg inspect TOOL``: an operator's ad hoc call through a running front.

The call is made by the front's process (``POST /inspector/calls``), with its app's
tools and gates, as the admin whose credential is given (``--token`` or
``$TICKETIQ_FRONT_TOKEN``); the answer shows the fresh key, the outcome and the result.
Exit status: 0 made (or read back), 1 refused or failed, 3 a write whose outcome is
unknown (never sent again: look at the vendor before making it again).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from ticketiq_pg.config import Environment
from ticketiq_pg.printable import say

ENV_FRONT = Environment.FRONT_URL
ENV_TOKEN = Environment.FRONT_TOKEN
EXIT = {"made": 0, "read_back": 0, "failed": 1, "not_applied": 1, "unknown": 3}


def add_parser(sub: Any, run_id_arg: Any) -> None:
    p = sub.add_parser("inspect", help="call one of the app's tools through a running front "
                       "(an operator's ad hoc call: a fresh key, its gates, audited)",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tool", nargs="?", help="the tool (omit it, or --list, for the tools)")
    p.add_argument("--arguments", default="{}", metavar="JSON",
                   help="its arguments, a JSON object (default {})")
    p.add_argument("--run", type=run_id_arg, metavar="RUN_ID",
                   help="the run it is made beside (audited with it); nothing is written "
                   "into the run")
    p.add_argument("--front", default=Environment.current().get(ENV_FRONT),
                   help=f"the front's URL (default: ${ENV_FRONT})")
    p.add_argument("--token", default=Environment.current().get(ENV_TOKEN),
                   help=f"an admin's API key or JWT (default: ${ENV_TOKEN})")
    p.add_argument("--list", action="store_true", help="list the tools")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_inspect)


def _request(opts: argparse.Namespace, method: str, path: str,
             body: Any = None) -> tuple[int, Any]:
    if not opts.front or not opts.token:
        raise SystemExit(f"ticketiq-pg inspect: pass --front and --token (or set {ENV_FRONT} "
                         f"and {ENV_TOKEN})")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        opts.front.rstrip("/") + path, data=data, method=method,
        headers={"Authorization": f"Bearer {opts.token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 - operator's URL
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, {"detail": exc.reason}
    except urllib.error.URLError as exc:
        raise SystemExit(f"ticketiq-pg inspect: cannot reach {opts.front}: {exc.reason}"
                         ) from exc


def cmd_inspect(opts: argparse.Namespace) -> int:
    if opts.list or not opts.tool:
        status, found = _request(opts, "GET", "/inspector/tools")
        if status != 200:
            say(f"ticketiq-pg inspect: {status}: {found.get('detail')}", file=sys.stderr)
            return 1
        for tool in found:
            say(json.dumps(tool) if opts.json else
                  f"{tool['name']:28} {tool['classification']:10} {tool['description']}")
        return 0
    try:
        arguments = json.loads(opts.arguments)
    except ValueError as exc:
        raise SystemExit(f"ticketiq-pg inspect: --arguments is not JSON: {exc}") from exc
    body = {"tool": opts.tool, "arguments": arguments,
            "run_id": str(opts.run) if opts.run else None}
    status, answer = _request(opts, "POST", "/inspector/calls", body)
    if status != 200:
        detail = answer.get("detail") if isinstance(answer, dict) else answer
        if opts.json:
            say(json.dumps({"status": status, "detail": detail,
                              "audit_id": (answer or {}).get("audit_id")}))
        else:
            say(f"ticketiq-pg inspect: {status}: {detail}", file=sys.stderr)
        return 1
    if opts.json:
        say(json.dumps(answer))
    else:
        say(f"{answer['tool']} ({answer['classification']}) by {answer['actor']}: "
              f"{answer['outcome']}\nkey: {answer['step_key']}\n"
              f"audit: inspector.call #{answer['audit_id']}\n"
              f"result: {json.dumps(answer['result'], indent=2)}")
        if answer["outcome"] == "unknown":
            say("the outcome is unknown: not sent again; look at the vendor first",
                  file=sys.stderr)
    return EXIT.get(answer["outcome"], 1)
