"""An experiment, not a setting: does holding a lone checkpoint back fill groups and help?

    python scripts/with_test_server.py -- python scripts/hold_experiment.py [--hold 0.0003]

Runs as bench section 2 (the peer) runs ours at 8 at once: 50 runs of 20 steps a block,
at most 8 at once, each started as another ends (staggered), in six alternating pairs
of blocks.  In the "hold" blocks, ``group_commit.Grouped._end_of_pass`` is wrapped: while
another statement is out, the end of a pass comes ``--hold`` seconds later, once, so
more checkpoints share a statement; everything else is the library's own code.  Prints
each block's steps/s and statements by function, then the medians.  The library has no
such hold.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_database  # noqa: E402
from bench.workload import BenchModel, make_runner, start_kwargs  # noqa: E402
from ticketiq_pg.db import group_commit  # noqa: E402
from ticketiq_pg.db.driver import TicketIQ  # noqa: E402

RUNS, AT_ONCE, STEPS, PAIRS = 50, 8, 20, 6
_end_of_pass = group_commit.Grouped._end_of_pass


def _holding(seconds: float, on: dict[str, bool]) -> Any:
    def end_of_pass(self: group_commit.Grouped[Any, Any]) -> None:
        if on["hold"] and self._out > 0 and not getattr(self, "_held", False):
            self._held = True  # type: ignore[attr-defined]
            asyncio.get_running_loop().call_later(seconds, end_of_pass, self)
            return
        self._held = False  # type: ignore[attr-defined]
        _end_of_pass(self)

    return end_of_pass


async def main_async(hold: float) -> None:
    on = {"hold": False}
    group_commit.Grouped._end_of_pass = _holding(hold, on)  # type: ignore[method-assign]
    with bench_database() as bdb:
        db = await TicketIQ.connect(bdb.url, min_size=AT_ONCE + 1, max_size=AT_ONCE + 1)
        runner = make_runner(db, "hold-experiment", BenchModel())
        runner.leases.start()
        seq = 0

        async def block() -> float:
            gate = asyncio.Semaphore(AT_ONCE)

            async def one() -> None:
                nonlocal seq
                async with gate:
                    seq += 1
                    await runner.start_and_run(**start_kwargs(seq, "reads", STEPS))

            t0 = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(RUNS)))
            return RUNS * STEPS / (time.perf_counter() - t0)

        try:
            await block()  # warm
            rates: dict[bool, list[float]] = {False: [], True: []}
            for pair in range(PAIRS):
                for held in (False, True) if pair % 2 == 0 else (True, False):
                    on["hold"] = held
                    before = dict(db.statements)
                    rate = await block()
                    sent = {k: v - before.get(k, 0) for k, v in db.statements.items()
                            if v - before.get(k, 0)}
                    rates[held].append(rate)
                    print(f"hold={held} {rate:,.0f} steps/s; statements {sum(sent.values())}"
                          f" ({sent})", flush=True)
            for held, each in rates.items():
                print("hold" if held else "no hold", f"median {statistics.median(each):,.0f}")
        finally:
            await runner.leases.stop()
            await db.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/hold_experiment.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hold", type=float, default=0.0003, help="seconds (default 0.0003)")
    asyncio.run(main_async(parser.parse_args().hold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
