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
import subprocess
from collections.abc import Mapping
from pathlib import Path

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
    *args: str, cwd: Path | None, env: Mapping[str, str], check: bool = True
) -> tuple[int, str, str]:
    """Run git; return (returncode, stdout, stderr). Raises GitError when `check`."""
    proc = await asyncio.create_subprocess_exec(
        "git",
        *args,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate()
    code = proc.returncode if proc.returncode is not None else -1
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    if check and code != 0:
        raise GitError(args, code, stderr)
    return code, stdout, stderr
