"""The watch and three-writes kill trials' judging, and the edge letting an event stream live.

The trials themselves run only when asked (tests/unit/test_kill_trials.py,
``LIYAGENT_KILL_MODE=watch``); here, the arithmetic they judge by, on made-up rows.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from harness import three_writes
from harness.edge import SSE_KEEPALIVE, haproxy_config
from harness.trial_report import Report, Trial
from ticketiq_pg.front import runs_api


def seconds(config: str, name: str) -> float:
    found = re.search(rf"^\s*timeout {name} (\d+)(ms|s)$", config, re.M)
    assert found, name
    value = float(found.group(1))
    return value / 1000 if found.group(2) == "ms" else value


def test_the_edge_keeps_an_event_stream_open_between_keepalives() -> None:
    config = haproxy_config("127.0.0.1:1", ["127.0.0.1:2"], "/tmp/x.sock")
    # A stream is silent at most one keepalive; either side's timeout must outlast it.
    assert SSE_KEEPALIVE == inspect.signature(runs_api.runs_router).parameters[
        "keepalive"].default
    assert seconds(config, "client") > SSE_KEEPALIVE
    assert seconds(config, "server") > SSE_KEEPALIVE
    # ``timeout tunnel`` would bound upgraded connections only: an SSE stream is not one.
    assert "X-Served-By %s" in config


RUN = "00000000-0000-0000-0000-000000000001"


def fake_query(settlements: list[dict[str, Any]], tools: dict[str, str]) -> Any:
    def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if "crash_resumed" in sql:
            return [({"settlements": settlements},)]
        if "from ticketiq.calls" in sql:
            return list(tools.items())
        raise AssertionError(sql)
    return query


def write(call: str, effect: str = "created", step: int = 2) -> dict[str, Any]:
    return {"run_id": RUN, "step": step, "call_id": call, "effect": effect}


def test_each_call_in_doubt_must_be_settled_by_its_route() -> None:
    tools = {"a": "incident.create", "b": "jira.comment", "c": "teams.reply"}
    trial = Trial(0, "three", "k", 0.0, run_id=RUN, writes_in_flight=2)
    good = [{"call_id": "a", "settlement": "already_made"},
            {"call_id": "b", "settlement": "read_back"},
            {"call_id": "c", "settlement": "unknown"}]
    assert three_writes.judge(fake_query(good, tools), [trial],
                              [write("a"), write("b"), write("c")]) == []
    assert trial.settlements == ["incident.create:already_made", "jira.comment:read_back",
                                 "teams.reply:unknown"]
    assert trial.writes_landed == 3
    # A keyless, readerless reply sent again (its route says: reported unknown).
    resent = [{"call_id": "c", "settlement": "resent_same_key"}]
    found = three_writes.judge(fake_query(resent, tools),
                               [Trial(1, "three", "k", 0.0, run_id=RUN)], [])
    assert len(found) == 1 and "teams.reply" in found[0]
    # A comment whose reader failed stays unknown: right only where the vendor fails on
    # purpose (the flaky trials), a missed read-back otherwise.
    unread = [{"call_id": "b", "settlement": "unknown"}]
    assert three_writes.judge(fake_query(unread, tools), [Trial(2, "three", "k", 0.0, run_id=RUN)],
                              [], flaky=True) == []
    assert len(three_writes.judge(fake_query(unread, tools),
                                  [Trial(3, "three", "k", 0.0, run_id=RUN)], [])) == 1


def test_a_write_that_landed_twice_is_found_and_a_deduplicated_one_is_not() -> None:
    tools = {"a": "incident.create"}
    twice = three_writes.judge(fake_query([], tools), [Trial(0, "three", "k", 0.0, run_id=RUN)],
                               [write("a"), write("a")])
    assert len(twice) == 1 and "landed twice" in twice[0]
    deduped = three_writes.judge(fake_query([], tools),
                                 [Trial(0, "three", "k", 0.0, run_id=RUN)],
                                 [write("a"), write("a", effect="deduplicated")])
    assert deduped == []


def test_the_report_carries_the_watch_and_three_tallies_and_problems() -> None:
    trials = [Trial(0, "three", "k", 0.0, outcome="answered", writes_in_flight=2,
                    settlements=["teams.reply:unknown"]),
              Trial(1, "three", "k", 0.0, outcome="answered", writes_in_flight=0)]
    report = Report(mode="watch", seed=1, trials=trials, problems=["x"],
                    watch={"clients": 4}, three=three_writes.summary(trials))
    out = report.as_json()
    assert out["problems"] == ["x"] and out["watch"] == {"clients": 4}
    assert out["three"]["killed_with_writes_in_flight"] == 1
    assert out["three"]["calls_in_doubt_at_the_kill"] == 2
    assert "watch" not in Report(mode="kill", seed=1).as_json()
