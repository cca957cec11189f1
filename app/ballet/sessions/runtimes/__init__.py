"""The six runtime adapters, by the name `.ballet.yml` gives them (`adapter:`)."""

from __future__ import annotations

from ballet.core.config import Adapter
from ballet.sessions.runtimes.aider import AiderAdapter
from ballet.sessions.runtimes.base import (
    Invocation,
    RuntimeAdapter,
    RuntimeConfigError,
    UsageMeter,
)
from ballet.sessions.runtimes.claude_code import ClaudeCodeAdapter
from ballet.sessions.runtimes.codex import CodexAdapter
from ballet.sessions.runtimes.command import CommandAdapter
from ballet.sessions.runtimes.gemini import GeminiAdapter
from ballet.sessions.runtimes.opencode import OpencodeAdapter

ADAPTERS: dict[Adapter, RuntimeAdapter] = {
    adapter.name: adapter
    for adapter in (
        CommandAdapter(),
        ClaudeCodeAdapter(),
        CodexAdapter(),
        AiderAdapter(),
        GeminiAdapter(),
        OpencodeAdapter(),
    )
}


def adapter_for(name: Adapter) -> RuntimeAdapter:
    return ADAPTERS[name]


__all__ = [
    "ADAPTERS",
    "Invocation",
    "RuntimeAdapter",
    "RuntimeConfigError",
    "UsageMeter",
    "adapter_for",
]
