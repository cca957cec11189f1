"""A clone prepared ahead is taken on GitHub's word (`Workspaces.take_prepared`): when
GitHub's heads and tags, asked after the session was decided, are exactly the refs
the clone was made from, with no fetch and no wait for the mirror's lock; when
anything moved on GitHub, never. Against the sandbox's git over real HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from ballet.sessions import Workspace, Workspaces, open_workspace
from ballet.sessions.mirror import locked
from test_session_prepared import BRANCH, _session_ends, _view
from test_session_remote_refs import (
    LOOKED,
    REPO,
    _commit,
    _git,
    _git_requests,
    _origin,
    _run,
    _token,
)


async def _open(workspaces: Workspaces, url: str, token: str, key: str) -> Workspace:
    """As the session job opens its workspace, decided a moment ago."""
    return await open_workspace(
        workspaces,
        repo=REPO,
        clone_url=url,
        token=token,
        key=key,
        branch=BRANCH,
        base="main",
        fresh_since=time.monotonic(),
    )


def test_the_prepared_clone_is_taken_on_github_s_refs_while_the_mirror_is_held(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    # The last session's push going into the mirror holds its lock; the next session
    # needs neither the mirror nor a fetch: GitHub's refs say the clone is current.
    url, token = f"{sandbox.api_url}/{REPO}.git", _token(sandbox)

    async def scenario(client: httpx.AsyncClient) -> None:
        workspaces = Workspaces(tmp_path / "ws", refs_http=client)
        await _session_ends(workspaces, url, token)
        mirror = workspaces.mirror_path(REPO)
        _git_requests(sandbox, 0)
        mark = len(sandbox.sandbox.requests)
        async with locked(mirror), asyncio.timeout(10):
            taken = await _open(workspaces, url, token, "s2")
        assert taken.prepared
        assert _git_requests(sandbox, mark) == LOOKED  # one look, no fetch
        # The very clone a fetch and a fresh clone give (another Workspaces
        # has nothing prepared).
        other = Workspaces(tmp_path / "ws", refs_http=client)
        fresh = await _open(other, url, token, "s3")
        assert not fresh.prepared
        assert _view(taken.clone) == _view(fresh.clone)
        assert taken.start_sha == _git(_origin(sandbox), "rev-parse", BRANCH)

    _run(scenario)


@pytest.mark.parametrize("change", ["branch", "base", "tag", "new branch"])
def test_anything_moved_on_github_after_the_preparation_is_seen(
    sandbox: BackgroundSandbox, tmp_path: Path, change: str
) -> None:
    # The mirror still holds the refs the clone was made from: only GitHub's own say
    # that a person pushed to the branch, the base moved, a tag or a branch came.
    url, token, origin = f"{sandbox.api_url}/{REPO}.git", _token(sandbox), _origin(sandbox)
    moves: dict[str, Callable[[], str]] = {
        "branch": lambda: _git(
            origin, "update-ref", f"refs/heads/{BRANCH}", _commit(origin, BRANCH)
        ),
        "base": lambda: _git(origin, "update-ref", "refs/heads/main", _commit(origin, "main")),
        "tag": lambda: _git(origin, "tag", "v9", "main"),
        "new branch": lambda: _git(origin, "branch", "someone-else", "main"),
    }

    async def scenario(client: httpx.AsyncClient) -> None:
        workspaces = Workspaces(tmp_path / "ws", refs_http=client)
        await _session_ends(workspaces, url, token)
        moves[change]()
        opened = await _open(workspaces, url, token, "s2")
        assert not opened.prepared
        assert opened.start_sha == _git(origin, "rev-parse", BRANCH)
        other = Workspaces(tmp_path / "ws", refs_http=client)
        assert _view(opened.clone) == _view((await _open(other, url, token, "s3")).clone)

    _run(scenario)
