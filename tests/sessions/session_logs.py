"""Helpers for the session-log tests: a sink that keeps what it is given, and a session
run to its end with it."""

from __future__ import annotations

import asyncio
import secrets
import string
from collections.abc import Sequence
from dataclasses import dataclass, field

from ballet.sessionlog.sink import LogLine
from ballet.sessionlog.steps import Step
from ballet.sessions import (
    GitAuth,
    RunnerSpec,
    SessionOptions,
    SessionResult,
    Workspaces,
    anonymous,
    run_session,
)


@dataclass
class RecordingSink:
    """Keeps every line appended (or only counts them, `keep=False`) and what `finish` got."""

    keep: bool = True
    lines: list[LogLine] = field(default_factory=list)
    appended: int = 0
    batches: list[int] = field(default_factory=list)  # each append's size
    seqs: list[tuple[int, int]] = field(default_factory=list)  # each append's first and last
    log: bytes | None = None
    steps: list[Step] = field(default_factory=list)
    finished: int = 0

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        self.appended += len(lines)
        self.batches.append(len(lines))
        if lines:
            self.seqs.append((lines[0].seq, lines[-1].seq))
        if self.keep:
            self.lines.extend(lines)

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        self.log = log
        self.steps = list(steps)
        self.finished += 1

    def everything(self) -> str:
        """All it was given, as one text, to search for what must not be there."""
        live = "\n".join(line.text for line in self.lines)
        steps = "\n".join(step.model_dump_json() for step in self.steps)
        return f"{live}\n{(self.log or b'').decode('utf-8', 'replace')}\n{steps}"


def planted_key() -> str:
    """A random 40-character secret, letters and digits, as API keys are."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(40))


def run_logged(
    spec: RunnerSpec,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    sink: RecordingSink,
    git_auth: GitAuth = anonymous,
) -> SessionResult:
    """`run_session` to its end with `sink` as its log sink, as the worker runs it."""
    return asyncio.run(
        run_session(
            spec,
            workspaces=workspaces,
            git_auth=git_auth,
            parent_env=parent_env,
            options=options,
            log_sink=sink,
        )
    )
