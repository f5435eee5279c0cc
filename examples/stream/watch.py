"""Watch a run in a terminal: its text as the model writes it, its calls, its end.

::

    python examples/stream/watch.py postgresql://app@db/tickets 0b9f...-run-id

It reads the run's event stream straight from the database (``watch_run``): every
durable event once, in order, and the live text while the process running the run
streams it.  If that process dies in the middle of a step, the stream says so and the
step's text comes again from the process that took the run over.
"""

from __future__ import annotations

import asyncio
import sys

from ticketiq_pg import RunText, watch_run


async def main(url: str, run_id: str) -> None:
    text = RunText()
    async for event in watch_run(url, run_id):
        text.add(event)
        if event.kind == "text":
            print(event.body["text"], end="", flush=True)
        elif event.kind == "resumed":
            print(f"\n[the process died: step {event.body['discard']['step']} is asked again]")
        elif event.durable:
            print(f"\n[{event.kind}]", event.body.get("tool", ""))
    print("\nanswer:", text.answer)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
