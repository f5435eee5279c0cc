"""The scripted workflow of the tests and the kill trials: every kind of step, from a seed.

``scripted_flow`` (entry kind ``scripted_flow``; from cron with ``{"workflow":
"scripted_flow"}``) reads an issue, opens an incident (a keyed write its vendor dedupes:
resent with the same key), then loops ``loops`` times over a Jira comment (a write with
a reader: read back, never resent) and a durable sleep (none at 0), optionally waits for
the signal ``go`` and hands a question to a child agent run, and ends with an answer made
of what it saw.  Its input::

    {"seed": 7, "loops": 2, "sleep": 0.5, "think": 0.0, "signal": false,
     "signal_timeout": null, "child": false, "fan": 0}

``fan`` (N > 0) makes the delegation step an ``all``: a read, a keyed write and N child
agent runs at once.  ``flows`` (N > 0) makes it an ``all`` of N child workflow runs of
``scripted_child`` (a keyed write, a durable sleep of ``child_sleep`` seconds when more
than 0, a write with a reader), waiting for all; ``race`` (N > 0) makes it a ``first`` of
N such children (keyed ``c0``, ``c1``, ...; child i thinks ``child_delay`` times i + 1,
so the first usually ends first), waiting for the first to end: the others run on;
``race_agents`` (N > 0) a ``first`` of N child agent runs (as ``fan``'s).

``think`` is the seconds of plain code before each call (the run holds its lease
meanwhile), so a kill trial catches it running as well as sleeping.

Every write carries its run, step and call where it lands (``landed.mark``), so
duplicates are counted by what landed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ticketiq_pg.workflow import Workflow, WorkflowContext, WorkflowNext

scripted_flow = Workflow("scripted_flow", version="1")


def _spec(ctx: WorkflowContext) -> dict[str, Any]:
    return ctx.input if isinstance(ctx.input, dict) else {}


async def _think(ctx: WorkflowContext) -> None:
    await asyncio.sleep(float(_spec(ctx).get("think", 0.0)))


def _issue(ctx: WorkflowContext) -> str:
    return str((ctx.results.get("read") or {}).get("issue") or "OPS-1")


@scripted_flow.step(first=True)
async def read(ctx: WorkflowContext) -> WorkflowNext:
    await _think(ctx)
    ctx.vars["loop"] = 0
    issue = f"OPS-{int(_spec(ctx).get('seed', 1)) % 50 + 1}"
    return ctx.call("jira.get_issue", {"issue_key": issue}, then="open_incident")


@scripted_flow.step()
async def open_incident(ctx: WorkflowContext) -> WorkflowNext:
    await _think(ctx)
    issue = _issue(ctx)
    return ctx.call("incident.create", {"name": f"workflow {issue}",
                                        "summary": f"opened from {issue}"}, then="comment")


@scripted_flow.step()
async def comment(ctx: WorkflowContext) -> WorkflowNext:
    await _think(ctx)
    issue = _issue(ctx)
    return ctx.call("jira.comment", {"issue_key": issue, "text": f"loop {ctx.vars['loop']}"},
                    then="rest")


@scripted_flow.step()
def rest(ctx: WorkflowContext) -> WorkflowNext:
    seconds = float(_spec(ctx).get("sleep", 0.5))
    # no sleep at 0: the run stays on its process (a fan-out trial's children with it)
    return ctx.sleep(seconds, then="check") if seconds > 0 else ctx.goto("check")


@scripted_flow.step()
def check(ctx: WorkflowContext) -> WorkflowNext:
    ctx.vars["loop"] += 1
    if ctx.vars["loop"] < int(_spec(ctx).get("loops", 2)):
        return ctx.goto("comment")  # a loop back: the comment's next key is a new one
    if _spec(ctx).get("signal"):
        return ctx.goto("await_go")
    return ctx.goto("delegate")


@scripted_flow.step()
def await_go(ctx: WorkflowContext) -> WorkflowNext:
    return ctx.wait_signal("go", timeout=_spec(ctx).get("signal_timeout"), then="delegate")


@scripted_flow.step()
def delegate(ctx: WorkflowContext) -> WorkflowNext:
    fan = int(_spec(ctx).get("fan", 0))
    flows = int(_spec(ctx).get("flows", 0))
    if flows:
        # At once: ``flows`` child workflow runs, each keyed by its own place in the all.
        seed = int(_spec(ctx).get("seed", 1))
        return ctx.all(*(ctx.workflow("scripted_child", {
            "seed": seed, "index": i, "sleep": float(_spec(ctx).get("child_sleep", 0.0)),
            "think": float(_spec(ctx).get("child_delay", 0.0))}) for i in range(flows)),
            then="finish")
    race = int(_spec(ctx).get("race", 0))
    if race:
        # The first of ``race`` child workflow runs to end; the others run on, each once.
        seed = int(_spec(ctx).get("seed", 1))
        think = float(_spec(ctx).get("child_delay", 0.0))
        return ctx.first(*(ctx.workflow("scripted_child", {
            "seed": seed, "index": i, "sleep": float(_spec(ctx).get("child_sleep", 0.0)),
            "think": think * (i + 1)}, key=f"c{i}") for i in range(race)), then="finish")
    if not _spec(ctx).get("child") and not fan and not _spec(ctx).get("race_agents"):
        return ctx.goto("finish")
    child = {"seed": int(_spec(ctx).get("seed", 1)), "steps": 2, "plan": "mixed",
             "model_delay": float(_spec(ctx).get("child_delay", 0.0))}
    if int(_spec(ctx).get("race_agents", 0)):
        # The first of ``race_agents`` child agent runs to answer; the others run on.
        return ctx.first(*(ctx.agent({**child, "seed": child["seed"] + i})
                           for i in range(int(_spec(ctx)["race_agents"]))), then="finish")
    if fan:
        # At once: a read, a keyed write, and ``fan`` child agent runs.
        issue = _issue(ctx)
        return ctx.all(ctx.call("jira.get_issue", {"issue_key": issue}),
                       ctx.call("incident.create", {"name": f"fan-out {issue}",
                                                    "summary": "opened at once"}),
                       *(ctx.agent({**child, "seed": child["seed"] + i}) for i in range(fan)),
                       then="finish")
    return ctx.agent(child, then="finish")


@scripted_flow.step()
def finish(ctx: WorkflowContext) -> WorkflowNext:
    signal = ctx.results.get("await_go")
    child = ctx.results.get("delegate")
    fanned = child if isinstance(child, list) else None
    first = ({k: child.get(k) for k in ("first", "key", "child_run_id", "status", "output",
                                        "answer")}
             if isinstance(child, dict) and "first" in child else None)
    return ctx.end({"issue": _issue(ctx), "loops": ctx.vars["loop"],
                    "incident": (ctx.results.get("open_incident") or {}).get("status"),
                    "signal": signal,
                    "child": child.get("status") if isinstance(child, dict) else None,
                    "fan": [r.get("status", "made") if isinstance(r, dict) else r
                            for r in fanned] if fanned is not None else None,
                    "flows": [r.get("output") if isinstance(r, dict) else r
                              for r in fanned] if fanned is not None else None,
                    "first": first, "steps_executed": ctx.steps_executed})


#: The child workflow of ``flows``: what one child of a fan-out does.
scripted_child = Workflow("scripted_child", version="1")


def _child(ctx: WorkflowContext) -> str:
    return f"{_spec(ctx).get('seed', 1)}.{_spec(ctx).get('index', 0)}"


@scripted_child.step(first=True)
async def child_open(ctx: WorkflowContext) -> WorkflowNext:
    await _think(ctx)
    return ctx.call("incident.create", {"name": f"child {_child(ctx)}",
                                        "summary": "opened by a child workflow"},
                    then="child_rest")


@scripted_child.step()
def child_rest(ctx: WorkflowContext) -> WorkflowNext:
    seconds = float(_spec(ctx).get("sleep", 0.0))
    return ctx.sleep(seconds, then="child_comment") if seconds > 0 else ctx.goto(
        "child_comment")


@scripted_child.step()
async def child_comment(ctx: WorkflowContext) -> WorkflowNext:
    await _think(ctx)
    return ctx.call("jira.comment", {"issue_key": "OPS-1", "text": f"child {_child(ctx)}"},
                    then="child_done")


@scripted_child.step()
def child_done(ctx: WorkflowContext) -> WorkflowNext:
    return ctx.end({"child": _child(ctx),
                    "incident": (ctx.results.get("child_open") or {}).get("status")})
