"""The workflows of the versions trial (:mod:`~harness.versions_trial`): two releases of
one app, picked by ``TICKETIQ_SCRIPT_RELEASE`` (``1``, the default, or ``2``), as a
rolling deploy has them side by side.

Both workflows open an incident (a keyed write), then wait for the signal ``go`` or sleep
durably (``{"signal": true}`` or ``{"sleep": S}``), then post a Jira comment (a write with
a reader), and end with the release and the process that ran their last step.

* ``deploy_keep``: release 2 changes the comment's text behind ``ctx.patched`` and
  lists version 1 in ``compatible`` (a change old runs can take): both releases run
  its version-1 runs.
* ``deploy_strict``: release 2 renamed the comment's step (``comment`` is gone, ``notify``
  does it) and is not compatible: a version-1 run waiting to go on to ``comment`` is
  run only by release 1.

``think`` (seconds) is plain code before each call, so a drain or a SIGKILL finds runs
in the middle of a step.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

#: What each release's code runs: {workflow: its versions}.
RUNS: dict[str, dict[str, tuple[str, ...]]] = {
    "1": {"deploy_keep": ("1",), "deploy_strict": ("1",)},
    "2": {"deploy_keep": ("2", "1"), "deploy_strict": ("2",)},
}
SIGNAL = "go"


def release() -> str:
    return os.environ.get("TICKETIQ_SCRIPT_RELEASE", "1")


def can_run(code: str | None, workflow: str, version: str | None) -> bool:
    """Whether release ``code`` runs ``workflow`` runs of ``version``."""
    return version in RUNS.get(code or "", {}).get(workflow, ())


def _spec(ctx: WorkflowContext) -> dict[str, Any]:
    return ctx.input if isinstance(ctx.input, dict) else {}


def _process() -> str:
    """The process running this step (the trials name each by its PGAPPNAME)."""
    return os.environ.get("PGAPPNAME", "").partition(":")[2] or "unknown"


def _flow(name: str, code: str) -> Workflow:
    keep = name == "deploy_keep"
    flow = Workflow(name, version=code, signals=(SIGNAL,),
                    compatible=("1",) if keep and code == "2" else ())
    comment_step = "comment" if keep or code == "1" else "notify"

    @flow.step(first=True)
    async def open_incident(ctx: WorkflowContext) -> WorkflowNext:
        await asyncio.sleep(float(_spec(ctx).get("think", 0.0)))
        seed = _spec(ctx).get("seed", 1)
        return ctx.call("incident.create", {"name": f"{name} {seed}",
                                            "summary": f"release {code}"}, then="wait")

    @flow.step()
    def wait(ctx: WorkflowContext) -> WorkflowNext:
        if _spec(ctx).get("signal"):
            return ctx.wait_signal(SIGNAL, then=comment_step)
        seconds = float(_spec(ctx).get("sleep", 0.0))
        return ctx.sleep(seconds, then=comment_step) if seconds > 0 else ctx.goto(comment_step)

    @flow.step(comment_step)
    async def comment(ctx: WorkflowContext) -> WorkflowNext:
        await asyncio.sleep(float(_spec(ctx).get("think", 0.0)))
        text = f"{name} by release {code}"
        if keep and code == "2":
            ctx.vars["patched"] = ctx.patched("comment-v2")
            if ctx.vars["patched"]:
                text += " (new wording)"
        return ctx.call("jira.comment", {"issue_key": "OPS-1", "text": text}, then="done")

    @flow.step()
    def done(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.end({"release": code, "process": _process(),
                        "signal": ctx.results.get("wait"),
                        "patched": ctx.vars.get("patched")})

    return flow


def workflows() -> list[Workflow]:
    """This process's release of both workflows."""
    code = release()
    if code not in RUNS:
        raise SystemExit(f"TICKETIQ_SCRIPT_RELEASE must be one of {sorted(RUNS)}")
    return [_flow("deploy_keep", code), _flow("deploy_strict", code)]
