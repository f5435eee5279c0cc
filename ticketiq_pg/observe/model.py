"""The app's model, each call counted (metrics) and traced (a span under its step)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ticketiq_pg.agent import ModelStep, StepRequest
from ticketiq_pg.observe.logs import current_run
from ticketiq_pg.observe.tracing import enabled, end_model_span, model_span


def provider_of(model: Any) -> tuple[str, str | None]:
    """``gen_ai.system`` and the requested model's name, as far as they are known."""
    name = type(model).__name__
    system = {"OpenAIChatModel": "openai", "AnthropicModel": "anthropic"}.get(name, name)
    settings = getattr(model, "settings", None)
    return system, getattr(settings, "model", None)


class ObservedModel:
    """Wraps a :class:`~ticketiq_pg.agent.Model`; asks it exactly as the runner would."""

    def __init__(self, inner: Any, metered: bool) -> None:
        self.inner = inner
        self.metered = metered
        self.provider, self.model_name = provider_of(inner)
        #: (run, step) of the newest failed call: the next call of it is a retry.
        self._failed: dict[tuple[Any, int], float] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def step(self, request: StepRequest) -> ModelStep:
        key = (request.run_id, request.step)
        current_run.set(request.run_id)  # the run's task: its log lines carry its id
        retry = self._failed.pop(key, None) is not None
        span = (await model_span(request, self.provider, self.model_name)
                if enabled() else None)
        started = time.perf_counter()
        try:
            answer = await self.inner.step(request)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                if len(self._failed) > 10_000:  # runs that failed for good: forget them
                    self._failed.clear()
                self._failed[key] = started
                self._observe(time.perf_counter() - started, None, exc, retry)
            end_model_span(span, None, exc)
            raise
        self._observe(time.perf_counter() - started, answer, None, retry)
        end_model_span(span, answer, None)
        return answer  # type: ignore[no-any-return]

    def _observe(self, seconds: float, answer: Any, error: BaseException | None,
                 retry: bool) -> None:
        if self.metered:
            from ticketiq_pg.observe.metrics import observe_model

            observe_model(self.provider, seconds, answer, error, retry)
