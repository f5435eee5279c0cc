"""Scripted job handlers for tests and the demo: deterministic, a little slow on purpose.

=======================  =========  ====================================================
kind                     resumable  what it does
=======================  =========  ====================================================
``source_sync``          yes        ``pages`` pages; each page is recorded at the vendor
                                    service as a Jira comment (text ``page <n>``, step
                                    key ``<job id>:<n>``), then checkpointed as
                                    ``{"pages_done": n}``
``fine_tune``            yes        ``epochs`` epochs, each checkpointed as
                                    ``{"epochs_done": e, "loss": ...}``
``classifier_training``  no         ``epochs`` epochs, progress recorded for operators
``red_team``             no         ``probes`` probes, progress recorded for operators
=======================  =========  ====================================================

Every handler sleeps ``delay`` seconds per unit (payload, default 0.2), resumes
from ``ctx.progress`` and calls ``ctx.check()`` before each unit, so a worker
past its lease deadline does nothing more; ``source_sync`` awaits
``ctx.ready()`` before each vendor write, so a process whose liveness session
ended makes none until it knows the job is still its own.  ``fail_at`` (payload) makes the
handler raise at that unit, to show a handler error failing the job.  Each
unit is reported with ``ctx.note`` (the child process prints it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ticketiq_pg.runtime.jobs import Handler, JobContext
from ticketiq_pg.vendors.clients import VendorClients

#: The Jira issue source-sync pages are recorded on unless the payload names one.
SYNC_ISSUE = "SYNC-1"


class ScriptedJobError(RuntimeError):
    """A scripted handler's deliberate failure (payload ``fail_at``)."""


def _count(ctx: JobContext, name: str, default: int) -> int:
    value = ctx.payload.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"payload {name} must be a whole number >= 0, got {value!r}")
    return value


def _delay(ctx: JobContext) -> float:
    value = ctx.payload.get("delay", 0.2)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ValueError(f"payload delay must be a number >= 0, got {value!r}")
    return float(value)


def _maybe_fail(ctx: JobContext, unit: int) -> None:
    if ctx.payload.get("fail_at") == unit:
        raise ScriptedJobError(f"scripted failure at unit {unit}")


def scripted_handlers(vendors: VendorClients | None) -> dict[str, Handler]:
    """The four scripted handlers; ``source_sync`` needs the vendor clients."""

    async def source_sync(ctx: JobContext) -> dict[str, Any]:
        if vendors is None:
            raise RuntimeError("source_sync needs TICKETIQ_VENDOR_URL")
        pages = _count(ctx, "pages", 5)
        delay = _delay(ctx)
        issue = str(ctx.payload.get("issue", SYNC_ISSUE))
        done = int(ctx.progress.get("pages_done", 0))
        ctx.note(resumed_from=done)
        for page in range(done + 1, pages + 1):
            ctx.check()
            await asyncio.sleep(delay)
            _maybe_fail(ctx, page)
            # The sleep may have outlived the lease, or the process's session:
            # the write goes only on a fresh confirmation (JobContext.ready).
            await ctx.ready()
            await vendors.jira.add_comment(issue, f"page {page}", step_key=f"{ctx.job_id}:{page}")
            ctx.note(page=page)
            await ctx.checkpoint({"pages_done": page})
        return {"pages": pages, "issue": issue}

    async def fine_tune(ctx: JobContext) -> dict[str, Any]:
        epochs = _count(ctx, "epochs", 3)
        delay = _delay(ctx)
        done = int(ctx.progress.get("epochs_done", 0))
        loss = float(ctx.progress.get("loss", 1.0))
        ctx.note(resumed_from=done)
        for epoch in range(done + 1, epochs + 1):
            ctx.check()
            await asyncio.sleep(delay)
            _maybe_fail(ctx, epoch)
            loss = round(loss * 0.5, 6)
            ctx.note(epoch=epoch, loss=loss)
            await ctx.checkpoint({"epochs_done": epoch, "loss": loss})
        return {"epochs": epochs, "loss": loss, "model": f"ft-{ctx.job_id}"}

    async def classifier_training(ctx: JobContext) -> dict[str, Any]:
        epochs = _count(ctx, "epochs", 3)
        delay = _delay(ctx)
        accuracy = 0.5
        for epoch in range(1, epochs + 1):
            ctx.check()
            await asyncio.sleep(delay)
            _maybe_fail(ctx, epoch)
            accuracy = round(1.0 - (1.0 - accuracy) * 0.6, 6)
            ctx.note(epoch=epoch, accuracy=accuracy)
            await ctx.checkpoint({"epochs_done": epoch, "accuracy": accuracy})
        return {"epochs": epochs, "accuracy": accuracy}

    async def red_team(ctx: JobContext) -> dict[str, Any]:
        probes = _count(ctx, "probes", 4)
        delay = _delay(ctx)
        findings = 0
        for probe in range(1, probes + 1):
            ctx.check()
            await asyncio.sleep(delay)
            _maybe_fail(ctx, probe)
            findings += probe % 3 == 0
            ctx.note(probe=probe, findings=findings)
            await ctx.checkpoint({"probes_done": probe, "findings": findings})
        return {"probes": probes, "findings": findings}

    return {
        "source_sync": source_sync,
        "fine_tune": fine_tune,
        "classifier_training": classifier_training,
        "red_team": red_team,
    }
