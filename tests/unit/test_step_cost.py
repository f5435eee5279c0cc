"""bench.step_cost's profile split: each function's own CPU in one bucket, builtins by caller."""

from __future__ import annotations

import cProfile
import json
import pstats
import time

from bench.step_cost import bucket_of, split_profile


def test_bucket_of_names_the_module_family() -> None:
    assert bucket_of("/x/ticketiq_pg/seal.py") == "seal, canonical JSON"
    assert bucket_of("/usr/lib/python3.11/json/encoder.py") == "seal, canonical JSON"
    assert bucket_of("/x/ticketiq_pg/db/transport.py") == "db layer"
    assert bucket_of("/v/site-packages/psycopg/cursor_async.py") == "psycopg, pool"
    assert bucket_of("/usr/lib/python3.11/asyncio/base_events.py") == "asyncio"
    assert bucket_of("/x/ticketiq_pg/runtime/runner.py") == "step loop"
    assert bucket_of("/x/bench/workload.py") == "model, tools (bench)"
    assert bucket_of("/usr/lib/python3.11/uuid.py") == "other"


def test_split_profile_sums_to_the_profiled_own_time() -> None:
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for _ in range(2000):
        json.dumps({"a": [1, 2, 3], "b": "x" * 50})  # json/ (and the C encoder, a builtin)
        sorted(range(50))  # a builtin called from this test file: "other"
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    split = split_profile(stats)
    own = sum(entry[2] for entry in stats.values())
    assert abs(sum(split.values()) - own) < 1e-6 * max(1.0, own)
    assert split.get("seal, canonical JSON", 0.0) > 0.0
