"""Pushing a session's commits: the ticket branch only, never forced (but for an
integrator told to rebase, whose push is leased on the head its session started
from), never through anything the session wrote that git would execute or follow.

Everything in the clone is the agent's to write: `.git/config` (an `insteadOf`,
an fsmonitor command), hooks, symbolic links, alternates. So no git command
runs in the clone after the session. Ballet reads the branch's commit from the
ref file itself, checks that the object store holds no links out of it, drops
its alternates (the mirror's objects are the primary store of the command
anyway), and runs `git push` in the mirror, with the clone's objects added
for that one command (GIT_ALTERNATE_OBJECT_DIRECTORIES): nothing is copied
into the mirror other sessions share, and only `<sha>:refs/heads/<branch>`
is pushed. Other branches and tags the agent made are never pushed.

The push names the repository's URL, not the mirror's `origin`: a push to a
remote moves the ref its fetch refspec maps the pushed one to, which in a
mirror is `refs/heads/<branch>` itself, and the mirror would name a commit
whose objects only the (soon removed) clone holds. Once GitHub has taken the
push, the mirror is given the same commits and head, so the ticket's next
session finds nothing to fetch and may take a clone prepared ahead
(prepared.py): from a pack made and checked aside while GitHub took the push
(incoming.py), else by a push to itself from the same objects
(mirror.take_pushed). That runs beside the session's result going out, under
the mirror's lock taken before the push returns; the workspace is removed only
once it ends.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from pathlib import Path

import structlog

from ballet.sessionlog.redact import Redactor
from ballet.sessions.artefacts import commit_files
from ballet.sessions.git import GitError, run_git
from ballet.sessions.git_auth import auth_environment
from ballet.sessions.incoming import Incoming
from ballet.sessions.mirror import locked, take_pushed
from ballet.sessions.secrets_scan import find_secret
from ballet.sessions.workspace import Workspace, Workspaces

log = structlog.get_logger("ballet.sessions.push")

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


class PushError(Exception):
    """The ticket branch was not pushed; the message says why and what to do."""


class SecretInPush(PushError):
    """The commits carry a declared secret's value: nothing was pushed."""

    def __init__(self, variable: str, where: str) -> None:
        self.variable = variable
        self.where = where
        super().__init__(
            f"the value of {variable} is in {where}; Ballet pushed nothing and the"
            " session's commits are discarded (a secret given to a session must never be"
            " committed)"
        )


async def push_ticket_branch(
    workspaces: Workspaces,
    workspace: Workspace,
    *,
    url: str,
    base: str,
    token: str | None,
    redactor: Redactor | None = None,
    artefacts: Mapping[str, bytes | None] | None = None,
    rewrite: bool = False,
) -> str:
    """Push the clone's ticket branch if it moved; returns its head commit. With a
    `redactor`, the commits new to the branch are searched for its secrets first
    (secrets_scan.py) and a branch that carries one is not pushed (SecretInPush).
    `artefacts`: files Ballet writes (or removes, None) in a commit of its own on top
    of the session's (artefacts.py). `rewrite`: the branch may have been rebased; the
    push replaces it only if GitHub's head is still the one the session started from."""
    branch = workspace.branch
    if branch == base:
        raise PushError(
            f"refusing to push to the base branch {base!r}: Ballet pushes ticket branches only"
        )
    objects = checked_objects(workspace.clone)
    sha = branch_commit(workspace.clone, branch)
    mirror = workspace.mirror
    if artefacts:
        try:
            sha = await commit_files(
                mirror, objects, sha, artefacts, message="Ballet: phase handoffs",
                identity=workspaces.identity, env=workspaces.git_env,
            )  # fmt: skip
        except GitError as error:
            raise PushError(f"the phase's handoff could not be committed: {error}") from error
    if sha == workspace.start_sha:
        return sha
    env = {**workspaces.git_env, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}
    code, _, _ = await run_git(
        "cat-file", "-e", f"{sha}^{{commit}}", cwd=mirror, env=env, check=False
    )
    if code != 0:
        raise PushError(f"the branch {branch!r} names {sha}, which is not a commit of the clone")
    if redactor is not None:
        found = await find_secret(mirror, env, workspace.start_sha, sha, redactor)
        if found is not None:
            raise SecretInPush(found.variable, found.where)
    # What the mirror will take once GitHub has the push, received aside meanwhile.
    incoming = Incoming(mirror, env, workspaces.git_env, sha, workspace.start_sha)
    try:
        lease = [f"--force-with-lease=refs/heads/{branch}:{workspace.start_sha}"] if rewrite else []
        await run_git(
            "push", "--quiet", "--no-verify", *lease, url, f"{sha}:refs/heads/{branch}",
            cwd=mirror, env=auth_environment(env, token),
        )  # fmt: skip
    except BaseException as error:
        await incoming.discard()
        if not isinstance(error, GitError):
            raise
        hint = (
            "the branch moved on GitHub during the session (someone else pushed); "
            "retry the stage so it starts from the new head"
            if "rejected" in error.stderr or "fetch first" in error.stderr
            else "check the App's permission to push to the repository"
        )
        raise PushError(f"{error}; {hint}") from error
    # The mirror is given the pushed commits while the session's result goes out: its
    # lock is taken first, so whatever reads the mirror next (the clone prepared
    # ahead, the next session's refresh) waits for them; the workspace, whose objects
    # are lent to it, is removed only after it (Workspaces.giving).
    holding = asyncio.Event()
    giving = asyncio.create_task(
        _give(mirror, workspaces.git_env, objects, sha, branch, holding, incoming)
    )
    workspaces.giving[workspace.root] = giving
    await holding.wait()
    return sha


async def _give(
    mirror: Path,
    env: dict[str, str],
    objects: Path,
    sha: str,
    branch: str,
    holding: asyncio.Event,
    incoming: Incoming,
) -> None:
    try:
        async with locked(mirror):
            holding.set()
            try:
                taken = await incoming.move_in(branch)
            except (GitError, OSError) as error:
                log.info("pushed commits received aside not taken", error=str(error))
                taken = False
            if not taken:
                await take_pushed(mirror, env, objects, sha, branch)
    except (GitError, OSError) as error:
        # GitHub has the branch: the mirror's next fetch brings it, as before.
        log.warning("the mirror did not take the pushed head", branch=branch, error=str(error))
    finally:
        holding.set()
        await incoming.discard()


def checked_objects(clone: Path) -> Path:
    """The clone's object directory, once it is known to hold only its own files:
    no symbolic link anywhere in it (one could lend the push another repository's
    objects) and no alternates of the session's choosing."""
    git_dir, objects = clone / ".git", clone / ".git" / "objects"
    for path in (git_dir, objects):
        if path.is_symlink() or not path.is_dir():
            raise PushError(f"{path.relative_to(clone)} is not a directory of the clone's own")
    for directory, dirs, files in os.walk(objects):
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(directory, name)):
                raise PushError(
                    "the session left a symbolic link in .git/objects; nothing was pushed"
                )
    (objects / "info" / "alternates").unlink(missing_ok=True)
    return objects


def branch_commit(clone: Path, branch: str) -> str:
    """The commit `refs/heads/<branch>` names, read from the files (loose, then packed)."""
    git_dir = clone / ".git"
    if (git_dir / "reftable").exists():
        raise PushError("the session switched the clone to reftable refs; nothing was pushed")
    loose = git_dir / "refs" / "heads" / branch
    if _regular(loose, git_dir):
        value = loose.read_text(errors="replace").strip()
        if _SHA.match(value):
            return value
        raise PushError(
            f"the branch {branch!r} is not a plain commit reference; nothing was pushed"
        )
    packed = git_dir / "packed-refs"
    if _regular(packed, git_dir):
        for line in packed.read_text(errors="replace").splitlines():
            sha, _, ref = line.partition(" ")
            if ref == f"refs/heads/{branch}" and _SHA.match(sha):
                return sha
    raise PushError(f"the session deleted its branch {branch!r}; nothing was pushed")


def _regular(path: Path, git_dir: Path) -> bool:
    """A regular file reached through no symbolic link below `.git`."""
    current = path
    while current != git_dir:
        if current.is_symlink():
            return False
        current = current.parent
    return path.is_file()
