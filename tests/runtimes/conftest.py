"""Fixtures for the contract tests: the pinned real CLIs and a scripted model server.

The CLIs are those `scripts/install-agent-clis.sh` installs under
`.ballet-tools/` (`./run test` runs it first). A missing CLI fails its tests
with the command that installs it: a contract test that skips proves nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from agent_clis import cli_search_path
from ballet.sessions import Workspaces
from git_repos import make_origin


@pytest.fixture(scope="session")
def cli_path() -> str:
    return cli_search_path()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return make_origin(tmp_path, {"README.md": "# demo\n"})


@pytest.fixture
def parent_env(cli_path: str) -> dict[str, str]:
    """The worker's environment: the CLIs on PATH, the keys runtimes may declare."""
    assert shutil.which("git", path=cli_path), "git is needed on PATH"
    return {
        "PATH": cli_path,
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-contract",
        "OPENAI_API_KEY": "sk-openai-contract",
        "GEMINI_API_KEY": "gemini-contract",
        "GITHUB_TOKEN": "ghs_must_not_reach_a_session",
    }


@pytest.fixture
def workspaces(tmp_path: Path, parent_env: dict[str, str]) -> Workspaces:
    return Workspaces(tmp_path / "workspaces", parent_env=parent_env)
