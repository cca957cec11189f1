"""Real git repositories for tests: a git that ignores the machine's configuration,
a bare `origin` to clone from and the refs a push left there."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

# An identity of its own and no global or system config: tests behave alike on every machine.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_origin(root: Path, files: Mapping[str, str], branches: tuple[str, ...] = ()) -> Path:
    """A bare repository `origin.git` whose `main` holds `files`."""
    work, bare = root / "origin-work", root / "origin.git"
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", str(work))
    for name, text in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "initial", cwd=work)
    for branch in branches:
        git("branch", branch, cwd=work)
    git("clone", "-q", "--bare", str(work), str(bare))
    return bare


def remote_refs(bare: Path) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=bare)
    pairs = (line.split(" ", 1) for line in out.splitlines() if line)
    return {name: sha for name, sha in pairs}
