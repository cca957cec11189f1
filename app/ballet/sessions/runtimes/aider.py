"""`aider`: `aider --message-file` in the clone, one message, then exit.

Aider has no JSON output, but `--analytics-log FILE` gets one JSON object per
line even with analytics disabled; usage is the sum of its `message_send`
events (`prompt_tokens`, `completion_tokens`, `cost`). Aider commits its own
edits (auto-commits on), and its history files go to the session directory.
"""

from __future__ import annotations

from ballet.core.report import Usage
from ballet.sessions.runtimes.base import (
    Invocation,
    RuntimeAdapter,
    UsageMeter,
    flag,
    json_object,
    mapping,
    number,
    tokens,
)

ANALYTICS_LOG = "aider-analytics.jsonl"


class AiderAdapter(RuntimeAdapter):
    name = "aider"
    executable = "aider"
    git_excludes = (".aider*",)

    def arguments(self, invocation: Invocation) -> list[str]:
        files = invocation.files_dir
        return [
            "--message-file",
            str(invocation.prompt_path),
            "--yes-always",
            "--no-pretty",
            "--no-stream",
            "--no-analytics",
            "--analytics-log",
            str(files / ANALYTICS_LOG),
            "--no-check-update",
            "--no-show-release-notes",
            "--no-gitignore",
            "--chat-history-file",
            str(files / "aider-chat.md"),
            "--input-history-file",
            str(files / "aider-input.txt"),
            *flag("--model", invocation.model),
            *flag("--reasoning-effort", invocation.effort),
        ]

    def meter(self, invocation: Invocation) -> UsageMeter:
        return AiderMeter(invocation)


class AiderMeter(UsageMeter):
    def __init__(self, invocation: Invocation) -> None:
        self._log = invocation.files_dir / ANALYTICS_LOG

    def usage(self) -> Usage | None:
        try:
            lines = self._log.read_text(errors="replace").splitlines()
        except OSError:
            return None
        sends = [
            mapping(event.get("properties"))
            for event in map(json_object, lines)
            if event and event.get("event") == "message_send"
        ]
        if not sends:
            return None
        return Usage(
            input_tokens=sum(tokens(p.get("prompt_tokens")) for p in sends),
            output_tokens=sum(tokens(p.get("completion_tokens")) for p in sends),
            cost_usd=sum(number(p.get("cost")) for p in sends),
        )
