"""A weather briefing that streams: the app behind the stream page (``page.html``).

A run (``POST /runs`` with ``{"input": {"city": "Oslo"}}``) is two model steps: the
model says what it looks up and asks for two reads at once (the forecast, the air), then
writes the briefing.  Its text comes a few words at a time, as a provider's model
streams it (``StepRequest.on_text``), so a watcher sees it grow; ``STREAM_SECONDS``
(default 3) is how long each step's text takes, long enough to kill the process in
the middle of one.  Only ``from ticketiq_pg import ...``.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any

from ticketiq_pg import App, CallContext, ModelStep, StepRequest, ToolCall, Tools

SECONDS = float(os.environ.get("STREAM_SECONDS", "3"))


async def stream(request: StepRequest, text: str) -> str:
    """Hand ``text`` to the watchers a word at a time over ``SECONDS``; the whole text."""
    words = text.split(" ")
    for i, word in enumerate(words):
        await asyncio.sleep(SECONDS / len(words))
        if request.on_text is not None:  # None: nobody watches, nothing to stream
            request.on_text(word if i == 0 else " " + word)
    return text


def call_id(request: StepRequest, step: int, tool: str) -> str:
    """The same id each time the step is asked (a provider's call id)."""
    return "call_" + hashlib.sha256(f"{request.run_id}:{step}:{tool}".encode()).hexdigest()[:24]


class BriefingModel:
    """A deterministic stand-in for a streaming LLM."""

    async def step(self, request: StepRequest) -> ModelStep:
        city = str(request.input.get("city") or "Oslo")
        if request.step == 1:
            text = await stream(request, f"Looking up the forecast and the air in {city}.")
            args = {"city": city}
            return ModelStep(text, tuple(ToolCall(call_id(request, 1, tool), tool, args)
                                         for tool in ("forecast", "air")))
        found = {m["call_id"]: m["content"] for m in request.conversation
                 if m.get("role") == "tool"}
        sky = found.get(call_id(request, 1, "forecast"), {})
        air = found.get(call_id(request, 1, "air"), {})
        return ModelStep(await stream(request, (
            f"{city} tomorrow: {sky.get('sky', 'no forecast')}, {sky.get('high', '?')} °C at "
            f"the warmest and {sky.get('low', '?')} °C at night, wind {sky.get('wind', '?')} "
            f"m/s. The air is {air.get('quality', 'unmeasured')} (AQI {air.get('aqi', '?')}). "
            f"Take a {'coat' if sky.get('low', 0) < 8 else 'light jacket'} and enjoy the day."
        )))


tools = Tools()


def _numbers(city: str) -> list[int]:
    return list(hashlib.sha256(city.lower().encode()).digest()[:4])


@tools.read("forecast", description="Tomorrow's weather in a city.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]})
async def forecast(call: CallContext) -> dict[str, Any]:
    await asyncio.sleep(0.3)  # a vendor takes its time
    n = _numbers(call.arguments["city"])
    skies = ("sunny", "cloudy", "light rain", "showers", "clear")
    return {"sky": skies[n[0] % len(skies)], "high": 10 + n[1] % 15, "low": n[2] % 10,
            "wind": 1 + n[3] % 9}


@tools.read("air", description="Tomorrow's air quality in a city.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]})
async def air(call: CallContext) -> dict[str, Any]:
    await asyncio.sleep(0.2)
    aqi = 10 + _numbers(call.arguments["city"])[3] % 60
    return {"aqi": aqi, "quality": "good" if aqi < 50 else "fair"}


app = App(model=BriefingModel(), tools=tools)
