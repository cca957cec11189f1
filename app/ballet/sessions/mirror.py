"""The worker's bare mirror of a repository: its lock, its heads, and the commits
Ballet itself adds to it (a session's pushed head).

The mirror is the worker's alone: sessions never see its directory, only (read
only) its objects, which their clones borrow. So what Ballet writes into it is
only what GitHub holds too: the commits it has just pushed there.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from ballet.sessions.git import run_git
from ballet.sessions.incoming import INCOMING
from ballet.sessions.leftovers import remove_tree

# The mirror's own settings, after those `git init --bare` writes. The origin's URL
# is set by each refresh (never with credentials: see workspace._refuse_credentials).
MIRROR_CONFIG_TEXT = """\
[remote "origin"]
\turl = unset
\tfetch = +refs/heads/*:refs/heads/*
\tfetch = +refs/tags/*:refs/tags/*
[gc]
\tauto = 0
\tpruneExpire = never
[maintenance]
\tauto = false
[fetch]
\tprune = true
"""


@contextlib.asynccontextmanager
async def locked(mirror: Path) -> AsyncIterator[None]:
    """The mirror's flock: serialises fetches, lease-taking, gc and Ballet's own writes."""
    mirror.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(mirror.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:  # free, as it usually is: taken here, without a thread's round trip
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


async def mirror_heads(
    mirror: Path, branches: tuple[str, ...], env: Mapping[str, str]
) -> dict[str, str]:
    """The commit of each of `branches` in the mirror, in one git process (which also
    gives the start commit: no `rev-parse HEAD` after the checkout)."""
    refs = [f"refs/heads/{branch}" for branch in branches]
    _, out, _ = await run_git(
        "for-each-ref", "--format=%(objectname) %(refname)", *refs, cwd=mirror, env=env
    )
    # A pattern also matches refs below it (main/x): keep exact names only.
    found: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition(" ")
        found[ref] = sha
    return {branch: found[ref] for branch, ref in zip(branches, refs, strict=True) if ref in found}


async def all_refs(mirror: Path, env: Mapping[str, str]) -> str:
    """Every ref of the mirror and its commit: what a clone of it copies as `origin/*`.
    Two equal answers mean a clone made at either time is the same clone."""
    _, out, _ = await run_git(
        "for-each-ref", "--format=%(objectname) %(refname)", cwd=mirror, env=env
    )
    return out


def refs_by_name(for_each_ref: str) -> dict[str, str]:
    """`all_refs`'s output as a map of ref name to id."""
    refs: dict[str, str] = {}
    for line in for_each_ref.splitlines():
        oid, _, refname = line.partition(" ")
        refs[refname] = oid
    return refs


async def take_pushed(
    mirror: Path, env: Mapping[str, str], objects: Path, sha: str, branch: str
) -> None:
    """The mirror's `branch` set to `sha`, just pushed to GitHub, with the objects GitHub
    got: the next session's fetch then has nothing to transfer.

    A push from the mirror to itself, with the clone's objects lent to the sending
    side alone (GIT_ALTERNATE_OBJECT_DIRECTORIES; git drops it for the receiving
    side, a local receive-pack): only what `sha` reaches and the mirror lacks is
    sent, as GitHub's receive-pack got it; nothing else of the clone (its other
    objects, refs, config, hooks) is read. The caller holds the mirror's lock."""
    sending = {**env, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}
    await run_git(
        "push", "--quiet", "--force", "--no-verify", str(mirror), f"{sha}:refs/heads/{branch}",
        cwd=mirror, env=sending,
    )  # fmt: skip


async def init_mirror(mirror: Path, env: Mapping[str, str]) -> None:
    """A new bare mirror at `mirror`, made aside and renamed into place."""
    partial = mirror.with_name(mirror.name + ".partial")
    if partial.exists():
        await asyncio.to_thread(shutil.rmtree, partial)
    await run_git("init", "--quiet", "--bare", str(partial), cwd=None, env=env)
    # Appended to the file `git init` wrote, rather than a `git config` process per
    # setting (eight of them in a row, the first session of a repository waited for).
    with (partial / "config").open("a") as config:
        config.write(MIRROR_CONFIG_TEXT)
    partial.rename(mirror)


async def gc_mirror(mirror: Path, env: Mapping[str, str]) -> bool:
    """Garbage-collect the mirror if no clone holds a lease; True when it ran."""
    async with locked(mirror):
        leases = mirror / "ballet-leases"
        for lease in leases.iterdir() if leases.is_dir() else ():
            if Path(lease.read_text()).exists():
                return False
            lease.unlink()  # its workspace is gone (a crashed worker)
        await run_git("-c", "gc.pruneExpire=now", "gc", "--quiet", cwd=mirror, env=env)
        # Packs received aside for pushes (incoming.py) a dead worker left: no push is
        # under way without a workspace, whose lease would have held gc off.
        await asyncio.to_thread(remove_tree, mirror / INCOMING)
    return True
