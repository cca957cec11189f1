"""Ballet's own git commands (not the session's): a hermetic environment, clear errors.

The worker's user config (`~/.gitconfig`, /etc/gitconfig) is ignored so a
workspace is the same on every machine, and git never prompts for anything.

Ballet's git never runs a program a session could have chosen: hooks are off
(`core.hooksPath=/dev/null`), so is fsmonitor, and these settings come from the
command's environment, which outranks any repository config. (Ballet runs git
only in its mirrors and, before the session starts, in the fresh clone; after
a session it reads the clone's objects and refs from the mirror, see push.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# What Ballet's git processes inherit from the worker: enough to find git and
# speak the locale, nothing else (no tokens, no Redis URL).
INHERITED = ("PATH", "LANG", "LC_ALL", "TZ")


class GitError(Exception):
    """A git command failed; the message has the command and git's own words."""

    def __init__(self, args: tuple[str, ...], returncode: int, stderr: str) -> None:
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"`git {' '.join(args)}` failed ({returncode}): {stderr.strip()}")


# Command-scoped config (outranks the repository's): nothing runs that a clone names.
HARDENING = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "protocol.ext.allow": "never",
}


def git_environment(parent_env: Mapping[str, str], home: Path) -> dict[str, str]:
    env = {name: parent_env[name] for name in INHERITED if name in parent_env}
    env.update(
        HOME=str(home),
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
    )
    return with_config(env, HARDENING)


def with_config(env: Mapping[str, str], config: Mapping[str, str]) -> dict[str, str]:
    """`env` plus `config` as GIT_CONFIG_KEY_n/VALUE_n entries after those it has."""
    merged = dict(env)
    count = int(merged.get("GIT_CONFIG_COUNT", "0"))
    for key, value in config.items():
        merged[f"GIT_CONFIG_KEY_{count}"] = key
        merged[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    merged["GIT_CONFIG_COUNT"] = str(count)
    return merged


async def run_git(
    *args: str,
    cwd: Path | None,
    env: Mapping[str, str],
    check: bool = True,
    stdin: bytes | None = None,
) -> tuple[int, str, str]:
    """Run git, `stdin` its input; return (returncode, stdout, stderr). Raises GitError
    when `check`.

    Not asyncio's subprocesses: on Python 3.11 one whose start is cancelled
    together with asyncio's own task that connects its pipes (as a stopping
    loop cancels every task) never ends (its exit waits on that task's calls),
    and a clone still being made as a loop ended hung a whole test run. Here
    git writes to unnamed files and its exit is a pidfd on the loop. A cancelled
    git is left to finish, as before: killing a fetch or push midway would leave
    its lock files in the mirror (`subprocess` reaps it later)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with _input(stdin) as given:
            proc = subprocess.Popen(
                ["git", *args], cwd=cwd, env=dict(env), stdin=given, stdout=out, stderr=err
            )
        code = await _exited(proc)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if check and code != 0:
        raise GitError(args, code, stderr)
    return code, stdout, stderr


@contextlib.contextmanager
def _input(data: bytes | None) -> Iterator[Any]:
    """What git reads: nothing, or `data` from an unnamed file (no pipe to feed)."""
    if data is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as given:
        given.write(data)
        given.seek(0)
        yield given


async def _exited(proc: subprocess.Popen[bytes]) -> int:
    """`proc`'s exit code, awaited on the loop (a pidfd becomes readable at exit)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:  # no pidfd (a Linux before 5.3): a thread waits instead
        return await asyncio.to_thread(proc.wait)
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        await ended
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    return proc.wait()
