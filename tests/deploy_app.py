"""The app of the rolling-deploy test: the scripted app with the workflow ``onboard`` of the
code ``DEPLOY_CODE`` selects, as two releases of one app would have it.

``ticketiq-pg worker --app-dir tests --app deploy_app:app`` with ``DEPLOY_CODE=1`` (the
old release) or ``DEPLOY_CODE=2`` (the new one).  Both open an incident (a keyed write),
sleep durably, wait for the signal ``ack`` when the input asks, post a Jira comment (a
write with a reader) and end with the code that ran their last step.  Version 2 renamed
the comment's step (``comment`` is gone, ``notify`` does it): a run of version 1 waiting
to go on to ``comment`` cannot run on it.
"""

from __future__ import annotations

import os
from typing import Any

from harness import scripted
from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

CODE = os.environ.get("DEPLOY_CODE", "1")


def _spec(ctx: WorkflowContext) -> dict[str, Any]:
    return ctx.input if isinstance(ctx.input, dict) else {}


def onboard(version: str) -> Workflow:
    """The workflow as release ``version`` has it."""
    flow = Workflow("onboard", version=version, signals=("ack",))
    comment_step = "comment" if version == "1" else "notify"

    @flow.step(first=True)
    def open_incident(ctx: WorkflowContext) -> WorkflowNext:
        seed = _spec(ctx).get("seed", 1)
        return ctx.call("incident.create", {"name": f"onboard {seed}",
                                            "summary": f"release {version}"}, then="nap")

    @flow.step()
    def nap(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.sleep(float(_spec(ctx).get("sleep", 0.1)), then="hold")

    @flow.step()
    def hold(ctx: WorkflowContext) -> WorkflowNext:
        if _spec(ctx).get("signal"):
            return ctx.wait_signal("ack", then=comment_step)
        return ctx.goto(comment_step)

    @flow.step(comment_step)
    def comment(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.call("jira.comment", {"issue_key": "OPS-1",
                                         "text": f"onboarded by release {version}"},
                        then="done")

    @flow.step()
    def done(ctx: WorkflowContext) -> WorkflowNext:
        return ctx.end({"version": version, "code": CODE,
                        "signal": ctx.results.get("hold")})

    return flow


def app() -> Any:
    base = scripted.app()
    base.workflows = []
    base.workflow(onboard(CODE))
    return base
