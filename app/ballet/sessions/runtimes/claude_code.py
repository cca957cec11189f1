"""`claude-code`: `claude -p` with stream-json output.

Usage comes from the last `{"type":"result"}` line: `modelUsage` (every model
the CLI called, its own side calls included; fresh plus cache-read plus
cache-write input tokens) and `total_cost_usd`. Its `usage` field is not
used: it leaves out calls other than the main loop's.

Running as root, bypass mode refuses to start unless IS_SANDBOX=1; the session
is already confined by Ballet. ANTHROPIC_BASE_URL is Ballet's model gateway
when the runtime holds the key (the gateway then goes to `base_url`), else `base_url`. Its
non-essential traffic (update checks, telemetry, error reports) is turned off:
a session's only network is the model API.
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

INPUT_KEYS = ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")


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
        # IS_SANDBOX, no non-essential traffic, no auto-update: core/runtime_env.py.
        env = super().environment(invocation)
        endpoint = invocation.endpoint("anthropic")
        if endpoint:
            env["ANTHROPIC_BASE_URL"] = endpoint
        return env

    def meter(self, invocation: Invocation) -> UsageMeter:
        return ClaudeMeter()


class ClaudeMeter(EventMeter):
    event_type = "result"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        models = [mapping(m) for m in mapping(event.get("modelUsage")).values()]
        if not models:  # an older CLI: only the main loop's usage
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
        return Usage(
            input_tokens=sum(tokens(m.get(key)) for m in models for key in INPUT_KEYS),
            output_tokens=sum(tokens(m.get("outputTokens")) for m in models),
            cost_usd=number(event.get("total_cost_usd")),
        )
