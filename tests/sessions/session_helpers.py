"""Helpers for session tests: the secrets that must not leak, a committing agent,
fixture types, live pids."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ballet.sessions import SessionSpec

# Secrets a worker holds that must never reach a session.
SECRETS = {
    "BALLET_WEBHOOK_SECRET": "whsec-do-not-leak",
    "BALLET_PRIVATE_KEY": "-----BEGIN PRIVATE KEY----- do-not-leak",
    "REDIS_URL": "redis://:do-not-leak@localhost:6379",
    "GITHUB_TOKEN": "ghs_do_not_leak",
}

# An agent that commits `greeting.txt` on the ticket branch and reports `done`.
COMMIT_AND_REPORT = """
import json, os, subprocess
open("greeting.txt", "w").write("hello\\n")
subprocess.run(["git", "add", "greeting.txt"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Greet"], check=True)
json.dump({"outcome": "done", "summary": "greeted"}, open(os.environ["BALLET_REPORT"], "w"))
"""

MakeSpec = Callable[..., SessionSpec]  # the `make_spec` fixture
WriteScript = Callable[[str, str], Path]  # the `write_script` fixture


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie no one reaps (this machine's init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


# Agent code recording the session's pid namespace ("pid:[inode]") in `path`.
def record_namespace(path: Path) -> str:
    return (
        "import os\n"
        f"open({str(path)!r} + '.tmp', 'w').write(os.readlink('/proc/self/ns/pid'))\n"
        f"os.rename({str(path)!r} + '.tmp', {str(path)!r})\n"
    )


def namespace_alive(pid_namespace: str) -> bool:
    """Whether any process of this machine still runs in that pid namespace: a confined
    session's processes have pids of their own, so they are found by namespace."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            same = os.readlink(f"/proc/{entry.name}/ns/pid") == pid_namespace
        except OSError:
            continue
        if same and alive(int(entry.name)):
            return True
    return False


def namespace_ends(pid_namespace: str, within_seconds: float = 5.0) -> bool:
    """Whether the namespace's processes are all gone within the time (the kernel kills
    them when its first process dies, which takes a moment, not a promise)."""
    deadline = time.monotonic() + within_seconds
    while namespace_alive(pid_namespace):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
