"""Helpers for session tests: the secrets that must not leak, a committing agent,
fixture types, live pids."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from ballet.sessions import (
    GitAuth,
    RunnerSpec,
    SessionOptions,
    SessionResult,
    Workspaces,
    anonymous,
    run_session,
)
from process_namespaces import alive as alive  # re-exported: pid tests use it from here

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

MakeSpec = Callable[..., RunnerSpec]  # the `make_spec` fixture
WriteScript = Callable[[str, str], Path]  # the `write_script` fixture


def run(
    spec: RunnerSpec,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    git_auth: GitAuth = anonymous,
) -> SessionResult:
    """`run_session` to its end, as the worker runs it (confined, with `options`)."""
    return asyncio.run(
        run_session(
            spec, workspaces=workspaces, git_auth=git_auth, parent_env=parent_env, options=options
        )
    )
