"""What a runtime adapter is: how to invoke its CLI, and how to read its usage.

An adapter builds the non-interactive argv for one session (prompt, model,
effort, endpoint), names the environment variables its CLI needs (credentials
under the name the CLI really reads), writes the configuration files its CLI
needs into the session's HOME, and gives a meter that reads token usage and
cost from the CLI's output. What a CLI meters always wins over what its report
claims (only the `command` adapter, which meters nothing, may report usage).

Every adapter points the CLI's temporary files at `<session files>/tmp` (TMPDIR)
so a CLI writes only in HOME, the clone and the session's own directory. The
variables an adapter sets are those `ballet.core.runtime_env` lists for it, their
fixed values taken from there; one it merges with the runtime's declared value it
finds in `Invocation.declared`.
A runtime's `command:` in `.ballet.yml` replaces the CLI's executable (e.g.
`[/opt/claude/bin/claude]`) for LLM adapters, and is the whole argv for the
`command` adapter.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ballet.core.config import Adapter, Runtime
from ballet.core.report import Usage
from ballet.core.runtime_env import fixed_values


class RuntimeConfigError(Exception):
    """The runtime's configuration cannot be run; the message says what to change."""


@dataclass(frozen=True)
class Invocation:
    prompt: str
    prompt_path: Path  # the same text, as a file (BALLET_PROMPT)
    report_path: Path
    files_dir: Path  # the session's BALLET_* directory, outside the clone
    workdir: Path  # the clone
    model: str | None
    effort: str | None
    home: Path  # the session's fresh HOME
    base_url: str | None = None  # the runtime's `base_url:`
    # The declared `env:` variables the worker has, by name: what the CLI may be given
    # (a provider key's is the session's token for the model gateway).
    declared: Mapping[str, str] = field(default_factory=dict)
    # The model gateway's address for each provider, when the runtime holds keys.
    gateway: Mapping[str, str] = field(default_factory=dict)

    def endpoint(self, provider: str) -> str | None:
        """Where the CLI sends `provider`'s requests: the gateway, else `base_url`
        (None: the CLI's own default)."""
        return self.gateway.get(provider) or self.base_url

    @property
    def tmp_dir(self) -> Path:
        return self.files_dir / "tmp"


class UsageMeter:
    """Reads usage from stdout lines as they arrive; the default reads nothing."""

    def feed_line(self, line: bytes) -> None:
        return None

    def usage(self) -> Usage | None:
        return None


class EventMeter(UsageMeter):
    """Usage from a CLI's JSONL events of one `type`: `read` folds each into the total.

    Some CLIs report a run's whole usage in a final event (`read` returns it and
    ignores `before`), others a turn's or a step's share (`read` adds it).
    """

    event_type: str

    def __init__(self) -> None:
        self._usage: Usage | None = None

    def feed_line(self, line: bytes) -> None:
        event = json_object(line)
        if event and event.get("type") == self.event_type:
            self._usage = self.read(event, self._usage or Usage())

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        raise NotImplementedError

    def usage(self) -> Usage | None:
        return self._usage


class RuntimeAdapter:
    name: Adapter
    executable: str
    # LLM CLIs don't know the contract: the prompt tells them where to report.
    writes_report_itself = False
    # A CLI that cannot write a file outside the clone (aider) gives its report as the
    # last JSON line of its reply; the prompt says so and `after_exit` writes the file.
    report_in_reply = False
    # Files the CLI leaves in the clone that must never be committed.
    git_excludes: tuple[str, ...] = ()
    # A file in the session's directory where the CLI keeps its own transcript, which
    # the session's steps are rendered from instead of its output (sessionlog/steps.py).
    transcript: str | None = None

    def argv(self, runtime: Runtime, invocation: Invocation) -> list[str]:
        return [*self.program(runtime), *self.arguments(invocation)]

    def program(self, runtime: Runtime) -> list[str]:
        return list(runtime.command) if runtime.command else [self.executable]

    def arguments(self, invocation: Invocation) -> list[str]:
        raise NotImplementedError

    def environment(self, invocation: Invocation) -> dict[str, str]:
        return {"TMPDIR": str(invocation.tmp_dir), **fixed_values(self.name)}

    def prepare(self, invocation: Invocation) -> None:
        """Write what the CLI needs before it starts (its TMPDIR, config in HOME)."""
        invocation.tmp_dir.mkdir(exist_ok=True)

    def after_exit(self, invocation: Invocation) -> None:
        """Called once the process has ended, before Ballet reads the report."""
        return None

    def meter(self, invocation: Invocation) -> UsageMeter:
        return UsageMeter()


# What Ballet reads of a file a session could have written (aider's chat history
# and usage log): enough for any real session, never unbounded.
SESSION_FILE_LIMIT = 16 * 1024 * 1024


def read_session_file(path: Path, limit: int = SESSION_FILE_LIMIT) -> str | None:
    """A file in the session's directory, as text; None when it is missing or not a
    plain file. Never follows a symlink (out of the workspace) nor blocks on a FIFO:
    the session may have put either there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.read(limit).decode("utf-8", "replace")


def write_session_file(path: Path, text: str) -> bool:
    """Create `path` with `text` unless anything (a file, a symlink) is already there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return False
    with os.fdopen(fd, "w") as file:
        file.write(text)
    return True


def json_object(line: bytes | str) -> dict[str, Any] | None:
    """One JSONL line as an object, or None for anything else (progress text, junk)."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def tokens(value: object) -> int:
    return int(number(value))


def flag(name: str, value: str | None) -> list[str]:
    return [name, value] if value else []


def mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
