"""`codex`: `codex exec --json`.

Usage is the sum of `turn.completed` events' `usage` (`cached_input_tokens`
is part of `input_tokens`); Codex reports no cost, so cost stays 0.
The sandbox is `danger-full-access`: the agent must commit (Codex's
workspace-write sandbox keeps `.git` read-only) and write its report outside
the clone; Ballet's session isolation (fresh clone, HOME, environment) is the
boundary instead.
"""

from __future__ import annotations

from typing import Any

from ballet.core.report import Usage
from ballet.sessions.runtimes.base import (
    EventMeter,
    Invocation,
    RuntimeAdapter,
    UsageMeter,
    mapping,
    tokens,
)


class CodexAdapter(RuntimeAdapter):
    name = "codex"
    executable = "codex"

    def arguments(self, invocation: Invocation) -> list[str]:
        argv = [
            "exec",
            "--json",
            "-C",
            str(invocation.workdir),
            "--sandbox",
            "danger-full-access",
            "--skip-git-repo-check",
            "--ephemeral",
            "-c",
            'approval_policy="never"',
        ]
        if invocation.model:
            argv += ["-m", invocation.model]
        if invocation.effort:
            argv += ["-c", f'model_reasoning_effort="{invocation.effort}"']
        return [*argv, "--", invocation.prompt]

    def meter(self, invocation: Invocation) -> UsageMeter:
        return CodexMeter()


class CodexMeter(EventMeter):
    event_type = "turn.completed"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        usage = mapping(event.get("usage"))
        return Usage(
            input_tokens=before.input_tokens + tokens(usage.get("input_tokens")),
            output_tokens=before.output_tokens + tokens(usage.get("output_tokens")),
        )
