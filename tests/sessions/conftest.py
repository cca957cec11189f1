"""Fixtures for session tests: real git repositories, real processes, fake CLIs on PATH."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.core.config import Runtime
from ballet.sandbox.server import BackgroundSandbox
from ballet.sessions import RunnerSpec, SessionOptions, StageInfo, TicketInfo, Workspaces
from ballet.sessions.confine import Isolation
from git_repos import make_origin
from session_helpers import SECRETS, MakeSpec, WriteScript


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    """The sandbox (GitHub's double) serving `octo/demo`, for git over real HTTP."""
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        with httpx.Client(base_url=running.api_url, timeout=30) as admin:
            created = admin.post(
                "/_sandbox/repos",
                json={"owner": "octo", "name": "demo", "files": {"README.md": "# demo\n"}},
            )
            assert created.status_code == 201, created.text
        yield running


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return make_origin(tmp_path, {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    return path


@pytest.fixture
def parent_env(bin_dir: Path) -> dict[str, str]:
    """The worker's environment: PATH with the fake CLIs first, plus secrets."""
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        **SECRETS,
    }


@pytest.fixture
def workspaces(tmp_path: Path, parent_env: dict[str, str]) -> Workspaces:
    return Workspaces(tmp_path / "workspaces", parent_env=parent_env)


@pytest.fixture
def options(observed: Path) -> SessionOptions:
    """Confined sessions (the default) that may write `observed`; a short grace."""
    return SessionOptions(grace_seconds=0.5, isolation=Isolation(test_writable=(observed,)))


@pytest.fixture
def write_script(bin_dir: Path) -> WriteScript:
    """Write an executable Python script named `name` into the fake bin dir."""

    def write(name: str, body: str) -> Path:
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    return write


@pytest.fixture
def make_spec(origin: Path) -> MakeSpec:
    def make(**overrides: Any) -> RunnerSpec:
        values: dict[str, Any] = {
            "ticket": TicketInfo(
                repo="octo/demo",
                number=7,
                title="Add a greeting",
                body="Please greet.\n\n## Acceptance criteria\n\n- [ ] says hello\n",
                labels=("ballet",),
                author="octocat",
                url="https://github.com/octo/demo/issues/7",
            ),
            "stage": StageInfo(id="implement", skills=("implementer",)),
            "skill_texts": {"implementer": "Write the code."},
            "runtime": Runtime(adapter="command", command=("agent",)),
            "timeout_seconds": 30,
            "pipeline_name": "default",
            "branch": "ballet/7-greeting",
            "base": "main",
            "clone_url": origin.as_uri(),
        }
        values.update(overrides)
        return RunnerSpec(**values)

    return make
