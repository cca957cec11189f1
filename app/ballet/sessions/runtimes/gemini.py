"""`gemini`: `gemini -p` with stream-json output and yolo approvals.

Folder trust is on by default and an untrusted folder is fatal in headless
mode (exit 55), so the workspace is trusted by flag and environment. The CLI
has no effort flag (effort is ignored).

Before it starts, Ballet writes the session HOME's `~/.gemini/settings.json`:
usage statistics and auto-update off (no traffic but the model API) and, when
GEMINI_API_KEY or GOOGLE_API_KEY is declared, API-key auth selected — without
that, GOOGLE_GEMINI_BASE_URL (Ballet's model gateway, or `base_url`) switches the
CLI to a gateway auth mode that a plain API key does not satisfy.

Usage comes from the `result` event's `stats` (every model call of the run,
cached tokens included in `input_tokens`); Gemini reports no cost.
"""

from __future__ import annotations

import json
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

API_KEY_NAMES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


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
        env = super().environment(invocation)  # GEMINI_CLI_TRUST_WORKSPACE among them
        endpoint = invocation.endpoint("gemini")
        if endpoint:
            env["GOOGLE_GEMINI_BASE_URL"] = endpoint
        return env

    def prepare(self, invocation: Invocation) -> None:
        super().prepare(invocation)
        settings: dict[str, Any] = {
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
        }
        if any(name in invocation.declared for name in API_KEY_NAMES):
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        directory = invocation.home / ".gemini"
        directory.mkdir(exist_ok=True)
        (directory / "settings.json").write_text(json.dumps(settings, indent=2))

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
