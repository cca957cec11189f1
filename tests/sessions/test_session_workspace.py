"""Workspaces: shared objects, the ticket branch, identity, leases, and no token on disk."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ballet.sessions import GitIdentity, WorkspaceError, Workspaces
from ballet.sessions.confine.bwrap import readonly_roots
from git_repos import git, make_origin

TOKEN = "ghs_installation_token_never_on_disk"


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_workspace_borrows_the_mirror_objects_instead_of_copying_them(tmp_path: Path) -> None:
    files = {f"pkg{i // 100}/mod{i}.py": f"VALUE = {i}\n" for i in range(3000)}
    origin = make_origin(tmp_path, files)
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        mirror = await workspaces.refresh("octo/big", origin.as_uri(), None)
        async with workspaces.session(
            "octo/big", key="k1", branch="ballet/1-x", base="main"
        ) as workspace:
            objects = workspace.clone / ".git" / "objects"
            alternates = (objects / "info" / "alternates").read_text().strip()
            assert Path(alternates) == mirror / "objects"
            assert not list((objects / "pack").glob("*.pack"))
            loose = [p for p in objects.glob("??/*")]
            assert loose == []
            assert (workspace.clone / "pkg29" / "mod2999.py").read_text() == "VALUE = 2999\n"
            assert len(git("ls-files", cwd=workspace.clone).splitlines()) == 3000

    asyncio.run(scenario())


def test_the_ticket_branch_is_made_from_the_base_with_a_local_identity(
    origin: Path, tmp_path: Path
) -> None:
    workspaces = Workspaces(tmp_path / "ws", identity=GitIdentity("Ballet Bot", "bot@example.com"))

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        workspace = await workspaces.create("octo/demo", key="k", branch="ballet/7-x", base="main")
        clone = workspace.clone
        assert git("symbolic-ref", "HEAD", cwd=clone) == "refs/heads/ballet/7-x"
        assert workspace.start_sha == git("rev-parse", "main", cwd=origin)
        assert not workspace.branch_existed
        assert git("config", "--local", "user.name", cwd=clone) == "Ballet Bot"
        assert git("config", "--local", "user.email", cwd=clone) == "bot@example.com"
        assert list(workspace.home.iterdir()) == []
        assert not workspace.files.is_relative_to(clone)
        assert workspace.lease.exists()
        await workspaces.remove(workspace)
        assert not workspace.root.exists()
        assert not workspace.lease.exists()

    asyncio.run(scenario())


def test_an_existing_ticket_branch_is_checked_out_at_its_head(tmp_path: Path) -> None:
    origin = make_origin(tmp_path, {"a.txt": "a\n"}, branches=("ballet/7-x",))
    work = tmp_path / "pusher"
    git("clone", "-q", "-b", "ballet/7-x", origin.as_uri(), str(work))
    (work / "b.txt").write_text("b\n")
    git("add", "b.txt", cwd=work)
    git("commit", "-q", "-m", "more", cwd=work)
    git("push", "-q", "origin", "ballet/7-x", cwd=work)
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        async with workspaces.session(
            "octo/demo", key="k", branch="ballet/7-x", base="main"
        ) as workspace:
            assert workspace.branch_existed
            assert workspace.start_sha == git("rev-parse", "HEAD", cwd=work)
            assert (workspace.clone / "b.txt").exists()

    asyncio.run(scenario())


def test_a_refresh_fetches_new_commits_incrementally(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")
    work = tmp_path / "pusher"
    git("clone", "-q", origin.as_uri(), str(work))

    async def scenario() -> None:
        mirror = await workspaces.refresh("octo/demo", origin.as_uri(), None)
        (work / "new.txt").write_text("new\n")
        git("add", "new.txt", cwd=work)
        git("commit", "-q", "-m", "new", cwd=work)
        git("push", "-q", "origin", "main", cwd=work)
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        assert git("rev-parse", "main", cwd=mirror) == git("rev-parse", "HEAD", cwd=work)

    asyncio.run(scenario())


def test_a_missing_base_branch_is_a_clear_error(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        with pytest.raises(WorkspaceError, match="base branch 'develop'"):
            await workspaces.create("octo/demo", key="k", branch="ballet/7-x", base="develop")
        assert not list((tmp_path / "ws" / "sessions").iterdir())

    asyncio.run(scenario())


def test_clone_urls_with_credentials_are_refused(tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")
    with pytest.raises(WorkspaceError, match="carries credentials"):
        asyncio.run(
            workspaces.refresh("octo/demo", "https://x-access-token:abc@github.com/o/d.git", None)
        )


def test_gc_waits_while_a_clone_holds_a_lease(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        workspace = await workspaces.create("octo/demo", key="k", branch="b", base="main")
        assert await workspaces.gc("octo/demo") is False
        await workspaces.remove(workspace)
        assert await workspaces.gc("octo/demo") is True

    asyncio.run(scenario())


def test_the_mirror_never_collects_garbage_on_its_own(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")
    mirror = asyncio.run(workspaces.refresh("octo/demo", origin.as_uri(), None))
    assert git("config", "gc.auto", cwd=mirror) == "0"
    assert git("config", "gc.pruneExpire", cwd=mirror) == "never"


def test_the_token_never_lands_in_a_file(origin: Path, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    workspaces = Workspaces(root)

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), TOKEN)
        await workspaces.refresh("octo/demo", origin.as_uri(), TOKEN)
        workspace = await workspaces.create("octo/demo", key="k", branch="b", base="main")
        assert not files_containing(root, TOKEN.encode())
        await workspaces.remove(workspace)

    asyncio.run(scenario())


def test_a_lease_whose_workspace_vanished_does_not_block_gc(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        workspace = await workspaces.create("octo/demo", key="k", branch="b", base="main")
        shutil.rmtree(workspace.root)  # a worker crashed and its disk was cleaned
        assert await workspaces.gc("octo/demo") is True
        assert not workspace.lease.exists()

    asyncio.run(scenario())


def test_a_workspace_left_by_a_crash_is_replaced(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        first = await workspaces.create("octo/demo", key="k", branch="b", base="main")
        (first.clone / "leftover.txt").write_text("from the crashed run")
        second = await workspaces.create("octo/demo", key="k", branch="b", base="main")
        assert not (second.clone / "leftover.txt").exists()
        await workspaces.remove(second)

    asyncio.run(scenario())


def test_repository_names_cannot_escape_the_cache(tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")
    for bad in ("octo/..", "../x", "octo", "a/b/c"):
        with pytest.raises(WorkspaceError, match="owner/name"):
            workspaces.mirror_path(bad)


def test_an_invalid_branch_name_is_refused(origin: Path, tmp_path: Path) -> None:
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        with pytest.raises(WorkspaceError, match="not a valid branch name"):
            await workspaces.create("octo/demo", key="k", branch="bad..name", base="main")

    asyncio.run(scenario())


def test_a_branch_below_the_ticket_branch_name_is_not_the_ticket_branch(tmp_path: Path) -> None:
    origin = make_origin(tmp_path, {"a.txt": "a\n"}, branches=("ballet/7-x",))
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        async with workspaces.session("octo/demo", key="k", branch="ballet", base="main") as ws:
            assert not ws.branch_existed
            assert git("symbolic-ref", "HEAD", cwd=ws.clone) == "refs/heads/ballet"
            assert ws.start_sha == git("rev-parse", "main", cwd=origin)

    asyncio.run(scenario())


def test_keys_that_read_alike_get_workspaces_of_their_own(origin: Path, tmp_path: Path) -> None:
    # Made safe for a path, both keys read `o_a_b_1`: without the key's digest in the
    # name, the second session's create() removed the first one's live clone.
    workspaces = Workspaces(tmp_path / "ws")

    async def scenario() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        first = await workspaces.create("octo/demo", key="o/a_b#1", branch=None, base="main")
        second = await workspaces.create("octo/demo", key="o/a#b_1", branch=None, base="main")
        assert first.root != second.root
        assert (first.clone / "README.md").exists() and (second.clone / "README.md").exists()

    asyncio.run(scenario())


REMOVE = """
import sys
import tempfile
from pathlib import Path
from ballet.sessions.leftovers import remove_tree
remove_tree(Path(sys.argv[1]))
"""


def test_a_directory_the_session_made_unreadable_is_removed_all_the_same() -> None:
    # A worker that is not root cannot list a `chmod 000` directory: rmtree alone left
    # it, and what it held, on the workspaces volume for good. Root reads any directory,
    # so as root the removal runs as an unprivileged user, in a directory it can reach.
    as_root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="ballet-remove-"))
    try:
        base.chmod(0o755)
        root = base / "sessions" / "k"
        stash = root / "home" / "stash"
        (stash / "deeper").mkdir(parents=True)
        (stash / "deeper" / "blob").write_bytes(b"x" * 1024)
        outside = base / "outside"
        outside.mkdir()
        (outside / "keep.txt").write_text("not the session's")
        (root / "home" / "link").symlink_to(outside)
        command = [sys.executable, "-c", REMOVE, str(root)]
        if as_root:
            for path in (base / "sessions", *base.joinpath("sessions").rglob("*")):
                os.chown(path, 65534, 65534, follow_symlinks=False)
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        (stash / "deeper").chmod(0)
        stash.chmod(0)
        subprocess.run(command, check=True, env={**os.environ, "HOME": str(base)})
        assert not root.exists()
        assert (outside / "keep.txt").read_text() == "not the session's"
    finally:
        for path in base.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o700)
        shutil.rmtree(base)


def test_a_read_only_path_reached_through_a_link_shows_no_secret(tmp_path: Path) -> None:
    # /srv/current -> /srv/release, the data dir in /srv/current/data: the link must not
    # pass for a directory free of secrets.
    release = tmp_path / "release"
    (release / "data").mkdir(parents=True)
    (release / "bin").mkdir()
    current = tmp_path / "current"
    current.symlink_to(release)
    roots = readonly_roots([current, current / "bin"], hidden=[(release / "data").resolve()])
    assert current not in roots and release.resolve() not in roots
    assert current / "bin" in roots  # bound by the name PATH gives it
