"""The Pydantic AI agent under a real SIGKILL, asked through Pydantic AI's OpenAI model.

Two workers over a fresh database run ``app:app`` with ``TRIAGE_AGENT_MODEL=openai:...``
pointed at ticketiq-pg's local server that speaks OpenAI's wire format (it records every
request); tickets come in as ``POST /runs``; the worker holding runs is killed with
SIGKILL mid model step (6 runs) and, in a second round, with a write in flight (10 runs):
``harness.agent_kill.kill_round``, which the OpenAI Agents SDK example shares.  Judged
from the database (every run completed, a resume for each run the kill caught, no step
whose checkpoint the victim wrote asked again) and from the ticket service's own record
(one comment per ticket; the unclassified triage note never sent twice).  A third test
kills a worker right after the unclassified write returned: the resume settles it
``unknown`` and does not send it again.  Run it from this folder::

    TICKETIQ_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1/postgres pytest test_agent.py
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent_kill import kill_round, landed, provider, start, ticket_service, workers
from harness.provider_sim import ProviderServer
from ticketiq_pg import new_seal_key
from ticketiq_pg.testing import calls, fresh_database, make_api_key, wait_for_runs

HERE = Path(__file__).resolve().parent
TICKETS = 6
SEAL_KEYS = new_seal_key()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    """The triage example's ticket service, recording every request; its URL."""
    with ticket_service(tmp_path / "record.jsonl") as url:
        yield url


def test_a_sigkilled_worker_asks_no_finished_step_again_and_doubles_no_write(
        service: str, tmp_path: Path) -> None:
    print(kill_round(HERE, service, tmp_path, seal_keys=SEAL_KEYS, tickets=TICKETS, think=1.0,
               tool_seconds=0.0, mid_tool_call=False))


def test_a_worker_sigkilled_mid_tool_call_loses_no_run_and_doubles_no_write(
        service: str, tmp_path: Path) -> None:
    """Ten runs over two workers; the victim is killed while a write it sent is in
    flight (applied by the service, its answer not yet back)."""
    print(kill_round(HERE, service, tmp_path, seal_keys=SEAL_KEYS, tickets=10, think=0.2,
               tool_seconds=1.5, mid_tool_call=True))


def test_an_unclassified_write_in_doubt_is_settled_unknown_never_sent_again(
        service: str, tmp_path: Path) -> None:
    with ProviderServer.start() as sim, fresh_database() as db:
        sim.respond("openai", provider(think=0.0))
        key = make_api_key(db, "triage-client")
        # SIGKILL right after the second call of step 2 (the note) returned: it landed,
        # and nothing recorded it.
        victim, survivor = workers(HERE, db, service, sim, tmp_path, SEAL_KEYS,
                                   victim_env={"TICKETIQ_FAULTS": "after_call@2.2"})
        with victim:
            run_id = start(victim.url, key, "T-1", service)
            assert victim.popen is not None and victim.popen.wait(60) == -signal.SIGKILL
        with survivor:
            (ended,) = wait_for_runs(db, 1, timeout=60)
            assert ended["status"] == "completed" and ended["loss_count"] == 1
            assert survivor.stop() == 0
        note = next(c for c in calls(db, run_id) if c.tool == "set_triage_note")
        assert (note.classification, note.step_key is not None) == ("write", True)
        assert (note.state, note.settlement) == ("settled", "unknown"), note
        assert note.outcome["sent_again"] is False
        assert landed(service, "triage") == Counter({"T-1": 1})  # sent once, not again
        assert landed(service, "comments") == Counter({"T-1": 1})
