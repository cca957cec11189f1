"""Clones prepared ahead (sessions/prepared.py): the next session may take one only
when it is exactly the clone a fresh one would be.

Each test fails without the safety it names: a prepared clone that carried the
previous session's clone, or was taken without comparing the mirror's refs after
the next session's fetch, would show the left files, refs, config, hooks and
objects, or the old head.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from ballet.sandbox.server import BackgroundSandbox
from ballet.sessions import Workspace, Workspaces
from ballet.sessions.disk import can_mount
from ballet.sessions.mounts import mounts
from ballet.sessions.push import push_ticket_branch
from git_repos import git, make_origin

REPO = "octo/demo"
BRANCH = "ballet/7-x"
USER = "sandbox-user:octo"  # the sandbox's owner, as git's password


async def _session_ends(
    workspaces: Workspaces, url: str, token: str | None, key: str = "s1"
) -> tuple[Workspace, str]:
    """A session that commits and leaves all it can behind in its clone; Ballet pushes
    its branch, and then prepares the next clone of it. Returns it and a dangling
    object the session wrote and never pushed."""
    await workspaces.refresh(REPO, url, token)
    workspace = await workspaces.create(REPO, key=key, branch=BRANCH, base="main")
    clone = workspace.clone
    (clone / "work.txt").write_text("the session's work\n")
    git("add", "work.txt", cwd=clone)
    git("commit", "-q", "-m", "work", cwd=clone)
    (clone / "left.txt").write_text("left behind\n")
    hook = clone / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho owned > /tmp/owned\n")
    hook.chmod(0o755)
    git("config", "--local", "ballet.left", "yes", cwd=clone)
    git("branch", "junk", cwd=clone)
    git("tag", "junk-tag", cwd=clone)
    (clone / "blob.txt").write_text("a dangling secret\n")
    dangling = git("hash-object", "-w", "blob.txt", cwd=clone)
    (clone / "blob.txt").unlink()
    await push_ticket_branch(workspaces, workspace, url=url, base="main", token=token)
    # As the session job does: prepared at once, while the mirror may still be taking
    # the pushed commits, and the workspace removed after.
    workspaces.prepare(REPO, branch=BRANCH, base="main")
    await workspaces.prepared.made()  # as it is, long before the next session's fetch
    await workspaces.remove(workspace)
    return workspace, dangling


def _view(clone: Path) -> dict[str, object]:
    """What a session sees of its clone besides its files' contents."""
    hooks = clone / ".git" / "hooks"
    return {
        "head": git("rev-parse", "HEAD", cwd=clone),
        "branch": git("symbolic-ref", "HEAD", cwd=clone),
        "refs": git("for-each-ref", "--format=%(refname) %(objectname)", cwd=clone),
        "config": git("config", "--local", "--list", cwd=clone),
        "status": git("status", "--porcelain", "--ignored", cwd=clone),
        "files": sorted(
            str(p.relative_to(clone)) for p in clone.rglob("*") if ".git" not in p.parts
        ),
        "hooks": sorted(p.name for p in hooks.iterdir()) if hooks.is_dir() else [],
        "objects": sorted(
            str(p.relative_to(clone)) for p in (clone / ".git" / "objects").rglob("*")
        ),
    }


def test_a_prepared_clone_is_taken_and_carries_nothing_of_the_session_before(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        _, dangling = await _session_ends(workspaces, origin.as_uri(), None)
        await workspaces.refresh(REPO, origin.as_uri(), None)  # the next session's fetch
        taken = await workspaces.create(REPO, key="s2", branch=BRANCH, base="main")
        assert taken.prepared
        # The very clone a fresh one is: another process's Workspaces has none prepared.
        fresh = await Workspaces(tmp_path / "ws").create(REPO, key="s3", branch=BRANCH, base="main")
        assert not fresh.prepared
        seen = _view(taken.clone)
        assert seen == _view(fresh.clone)
        assert seen["head"] == git("rev-parse", BRANCH, cwd=origin)
        assert seen["files"] == ["README.md", "work.txt"]
        assert "ballet.left" not in str(seen["config"])
        assert "junk" not in str(seen["refs"])
        assert all(name.endswith(".sample") for name in seen["hooks"])  # type: ignore[attr-defined]
        assert taken.start_sha == seen["head"] and taken.branch_existed
        for where in (taken.clone, taken.mirror):
            missing = git_code("cat-file", "-e", dangling, cwd=where)
            assert missing != 0, f"the session's unpushed object is in {where}"
        # Taken: nothing of it is left where it was prepared, nor its lease.
        assert not any((tmp_path / "ws" / "prepared").rglob("repo"))
        leases = sorted(p.name for p in (taken.mirror / "ballet-leases").iterdir())
        assert all(not name.startswith("prepared-") for name in leases)

    asyncio.run(scenario())


def test_a_workspace_removed_at_once_after_its_push_leaves_the_mirror_its_commits(
    tmp_path: Path,
) -> None:
    # The mirror takes the pushed commits from the clone's objects beside the
    # result's delivery: the workspace's removal waits for that.
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        url = origin.as_uri()
        await workspaces.refresh(REPO, url, None)
        workspace = await workspaces.create(REPO, key="s1", branch=BRANCH, base="main")
        for n in range(20):  # enough objects that the mirror's push takes a while
            (workspace.clone / f"f{n}.txt").write_text(f"{n}\n" * 1000)
        git("add", ".", cwd=workspace.clone)
        git("commit", "-q", "-m", "work", cwd=workspace.clone)
        sha = await push_ticket_branch(workspaces, workspace, url=url, base="main", token=None)
        await workspaces.remove(workspace)
        assert not workspace.root.exists()
        assert git("rev-parse", f"refs/heads/{BRANCH}", cwd=workspace.mirror) == sha
        assert git_code("fsck", "--connectivity-only", "--no-dangling", cwd=workspace.mirror) == 0
        assert workspaces.giving == {}

    asyncio.run(scenario())


def git_code(*args: str, cwd: Path) -> int:
    try:
        git(*args, cwd=cwd)
    except Exception:
        return 1
    return 0


def test_a_branch_moved_on_github_is_seen_not_the_prepared_head(tmp_path: Path) -> None:
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        await _session_ends(workspaces, origin.as_uri(), None)
        person = tmp_path / "person"
        git("clone", "-q", "-b", BRANCH, origin.as_uri(), str(person))
        (person / "fix.txt").write_text("a person's fix\n")
        git("add", "fix.txt", cwd=person)
        git("commit", "-q", "-m", "fix", cwd=person)
        git("push", "-q", "origin", BRANCH, cwd=person)
        await workspaces.refresh(REPO, origin.as_uri(), None)
        taken = await workspaces.create(REPO, key="s2", branch=BRANCH, base="main")
        assert not taken.prepared
        assert taken.start_sha == git("rev-parse", "HEAD", cwd=person)
        assert (taken.clone / "fix.txt").exists()

    asyncio.run(scenario())


def test_a_base_moved_on_github_is_seen_not_the_prepared_one(tmp_path: Path) -> None:
    # The branch did not move, but the clone's origin/main would be stale.
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        await _session_ends(workspaces, origin.as_uri(), None)
        person = tmp_path / "person"
        git("clone", "-q", origin.as_uri(), str(person))
        (person / "README.md").write_text("# moved\n")
        git("commit", "-q", "-am", "moved", cwd=person)
        git("push", "-q", "origin", "main", cwd=person)
        await workspaces.refresh(REPO, origin.as_uri(), None)
        taken = await workspaces.create(REPO, key="s2", branch=BRANCH, base="main")
        assert not taken.prepared
        moved = git("rev-parse", "HEAD", cwd=person)
        assert git("rev-parse", "origin/main", cwd=taken.clone) == moved

    asyncio.run(scenario())


def test_over_git_http_a_person_s_push_after_the_preparation_wins(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url = f"{sandbox.api_url}/{REPO}.git"
    person = tmp_path / "person"

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        await _session_ends(workspaces, url, USER)
        # First, nothing moved: the next session takes the prepared clone.
        await workspaces.refresh(REPO, url, USER)
        taken = await workspaces.create(REPO, key="s2", branch=BRANCH, base="main")
        assert taken.prepared
        await workspaces.remove(taken)
        workspaces.prepare(REPO, branch=BRANCH, base="main")
        await workspaces.prepared.made()
        # Then a person pushes to the branch on GitHub before the next session.
        authed = url.replace("://", f"://x:{USER}@")
        git("clone", "-q", "-b", BRANCH, authed, str(person))
        (person / "fix.txt").write_text("a person's fix\n")
        git("add", "fix.txt", cwd=person)
        git("commit", "-q", "-m", "fix", cwd=person)
        git("push", "-q", "origin", BRANCH, cwd=person)
        await workspaces.refresh(REPO, url, USER)
        again = await workspaces.create(REPO, key="s3", branch=BRANCH, base="main")
        assert not again.prepared
        assert again.start_sha == git("rev-parse", "HEAD", cwd=person)
        assert (again.clone / "fix.txt").read_text() == "a person's fix\n"

    asyncio.run(scenario())


def test_no_session_is_given_a_path_to_prepared_clones(tmp_path: Path) -> None:
    # They live under the workspaces root, which every session's confinement hides
    # whole (confine/session.py: hidden=(workspaces_root, ...)); never under the
    # mirror's objects, the one part of it a session reads.
    workspaces = Workspaces(tmp_path / "ws")
    assert workspaces.prepared.root.is_relative_to(workspaces.root)
    assert not workspaces.prepared.root.is_relative_to(workspaces.root / "mirrors")
    assert workspaces.prepared.root.name == str(os.getpid())


@pytest.mark.parametrize("disk", [None, 8 << 20], ids=["directory", "own-disk"])
def test_a_worker_stopping_leaves_no_prepared_clone_behind(
    tmp_path: Path, disk: int | None
) -> None:
    # Stopped while one clone is being made and another, just replaced, is being
    # removed: nothing of either may stay, least of all a mounted disk, which
    # outlives the worker and keeps its directory busy.
    if disk is not None and not can_mount():
        pytest.skip("this machine cannot mount a session's disk (needs root)")
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})

    async def scenario() -> None:
        workspaces = Workspaces(tmp_path / "ws")
        await workspaces.refresh(REPO, origin.as_uri(), None)
        workspaces.prepare(REPO, branch=BRANCH, base="main", disk=disk)
        await workspaces.prepared.made()
        workspaces.prepare(REPO, branch=BRANCH, base="main", disk=disk)  # replaces it
        root = workspaces.prepared.root
        # The worker stops while the second is being cloned (its directory made, and
        # its disk mounted, before git clones into it): a cancelled clone left both.
        async with asyncio.timeout(30):
            while not any(p.name.endswith("-2") for p in root.iterdir()):
                await asyncio.sleep(0.001)
        await workspaces.prepared.aclose()
        assert not root.exists() or list(root.iterdir()) == []
        assert not [m.point for m in mounts() if m.point.is_relative_to(tmp_path)]
        leases = workspaces.mirror_path(REPO) / "ballet-leases"
        assert not [p.name for p in leases.iterdir() if p.name.startswith("prepared-")]
        workspaces.prepare(REPO, branch=BRANCH, base="main", disk=disk)  # stopped: none
        await workspaces.prepared.made()
        assert not root.exists() or list(root.iterdir()) == []

    asyncio.run(scenario())
