"""Helpers for session tests: real git repositories and the secrets that must not leak."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from ballet.sessions import SessionSpec

# Secrets a worker holds that must never reach a session.
SECRETS = {
    "BALLET_WEBHOOK_SECRET": "whsec-do-not-leak",
    "BALLET_PRIVATE_KEY": "-----BEGIN PRIVATE KEY----- do-not-leak",
    "REDIS_URL": "redis://:do-not-leak@localhost:6379",
    "GITHUB_TOKEN": "ghs_do_not_leak",
}
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


MakeSpec = Callable[..., SessionSpec]  # the `make_spec` fixture
WriteScript = Callable[[str, str], Path]  # the `write_script` fixture


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie no one reaps (this machine's init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"
