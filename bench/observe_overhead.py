"""What the observe hooks cost per driver statement, in process (no database).

``python -m bench.observe_overhead``: the metrics, traces (off) and logs hooks of
``ticketiq_pg.observe`` run for one ``write_checkpoint`` statement's arguments and
answer, 200,000 times; prints the mean time per statement.
"""

from __future__ import annotations

import logging
import time
import uuid

from ticketiq_pg.db.transport import STATEMENT_HOOKS
from ticketiq_pg.observe import _install


def main(n: int = 200_000) -> float:
    logging.basicConfig(level=logging.WARNING)
    _install()
    args = (uuid.uuid4(), 1, 3, {"x": 1}, "seal", "k")
    rows = [{"replayed": False}]
    started = time.perf_counter()
    for _ in range(n):
        for hook in STATEMENT_HOOKS:
            hook("write_checkpoint", args, 0.001, rows, None)
    per = (time.perf_counter() - started) / n
    print(f"observe hooks per statement: {per * 1e6:.2f} us ({len(STATEMENT_HOOKS)} hooks, "
          f"{n} statements)")
    return per


if __name__ == "__main__":
    main()
