"""Where the pinned agent CLIs are: `.ballet-tools/` of this checkout (or
BALLET_TOOLS_DIR), as `scripts/install-agent-clis.sh` installs them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOLS = Path(os.environ.get("BALLET_TOOLS_DIR", REPO_ROOT / ".ballet-tools"))
NPM_BIN = TOOLS / "npm" / "node_modules" / ".bin"
AIDER_BIN = TOOLS / "aider" / "bin"
INSTALL = "./scripts/install-agent-clis.sh (./run test runs it on first use; needs npm and python3)"


def cli_search_path() -> str:
    """PATH for sessions: the pinned CLIs' directories, then the system's (git, node)."""
    return os.pathsep.join([str(NPM_BIN), str(AIDER_BIN), "/usr/local/bin", "/usr/bin", "/bin"])


def require_cli(name: str) -> Path:
    """The CLI's path; a missing one fails the test with how to install it."""
    for directory in (NPM_BIN, AIDER_BIN):
        path = directory / name
        if path.exists():
            return path
    pytest.fail(f"the `{name}` CLI is not installed under {TOOLS}; install it with {INSTALL}")
