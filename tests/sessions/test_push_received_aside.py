"""The mirror takes a session's pushed commits from a pack received aside while GitHub
took the push (sessions/incoming.py), and only once GitHub has them: a refused push
leaves it nothing, and objects the clone misnamed never get in."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

import pytest
from ballet.sessions import Workspace, Workspaces
from ballet.sessions.incoming import INCOMING, Incoming
from ballet.sessions.push import PushError, checked_objects, push_ticket_branch
from git_repos import git, make_origin

REPO = "octo/demo"
BRANCH = "ballet/7-x"


async def _worked(workspaces: Workspaces, url: str) -> tuple[Workspace, str]:
    """A session's workspace with a commit of its own on the branch; its head."""
    await workspaces.refresh(REPO, url, None)
    workspace = await workspaces.create(REPO, key="s1", branch=BRANCH, base="main")
    for n in range(3):
        (workspace.clone / f"f{n}.txt").write_text(f"the session's work {n}\n")
    git("add", ".", cwd=workspace.clone)
    git("commit", "-q", "-m", "work", cwd=workspace.clone)
    return workspace, git("rev-parse", "HEAD", cwd=workspace.clone)


def _has(repo: Path, sha: str) -> bool:
    try:
        git("cat-file", "-e", sha, cwd=repo)
    except Exception:
        return False
    return True


def _loose(mirror: Path, sha: str) -> bool:
    return (mirror / "objects" / sha[:2] / sha[2:]).exists()


def test_the_mirror_takes_the_pushed_head_from_the_pack_received_aside(tmp_path: Path) -> None:
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        workspace, sha = await _worked(workspaces, origin.as_uri())
        pushed = await push_ticket_branch(
            workspaces, workspace, url=origin.as_uri(), base="main", token=None
        )
        await workspaces.remove(workspace)  # after the mirror took the commits
        mirror = workspace.mirror
        assert pushed == sha == git("rev-parse", f"refs/heads/{BRANCH}", cwd=mirror)
        assert git("fsck", "--connectivity-only", "--no-dangling", cwd=mirror) == ""
        # From a pack, not by a local push (whose receive-pack unpacks a few objects
        # loose), and nothing left where it was received.
        assert not _loose(mirror, sha)
        assert not any((mirror / INCOMING).glob("*/*"))

    asyncio.run(scenario())


def test_a_push_github_refuses_leaves_the_mirror_none_of_its_objects(tmp_path: Path) -> None:
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        workspace, sha = await _worked(workspaces, origin.as_uri())
        blob = git("rev-parse", "HEAD:f0.txt", cwd=workspace.clone)  # new with the session
        # Someone pushed to the branch on GitHub meanwhile: the session's push is refused.
        person = tmp_path / "person"
        git("clone", "-q", origin.as_uri(), str(person))
        git("checkout", "-q", "-b", BRANCH, cwd=person)
        (person / "fix.txt").write_text("a person's fix\n")
        git("add", ".", cwd=person)
        git("commit", "-q", "-m", "fix", cwd=person)
        git("push", "-q", "origin", BRANCH, cwd=person)
        with pytest.raises(PushError, match="moved on GitHub"):
            await push_ticket_branch(
                workspaces, workspace, url=origin.as_uri(), base="main", token=None
            )
        await workspaces.remove(workspace)
        mirror = workspace.mirror
        assert not _has(mirror, sha)
        assert not _has(mirror, blob)
        assert not any((mirror / INCOMING).glob("*/*"))

    asyncio.run(scenario())


def test_objects_the_clone_misnamed_never_reach_the_mirror(tmp_path: Path) -> None:
    # The clone's object files are the session's to write: one whose contents are not
    # what its name says must not enter the mirror under that name.
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        workspace, sha = await _worked(workspaces, origin.as_uri())
        blob = git("rev-parse", "HEAD:f1.txt", cwd=workspace.clone)
        loose = workspace.clone / ".git" / "objects" / blob[:2] / blob[2:]
        loose.chmod(0o644)
        loose.write_bytes(zlib.compress(b"blob 9\x00not this\n"))
        objects = checked_objects(workspace.clone)
        env = {**workspaces.git_env, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}
        incoming = Incoming(workspace.mirror, env, workspaces.git_env, sha, workspace.start_sha)
        try:
            assert not await incoming.move_in(BRANCH)
        finally:
            await incoming.discard()
        assert not _has(workspace.mirror, sha)
        assert not _has(workspace.mirror, blob)
        await workspaces.remove(workspace)

    asyncio.run(scenario())
