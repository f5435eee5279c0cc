"""Model adapters: a run's model behind a provider's official SDK.

* :class:`OpenAIChatModel` (``ticketiq_pg.adapters.openai_chat``): OpenAI Chat
  Completions with tools, ``pip install 'ticketiq-pg[openai]'``;
* :class:`AnthropicModel` (``ticketiq_pg.adapters.anthropic_messages``): Anthropic
  Messages with ``tool_use``/``tool_result`` blocks, ``pip install 'ticketiq-pg[anthropic]'``;
* :class:`ModelSettings` (the model, a system prompt, sampling parameters; per app and
  per run) and :class:`ProviderModel`, their shared base (``base``);
* :class:`ToolNames` (``names``): library tool names to provider tool names and back;
* ``schema``: tools' JSON Schemas, derived from Python types, and their validator.

The SDKs are imported when an adapter first makes its client, so these names import
without them.  Names are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ticketiq_pg.adapters.anthropic_messages import AnthropicModel
    from ticketiq_pg.adapters.base import ModelSettings, ProviderModel
    from ticketiq_pg.adapters.names import ToolNames
    from ticketiq_pg.adapters.openai_chat import OpenAIChatModel

__all__ = ["AnthropicModel", "ModelSettings", "OpenAIChatModel", "ProviderModel", "ToolNames"]

_EXPORTS = {
    "AnthropicModel": "ticketiq_pg.adapters.anthropic_messages",
    "ModelSettings": "ticketiq_pg.adapters.base",
    "OpenAIChatModel": "ticketiq_pg.adapters.openai_chat",
    "ProviderModel": "ticketiq_pg.adapters.base",
    "ToolNames": "ticketiq_pg.adapters.names",
}


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
