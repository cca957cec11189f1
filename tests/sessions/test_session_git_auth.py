"""The installation token authenticates git over HTTP and never lands in a file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ballet.sessions import (
    RunnerSpec,
    SessionOptions,
    SessionResult,
    Workspaces,
    run_session,
    static_token,
)
from git_repos import remote_refs
from session_git_http import serve_git
from session_helpers import COMMIT_AND_REPORT, MakeSpec, WriteScript

TOKEN = "ghs_http_token_never_on_disk"


def run(
    spec: RunnerSpec, workspaces: Workspaces, parent_env: dict[str, str], token: str
) -> SessionResult:
    return asyncio.run(
        run_session(
            spec, workspaces=workspaces, git_auth=static_token(token), parent_env=parent_env
        )
    )


def test_fetch_and_push_over_http_with_the_token_and_no_token_on_disk(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script("agent", COMMIT_AND_REPORT)
    with serve_git(origin.parent, TOKEN) as base:
        spec = make_spec(clone_url=f"{base}/{origin.name}")
        result = run(spec, workspaces, parent_env, TOKEN)
    assert result.failure_reason is None, result.report.summary
    assert remote_refs(origin)["refs/heads/ballet/7-greeting"] == result.head_sha
    for path in workspaces.root.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_a_refused_token_fails_the_session_with_advice(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script("agent", COMMIT_AND_REPORT)
    with serve_git(origin.parent, TOKEN) as base:
        spec = make_spec(clone_url=f"{base}/{origin.name}")
        result = run(spec, workspaces, parent_env, "ghs_expired")
    assert result.failure_reason == "workspace"
    assert "could not fetch octo/demo" in result.report.summary
    assert "App is installed" in result.report.summary


class ExpiringTokens:
    """Installation tokens as GitHub hands them out: the one minted before an hour
    passed is refused after it. The session "lets the hour pass" by creating
    `hour_passed`, so the expiry falls between fetch and push without any sleep."""

    def __init__(self, hour_passed: Path) -> None:
        self.hour_passed = hour_passed
        self.minted: list[str] = []

    def accepted(self) -> str:
        return "ghs_second_hour" if self.hour_passed.exists() else "ghs_first_hour"

    async def __call__(self, repo: str) -> str | None:
        self.minted.append(self.accepted())
        return self.minted[-1]


def test_the_push_asks_for_a_fresh_token_after_the_session_ran(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    origin: Path,
    observed: Path,
) -> None:
    tokens = ExpiringTokens(observed / "hour-passed")
    write_script("agent", f"{COMMIT_AND_REPORT}\nopen({str(tokens.hour_passed)!r}, 'w').close()\n")
    with serve_git(origin.parent, tokens.accepted) as base:
        spec = make_spec(clone_url=f"{base}/{origin.name}")
        result = asyncio.run(
            run_session(
                spec, workspaces=workspaces, git_auth=tokens, parent_env=parent_env,
                options=options,
            )
        )  # fmt: skip
    assert result.failure_reason is None, result.report.summary
    assert tokens.minted == ["ghs_first_hour", "ghs_second_hour"]
    assert remote_refs(origin)["refs/heads/ballet/7-greeting"] == result.head_sha
