"""An experiment, not a setting: does holding a lone checkpoint back fill groups and help?

    python scripts/with_test_server.py -- python scripts/hold_experiment.py

Runs as bench section 2 (the peer) runs ours at 8 at once: 50 runs of 20 steps a block,
at most 8 at once, each started as another ends (staggered), in six alternating pairs
of blocks.  In the "hold" blocks, ``group_commit.Grouped.write`` is replaced by a copy
that, while another statement is out, ends the pass HOLD seconds later (default 0.0003)
instead of at once, so more checkpoints share a statement.  Prints each block's steps/s
and statements by function, then the medians.  The library has no such hold.
"""
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
from bench.common import bench_database
from bench.workload import BenchModel, make_runner, start_kwargs
from ticketiq_pg.db import group_commit as gc
from ticketiq_pg.db.driver import TicketIQ

HOLD = float(os.environ.get("HOLD", "0.0003"))
orig_write = gc.Grouped.write
mode = {"hold": False}

async def write(self, item):
    if not mode["hold"]:
        return await orig_write(self, item)
    if self._solo and self._out == 0 and not self._queue:
        return await orig_write(self, item)
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    self._queue.append((item, future))
    if len(self._queue) >= self.group:
        self._dispatch()
    elif not self._scheduled:
        self._scheduled = True
        import contextvars
        if self._out > 0:
            loop.call_later(HOLD, self._end_of_pass, context=contextvars.Context())
        else:
            loop.call_soon(self._end_of_pass, context=contextvars.Context())
    return await future
gc.Grouped.write = write

async def main():
    with bench_database() as bdb:
        db = await TicketIQ.connect(bdb.url, min_size=9, max_size=9)
        runner = make_runner(db, "stagger", BenchModel())
        runner.leases.start()
        seq = [0]
        async def block(n, c):
            gate = asyncio.Semaphore(c)
            async def one():
                async with gate:
                    seq[0] += 1
                    await runner.start_and_run(**start_kwargs(seq[0], "reads", 20))
            t0 = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(n)))
            return n * 20 / (time.perf_counter() - t0)
        await block(16, 8)
        res = {False: [], True: []}
        for r in range(6):
            for h in ((False, True) if r % 2 == 0 else (True, False)):
                mode["hold"] = h
                s0 = dict(db.statements)
                rate = await block(50, 8)
                s1 = dict(db.statements)
                d = {k: s1.get(k, 0) - s0.get(k, 0) for k in s1}
                res[h].append(rate)
                sent = {k: v for k, v in d.items() if v}
                print(f"hold={h} {rate:,.0f} steps/s; statements {sum(d.values())} ({sent})",
                      flush=True)
        for h, rs in res.items():
            print("hold" if h else "no hold", f"median {statistics.median(rs):,.0f}")
        await runner.leases.stop()
        await db.close()


asyncio.run(main())
