"""The OpenAI Agents SDK agent under a real SIGKILL, asked through the SDK's own model.

Two workers over a fresh database run ``app:app`` with ``TRIAGE_AGENT_MODEL=openai:...``
pointed at ticketiq-pg's local server that speaks OpenAI's wire format (it records every
request); tickets come in as ``POST /runs``; the worker holding runs is SIGKILLed with a
write in flight (10 runs) and, in a second round, mid model step (6 runs): the Pydantic
AI example's kill round (``harness.agent_kill.kill_round``).  Judged from the database
(every run completed, no step whose checkpoint the victim wrote asked again, the resume
audit naming a call made before the loss ``already_made``) and from the ticket service's
own record (one comment per ticket; the unclassified note never sent twice).  Run it
from this folder::

    TICKETIQ_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1/postgres pytest test_agent.py
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent_kill import kill_round, ticket_service
from ticketiq_pg import new_seal_key

HERE = Path(__file__).resolve().parent
SEAL_KEYS = new_seal_key()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    """The triage example's ticket service, recording every request; its URL."""
    with ticket_service(tmp_path / "record.jsonl") as url:
        yield url


def test_a_worker_sigkilled_mid_tool_call_loses_no_run_and_doubles_no_write(
        service: str, tmp_path: Path) -> None:
    print(kill_round(HERE, service, tmp_path, seal_keys=SEAL_KEYS, tickets=10, think=0.2,
               tool_seconds=1.5, mid_tool_call=True))


def test_a_worker_sigkilled_mid_model_step_asks_no_finished_step_again(
        service: str, tmp_path: Path) -> None:
    print(kill_round(HERE, service, tmp_path, seal_keys=SEAL_KEYS, tickets=6, think=1.0,
               tool_seconds=0.0, mid_tool_call=False))
