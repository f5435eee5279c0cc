"""A Pydantic AI agent with a structured output, for the refused-answer resume test.

``ticketiq-pg worker --app-dir tests --app pydantic_verdict_app:app`` with
``VERDICT_BASE_URL`` (the local OpenAI-wire server's URL): Pydantic AI's own OpenAI model
asks it, the agent's ``output_type`` judges the answers.
"""

from __future__ import annotations

import os

from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from ticketiq_pg.integrations.pydantic_ai import agent_app


class Verdict(BaseModel):
    label: str
    score: int


client = AsyncOpenAI(base_url=os.environ.get("VERDICT_BASE_URL", "http://127.0.0.1:9/v1"),
                     api_key="test-key", max_retries=0)
agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
              output_type=Verdict, system_prompt="You judge tickets.")
app = agent_app(agent)
