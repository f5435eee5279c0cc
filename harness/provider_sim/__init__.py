"""Local stand-ins for the model providers: OpenAI Chat Completions and Anthropic Messages.

:class:`~harness.provider_sim.server.ProviderServer` records every request
and answers from a script (streamed as the providers stream when a request asks for
``stream``); ``wire`` builds the providers' answers as their API references show them;
``checks`` says what a request must be.  The adapters are tested through their real SDK
clients pointed (``base_url``) at it: no network.
"""

from harness.provider_sim.server import PROVIDERS, ProviderServer, Recorded
from harness.provider_sim.wire import (
    Reply,
    anthropic_call_id,
    anthropic_error,
    anthropic_events,
    anthropic_message,
    assistant_turns,
    openai_call_id,
    openai_chunks,
    openai_completion,
    openai_error,
    text_pieces,
)

__all__ = [
    "PROVIDERS", "ProviderServer", "Recorded", "Reply", "anthropic_call_id",
    "anthropic_error", "anthropic_events", "anthropic_message", "assistant_turns",
    "openai_call_id", "openai_chunks", "openai_completion", "openai_error", "text_pieces",
]
