"""`opencode`: `opencode run --format json` with auto-approved permissions.

Without `--auto`, `run` rejects every permission ask. Usage and cost are the
sums over `step_finish` events' `part.tokens` (input plus cache reads and
writes; output plus reasoning) and `part.cost`.
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


class OpencodeAdapter(RuntimeAdapter):
    name = "opencode"
    executable = "opencode"

    def arguments(self, invocation: Invocation) -> list[str]:
        return [
            "run",
            "--format",
            "json",
            "--dir",
            str(invocation.workdir),
            "--auto",
            *flag("-m", invocation.model),
            *flag("--variant", invocation.effort),
            "--",
            invocation.prompt,
        ]

    def meter(self, invocation: Invocation) -> UsageMeter:
        return OpencodeMeter()


class OpencodeMeter(EventMeter):
    event_type = "step_finish"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        part = mapping(event.get("part"))
        counts = mapping(part.get("tokens"))
        cache = mapping(counts.get("cache"))
        return Usage(
            input_tokens=before.input_tokens
            + tokens(counts.get("input"))
            + tokens(cache.get("read"))
            + tokens(cache.get("write")),
            output_tokens=before.output_tokens
            + tokens(counts.get("output"))
            + tokens(counts.get("reasoning")),
            cost_usd=before.cost_usd + number(part.get("cost")),
        )
