"""`gemini`: `gemini -p` with stream-json output and yolo approvals.

Folder trust is on by default and an untrusted folder is fatal in headless
mode (exit 55), so the workspace is trusted by flag and environment. The CLI
has no effort flag (effort is ignored). Usage comes from the `result` event's
`stats`; Gemini reports no cost.
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
    tokens,
)


class GeminiAdapter(RuntimeAdapter):
    name = "gemini"
    executable = "gemini"

    def arguments(self, invocation: Invocation) -> list[str]:
        return [
            "-p",
            invocation.prompt,
            "--approval-mode",
            "yolo",
            "--skip-trust",
            "-o",
            "stream-json",
            "--include-directories",
            str(invocation.files_dir),
            *flag("-m", invocation.model),
        ]

    def environment(self, invocation: Invocation) -> dict[str, str]:
        return {"GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def meter(self, invocation: Invocation) -> UsageMeter:
        return GeminiMeter()


class GeminiMeter(EventMeter):
    event_type = "result"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        stats = mapping(event.get("stats"))
        return Usage(
            input_tokens=tokens(stats.get("input_tokens")),
            output_tokens=tokens(stats.get("output_tokens")),
        )
