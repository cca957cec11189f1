"""`claude-code`: `claude -p` with stream-json output.

Usage comes from the last `{"type":"result"}` line: `usage` (input counts
fresh plus cache-read plus cache-write tokens) and `total_cost_usd`.
Running as root, bypass mode refuses to start unless IS_SANDBOX=1; the session
is already isolated by Ballet (fresh clone, fresh HOME, filtered environment).
"""

from __future__ import annotations

from typing import Any

from ballet.core.report import Usage
from ballet.sessions.runtimes.base import (
    EventMeter,
    Invocation,
    RuntimeAdapter,
    UsageMeter,
    flag,
    mapping,
    number,
    tokens,
)


class ClaudeCodeAdapter(RuntimeAdapter):
    name = "claude-code"
    executable = "claude"

    def arguments(self, invocation: Invocation) -> list[str]:
        return [
            "-p",
            invocation.prompt,
            "--output-format",
            "stream-json",
            "--verbose",  # stream-json refuses to run without it
            "--permission-mode",
            "bypassPermissions",
            "--add-dir",
            str(invocation.files_dir),
            *flag("--model", invocation.model),
            *flag("--effort", invocation.effort),
        ]

    def environment(self, invocation: Invocation) -> dict[str, str]:
        return {"IS_SANDBOX": "1"}

    def meter(self, invocation: Invocation) -> UsageMeter:
        return ClaudeMeter()


class ClaudeMeter(EventMeter):
    event_type = "result"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        usage = mapping(event.get("usage"))
        return Usage(
            input_tokens=sum(
                tokens(usage.get(key))
                for key in (
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                )
            ),
            output_tokens=tokens(usage.get("output_tokens")),
            cost_usd=number(event.get("total_cost_usd")),
        )
