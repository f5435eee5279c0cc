"""A scripted model, scripted tools and file-backed gates, deterministic from a seed.

Used by the tests, the kill trials and the demo.  The model never calls a
real LLM: what it asks for at step k of a run depends only on the run's
input (seed, steps, plan) and k, and its final answer digests the results
it was shown, so two runs with the same seed give the same answer exactly
when they saw the same results.  Each time the model is asked for a step it
appends a line to its own log (``TICKETIQ_MODEL_LOG``, fsynced), so a test
can prove from outside the database that no step was asked twice.

The tools call the local vendor service (``TICKETIQ_VENDOR_URL``) through
the real vendor clients, so every write lands where duplicates are counted.
Each write carries its run, step and call in the content it sends
(:func:`~harness.landed.mark`), and so does a final answer whose
script says ``"mark_answer": true`` (e.g. the one a Teams reply delivers), so
duplicates are counted by what landed, whatever key it carried; the results the
tools return (and so the answers' digests) stay free of the run id.

``TICKETIQ_FLAKY`` (set by the kill trials' flaky mode, see
:mod:`~harness.flaky`) makes the model answer transient errors at
random, gives the tools' reads a short timeout and logs every vendor error a
tool saw.

Run a worker with this app (used as the child process of tests)::

    python -m harness.scripted --start 1 --seed 7 --steps 4 --exit-after 1
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import logging
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

from harness import scripted_tools
from harness.flaky import Flaky
from harness.landed import ANSWER_CALL, mark
from ticketiq_pg.agent import (
    CallContext,
    ModelStep,
    ReadBack,
    RunInfo,
    StepRequest,
    Tool,
    ToolCall,
    Tools,
    VendorLimit,
)
from ticketiq_pg.agent import Verdict as Verdict
from ticketiq_pg.config import Settings
from ticketiq_pg.seal import canonical

PLANS = ("mixed", "reads", "writes", "three_writes", "three_writes_held", "teams", "discord",
         "sqs", "delegate", "approval", "write_approval", *scripted_tools.PLANS)


class ScriptedModel:
    """A model whose steps are a function of the run's input and the step number."""

    def __init__(self, log_path: str | Path | None = None, flaky: Flaky | None = None) -> None:
        self.log_path = Path(log_path) if log_path else None
        self.flaky = flaky
        self.asked = 0

    def _log(self, request: StepRequest) -> None:
        self.asked += 1
        if self.log_path is None:
            return
        line = json.dumps(
            {"run_id": str(request.run_id), "step": request.step, "pid": os.getpid(),
             "at": time.time()}
        )
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    async def step(self, request: StepRequest) -> ModelStep:
        self._log(request)
        spec = script_of(request.input)
        seed = spec.get("seed", 0)
        steps = int(spec.get("steps", 3))
        plan = spec.get("plan", "mixed")
        delay = float(spec.get("model_delay", 0.0))
        #: Words of text added to each step's (a stream of some length to watch).
        words = "".join(f" w{i}" for i in range(int(spec.get("words", 0))))
        if self.flaky is not None:
            await self.flaky.model_fault(seed, request.run_id, request.step)
        streaming = request.on_text is not None
        if delay:
            # A streaming model spends the second half of its time on its text.
            await asyncio.sleep(delay / 2 if streaming else delay)
        if request.step >= steps:
            digest = results_digest(request.conversation)
            text = f"answer seed={seed} digest={digest}{words}"
            if spec.get("mark_answer"):
                text = mark(text, request.run_id, request.step, ANSWER_CALL)
            await stream_text(request, text, delay / 2)
            return ModelStep(text=text)
        rng = random.Random(f"{seed}:{request.step}")
        text = f"step {request.step}{words}"
        await stream_text(request, text, delay / 2)
        return ModelStep(
            text=text, calls=tuple(positional(plan_calls(plan, rng, seed, request.step)))
        )


async def stream_text(request: StepRequest, text: str, seconds: float) -> None:
    """Hand ``text`` to ``request.on_text`` a word at a time over ``seconds`` (as a
    provider's stream would); nothing when nobody listens."""
    if request.on_text is None:
        return
    pieces = [word + " " for word in text.split(" ")]
    pieces[-1] = pieces[-1][:-1]
    for piece in pieces:
        if seconds > 0:
            await asyncio.sleep(seconds / len(pieces))
        request.on_text(piece)


def script_of(request: Any) -> dict[str, Any]:
    """The script (seed, steps, plan, ...) carried by a run's input.

    A run started by the scripted CLI has it at the top; an entry point's
    payload carries it where its sender put it (a webhook's body, a
    playground run's input, an A2A message's metadata, a cron schedule's
    payload).  Without one, the seed is derived from the input itself.
    """
    if not isinstance(request, dict):
        return {"seed": _stable_seed(request)}
    if "seed" in request:
        return request
    for key in ("body", "input", "metadata", "script"):
        inner = request.get(key)
        if isinstance(inner, dict) and "seed" in inner:
            return inner
    return {"seed": _stable_seed(request)}


def _stable_seed(value: Any) -> int:
    try:
        text = canonical(value)
    except Exception:  # noqa: BLE001
        text = repr(value)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def results_digest(conversation: list[dict[str, Any]]) -> str:
    results = [m.get("content") for m in conversation if m.get("role") == "tool"]
    return hashlib.sha256(canonical(results).encode()).hexdigest()[:16]


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789")
                             for _ in range(24))


def positional(calls: list[ToolCall]) -> list[ToolCall]:
    """With TICKETIQ_SCRIPT_POSITIONAL_IDS=1, call ids that are only positions (call_0, ...)."""
    if not os.environ.get("TICKETIQ_SCRIPT_POSITIONAL_IDS"):
        return calls
    return [ToolCall(f"call_{i}", c.tool, c.arguments) for i, c in enumerate(calls)]


def plan_calls(plan: str, rng: random.Random, seed: Any, step: int) -> list[ToolCall]:
    issue = f"OPS-{rng.randint(1, 999)}"
    read = ToolCall(_call_id(rng), "jira.get_issue", {"issue_key": issue})
    incident = ToolCall(
        _call_id(rng), "incident.create",
        {"name": f"seed {seed} step {step}", "summary": f"opened from {issue}"},
    )
    comment = ToolCall(
        _call_id(rng), "jira.comment", {"issue_key": issue, "text": f"seed {seed} step {step}"}
    )
    teams = ToolCall(
        _call_id(rng), "teams.reply",
        {"conversation_id": f"conv-{seed}", "text": f"seed {seed} step {step}"},
    )
    if plan in scripted_tools.PLANS:
        return scripted_tools.more_calls(plan, rng, seed, step, _call_id, read)
    if plan == "reads":
        return [read, ToolCall(_call_id(rng), "jira.get_issue", {"issue_key": issue + "0"})]
    if plan == "discord":
        return [read, ToolCall(_call_id(rng), "discord.post",
                               {"channel_id": str(100 + step), "content": f"seed {seed} {step}"})]
    if plan == "sqs":
        return [read, ToolCall(_call_id(rng), "sqs.send",
                               {"queue": "ops.fifo", "body": f"seed {seed} step {step}"})]
    if plan == "delegate":
        return [read, ToolCall(_call_id(rng), "agent.delegate",
                               {"seed": f"{seed}-{step}", "steps": 2, "plan": "reads"})]
    if plan == "approval":
        return [read, ToolCall(_call_id(rng), "jira.comment_approved",
                               {"issue_key": issue, "text": f"seed {seed} step {step}"})]
    if plan == "write_approval":
        return [incident, ToolCall(_call_id(rng), "jira.comment_approved",
                                   {"issue_key": issue, "text": f"seed {seed} step {step}"})]
    if plan == "writes":
        return [incident, comment]
    if plan == "three_writes":
        # made at once: keyed (resent with its key), with a reader, with neither
        return [incident, comment, teams]
    if plan == "three_writes_held":
        # the same, the keyed one held before it is sent (a slow network: the kill
        # trials' three-writes kind catches it marked and unsent as often as sent)
        held = {**incident.arguments, "hold": round(rng.uniform(0.0, 0.8), 2)}
        return [ToolCall(incident.call_id, incident.tool, held), comment, teams]
    if plan == "teams":
        return [read, teams]
    return [read, incident, comment]


# -- tools over the vendor service ------------------------------------------


def vendor_tools(base_url: str, flaky: Flaky | None = None) -> Tools:
    """The scripted tools, each a real vendor route on the vendor service.

    Flaky, the reads (an issue, a comment read back) time out after
    ``flaky.read_timeout`` and every vendor error a tool or reader raised is logged.
    """
    from ticketiq_pg.vendors.clients import VendorClients

    clients = VendorClients.local(base_url)
    incident_io, jira, teams = clients.incidentio, clients.jira, clients.teams
    reads = (VendorClients.local(base_url, timeout=flaky.read_timeout).jira
             if flaky is not None else jira)

    async def get_issue(ctx: CallContext) -> Any:
        issue = await reads.get_issue(ctx.arguments["issue_key"])
        fields = issue.get("fields", {})
        return {"issue": issue.get("key"), "summary": fields.get("summary"),
                "status": _name(fields.get("status"))}

    async def create_incident(ctx: CallContext) -> Any:
        if ctx.arguments.get("hold"):
            await asyncio.sleep(float(ctx.arguments["hold"]))
        await incident_io.create_incident(
            _marked(ctx, "name"), ctx.arguments.get("summary", ""), ctx.step_key or ""
        )
        return {"incident": ctx.arguments["name"], "status": "created"}

    async def add_comment(ctx: CallContext) -> Any:
        await jira.add_comment(ctx.arguments["issue_key"], _marked(ctx, "text"), ctx.step_key)
        return {"comment": "posted", "issue": ctx.arguments["issue_key"]}

    async def find_comment(ctx: CallContext) -> ReadBack:
        if not ctx.step_key:
            return ReadBack(False)
        found = await reads.find_comment_by_step_key(ctx.arguments["issue_key"], ctx.step_key)
        if found is None:
            return ReadBack(False)
        return ReadBack(True, {"comment": "posted", "issue": ctx.arguments["issue_key"]})

    async def reply(ctx: CallContext) -> Any:
        await teams.reply(ctx.arguments["conversation_id"], _marked(ctx, "text"))
        return {"reply": "posted"}

    async def discord_post(ctx: CallContext) -> Any:
        await clients.discord.create_message(
            ctx.arguments["channel_id"], _marked(ctx, "content"), nonce=_nonce(ctx.step_key)
        )
        return {"message": "posted"}

    async def sqs_send(ctx: CallContext) -> Any:
        queue = f"https://sqs.local/000000000000/{ctx.arguments['queue']}"
        await clients.sqs.send_message(queue, _marked(ctx, "body"), "ops", ctx.step_key or "")
        return {"message": "queued"}

    # Each vendor client declares its route: whether it takes our key and how
    # long the vendor dedupes on it.  Those, not the tool names, decide how a
    # call in doubt is settled.
    def route(client: Any) -> dict[str, Any]:
        return {"takes_key": client.takes_key, "dedupe_window": client.dedupe_window_seconds}

    # TICKETIQ_SCRIPT_AS_WRITES names tools reclassified as writes (a tool's class as it
    # stands at a resume may differ from the one its checkpoint recorded).
    as_writes = set(filter(None, os.environ.get("TICKETIQ_SCRIPT_AS_WRITES", "").split(",")))
    tools = [
        Tool("jira.get_issue", "write" if "jira.get_issue" in as_writes else "read", get_issue),
        Tool("incident.create", "write", create_incident, **route(incident_io)),
        Tool("jira.comment", "write", add_comment, read_back=find_comment),
        Tool("jira.comment_approved", "write", add_comment, read_back=find_comment),
        Tool("teams.reply", "write", reply),
        # Short dedupe windows (minutes): settled, never resent (I6).
        Tool("discord.post", "write", discord_post, **route(clients.discord)),
        Tool("sqs.send", "write", sqs_send, **route(clients.sqs)),
        Tool("agent.delegate", "delegation", subagent=True),
        *scripted_tools.more_tools(clients, _marked, route),
    ]
    if flaky is not None:
        tools = [dataclasses.replace(
            t, invoke=t.invoke and flaky.watch(t.name, t.invoke),
            read_back=t.read_back and flaky.watch(f"{t.name}:read_back", t.read_back),
        ) for t in tools]
    return Tools(tools)


def _marked(ctx: CallContext, argument: str) -> str:
    """The argument's text as sent: with the run, step and call it belongs to (the result
    the tool returns does not carry them)."""
    return mark(str(ctx.arguments[argument]), ctx.run.run_id, ctx.step, ctx.call_id)


def _nonce(step_key: str | None) -> str | None:
    # Discord nonces are at most 25 characters.
    return step_key[-25:] if step_key else None


def _name(value: Any) -> Any:
    return value.get("name") if isinstance(value, dict) else value


class FileGates:
    """Gates read from a JSON file on every check, so a test can change them at any time.

    Keys: revoked_owners, disabled_channels, contained_runs (run ids),
    revoked_run_as, blocked_tools, approval_tools (held for a person's
    approval; default ``["jira.comment_approved"]``) — each a list.  With
    ``TICKETIQ_GATES_LOG`` set, each call's check appends what it was judged as.
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None

    def _policy(self) -> dict[str, list[str]]:
        if self.path is None or not self.path.exists():
            return {}
        return json.loads(self.path.read_text() or "{}")

    async def check_run(self, run: RunInfo) -> Verdict:
        policy = self._policy()
        if run.owner in policy.get("revoked_owners", []):
            return Verdict.deny(f"owner {run.owner} is no longer allowed to run it")
        if str(run.run_id) in policy.get("contained_runs", []):
            return Verdict.deny("the run is contained")
        if run.channel in policy.get("disabled_channels", []):
            return Verdict.deny(f"channel {run.channel} is not allowed")
        if run.run_as in policy.get("revoked_run_as", []):
            return Verdict.deny(f"run-as authority {run.run_as} was revoked")
        return Verdict.allow()

    async def check_call(self, run: RunInfo, call: ToolCall, classification: str) -> Verdict:
        if log := os.environ.get("TICKETIQ_GATES_LOG"):  # what each call was judged as
            line = json.dumps({"run_id": str(run.run_id), "call_id": call.call_id,
                               "classification": classification}) + "\n"
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        policy = self._policy()
        if call.tool in policy.get("blocked_tools", []):
            return Verdict.deny(f"tool {call.tool} is blocked")
        verdict = await self.check_run(run)
        if verdict.allowed and call.tool in policy.get("approval_tools", ["jira.comment_approved"]):
            return Verdict.hold(f"{call.tool} needs a person's approval")
        return verdict


#: The vendor service each scripted tool's name prefix goes to.
VENDOR_OF_TOOL = {"jira": "jira", "incident": "incidentio", "teams": "teams"}


def app() -> Any:
    """The scripted App, configured from TICKETIQ_VENDOR_URL, _MODEL_LOG, _GATES_FILE, _FLAKY."""
    from ticketiq_pg.runtime.app import App

    base_url = os.environ.get("TICKETIQ_VENDOR_URL")
    if not base_url:
        raise SystemExit("TICKETIQ_VENDOR_URL is not set")
    flaky = Flaky.from_env()
    tools = vendor_tools(base_url, flaky)
    # TICKETIQ_RECLASSIFY=tool=classification,... : a tool's classification
    # changed between a crash and its resume (tests of invariant I7).
    for item in filter(None, os.environ.get("TICKETIQ_RECLASSIFY", "").split(",")):
        name, _, classification = item.partition("=")
        tool = tools.get(name.strip())
        if tool is not None:
            tools.add(dataclasses.replace(tool, classification=classification.strip()))
    # TICKETIQ_SCRIPT_VENDOR_LIMITS={"jira": {"rate": 10, "burst": 10}}: the tools of those
    # vendors take a token of a limit every process shares (ticketiq_pg.VendorLimit).
    limits = {vendor: VendorLimit(**spec) for vendor, spec in json.loads(
        os.environ.get("TICKETIQ_SCRIPT_VENDOR_LIMITS") or "{}").items()}
    for name in tools.names():
        vendor = VENDOR_OF_TOOL.get(name.split(".", 1)[0])
        tool = tools.get(name)
        if vendor in limits and tool is not None:
            tools.add(dataclasses.replace(tool, vendor=vendor))
    from harness import deploy_workflows
    from harness.scripted_jobs import scripted_handlers
    from harness.scripted_workflow import scripted_child, scripted_flow
    from ticketiq_pg.runtime.entries import teams_delivery
    from ticketiq_pg.vendors.clients import VendorClients

    clients = VendorClients.local(base_url)
    return App(
        model=ScriptedModel(os.environ.get("TICKETIQ_MODEL_LOG"), flaky),
        tools=tools,
        gates=FileGates(os.environ.get("TICKETIQ_GATES_FILE")),
        # TICKETIQ_SCRIPT_DELIVER=1: a scripted run's answer is delivered too (no reader).
        deliveries={"teams": teams_delivery(clients.teams), **(
            {"scripted": scripted_tools.answer_delivery(clients)}
            if os.environ.get("TICKETIQ_SCRIPT_DELIVER") else {})},
        jobs=scripted_handlers(clients),
        # TICKETIQ_SCRIPT_RELEASE=2: the new release of the versions trial's workflows.
        workflows=[scripted_flow, scripted_child, *deploy_workflows.workflows()],
        vendor_limits=limits,
    )


def read_model_log(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def _event(kind: str, **fields: Any) -> None:
    """One JSON line on stdout: what a parent process (a test) reads as it happens."""
    print(json.dumps({"event": kind, **fields}, default=str), flush=True)


async def _read_commands(start_one: Any) -> None:
    """Serve JSON commands from stdin, one a line, until it closes.

    ``{"cmd": "start", "seed": 5, "steps": 2, "plan": "mixed", "model_delay": 0}``
    starts a run here (missing keys take the command line's values).
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        try:
            command = json.loads(line)
            if command.get("cmd") != "start":
                raise ValueError(f"unknown command {command.get('cmd')!r}")
            await start_one({k: v for k, v in command.items() if k != "cmd"})
        except Exception as exc:  # noqa: BLE001 - report it, keep serving
            _event("error", error=f"{type(exc).__name__}: {exc}", line=line.decode().strip())


async def _main(args: argparse.Namespace) -> int:
    from ticketiq_pg.runtime.runner import RunOutcome
    from ticketiq_pg.runtime.worker import Worker

    def on_outcome(outcome: RunOutcome) -> None:
        _event("outcome", run_id=str(outcome.run_id), status=outcome.status,
               answer=outcome.answer, reason=outcome.reason)

    settings = Settings.from_env()
    worker = Worker(settings, app(), process_id=args.process_id, on_outcome=on_outcome,
                    max_runs=args.max_runs)
    await worker.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    _event("ready", process_id=worker.process_id, pid=os.getpid())

    async def start_one(overrides: dict[str, Any]) -> None:
        spec = {"seed": args.seed, "steps": args.steps, "plan": args.plan,
                "model_delay": args.model_delay, **overrides}
        if args.workflow:  # the scripted workflow: its input is the JSON given, with the seed
            spec = {**json.loads(args.workflow), "seed": spec["seed"], **overrides}
        started = await worker.start_run(
            owner=args.owner, run_as=args.owner, channel=args.channel,
            entry_point="scripted_flow" if args.workflow else "scripted",
            may_wait=args.may_wait, input=spec,
        )
        _event("started", run_id=str(started.run_id), seed=spec["seed"])

    for index in range(args.start):
        await start_one({"seed": args.seed + index})
    commands = asyncio.create_task(_read_commands(start_one)) if args.commands else None
    while not stop.is_set():
        if args.exit_after and worker.ended.total() >= args.exit_after:
            break
        try:
            await asyncio.wait_for(stop.wait(), 0.05)
        except TimeoutError:
            pass
    if commands is not None:
        commands.cancel()
        await asyncio.gather(commands, return_exceptions=True)
    await worker.shutdown()
    _event("stopped", outcomes=worker.ended.total())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.scripted")
    parser.add_argument("--start", type=int, default=0, help="runs to start here")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--plan", choices=PLANS, default="mixed")
    parser.add_argument("--model-delay", type=float, default=0.0)
    parser.add_argument("--owner", default="alice")
    parser.add_argument("--may-wait", action=argparse.BooleanOptionalAction, default=True,
                        help="start runs that may wait (suspend for approvals and children)")
    parser.add_argument("--channel", default="playground")
    parser.add_argument("--process-id", default=None)
    parser.add_argument("--max-runs", type=int, default=None,
                        help="runs this process drives at once (default TICKETIQ_MAX_RUNS)")
    parser.add_argument("--exit-after", type=int, default=0,
                        help="exit after this many runs ended here (0: run until SIGTERM)")
    parser.add_argument("--workflow", default=None, metavar="JSON",
                        help="start runs of the scripted workflow with this input "
                        '(e.g. \'{"loops": 2, "sleep": 0.5}\'), not agent runs')
    parser.add_argument("--commands", action="store_true",
                        help='serve JSON commands from stdin, e.g. {"cmd": "start", "seed": 5}')
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("TICKETIQ_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
