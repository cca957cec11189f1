"""Helpers for session tests: the secrets that must not leak, a committing agent,
fixture types, live pids."""

from __future__ import annotations

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
