"""Clones prepared ahead: the next session's clone, made while the ticket's engine,
GitHub writes and session job run, instead of after them.

When a session of a ticket ends (its branch pushed, and the mirror given the
pushed commits: mirror.take_pushed), its worker makes a clone of the same branch
from the mirror at once, exactly as `Workspaces.create` would make it, and keeps
it where no session can reach it:

    prepared/<pid>/<name>/repo       under the workspaces root, which every
                                     session's confinement hides whole
    mirrors/<owner>/<name>.git/ballet-leases/prepared-<pid>-<name>   its lease (no gc under it)

The next session of that branch on this worker claims it (a rename into its own
directory) only if the refs it was made from, every one of them, are GitHub's
heads and tags as asked after the session was decided (`Workspaces.take_prepared`,
with no fetch and no wait for the mirror's lock), or else the mirror's after the
session's own fetch: a clone copies all of them (as `origin/*`) and checks out
the branch's head, so equal refs mean it is the very clone a fresh one would be.
A branch a person pushed to meanwhile, a base that moved, a new tag: the refs
differ, the prepared clone is thrown away and a fresh one made. Nothing of the
previous session is in it: it is cloned from the mirror after that session's
processes are gone, and the mirror holds only what GitHub holds (the session's
pushed commits, never its clone's other objects, refs, config or hooks).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from ballet.sessions.cloning import Cloned
from ballet.sessions.disk import mount_limited
from ballet.sessions.leftovers import remove_dir, remove_stale, remove_tree
from ballet.sessions.mirror import all_refs, locked, refs_by_name

log = structlog.get_logger("ballet.sessions.prepared")

# Clones kept ready per worker process; the oldest goes first (a ticket that ended).
KEEP = 8
# A clone not claimed this long is stale anyway (its ticket waits for a person).
MAX_AGE_SECONDS = 600.0


@dataclass(frozen=True)
class Prepared:
    root: Path  # prepared/<pid>/<name>: holds the clone, `repo`
    lease: Path
    cloned: Cloned  # what was checked out, and the mirror's refs it was made from
    made: float  # time.monotonic()
    disk: int | None  # the size of the disk (a tmpfs at `root`) it was made on; None: none

    @property
    def clone(self) -> Path:
        return self.root / "repo"


# Makes the clone at `clone` from `mirror` (cloning.clone_branch).
CloneMaker = Callable[[Path, Path], Awaitable[Cloned]]


class PreparedClones:
    def __init__(self, root: Path) -> None:
        # One directory per process: another worker's clones are never touched
        # (a dead one's are swept: `sweep`).
        self.root = root / "prepared" / str(os.getpid())
        self._ready: dict[tuple[Path, str], Prepared] = {}
        self._making: dict[tuple[Path, str], asyncio.Task[Prepared | None]] = {}
        self._count = 0  # each clone its own directory: a replaced one is removed apart
        self._closed = False  # the worker stops: a session ending now prepares nothing
        # Replaced clones being removed: held, so none is collected mid-removal, and
        # awaited as the worker stops, so none is left (or left mounted) behind it.
        self._discarding: set[asyncio.Task[None]] = set()

    def sweep(self) -> None:
        """Remove the clones dead worker processes prepared (their leases then hold
        nothing, and gc drops them)."""
        parent = self.root.parent
        remove_stale(parent)  # their disks first: a mount outlives its worker
        for entry in parent.iterdir() if parent.is_dir() else ():
            if entry != self.root and not _alive(entry.name):
                remove_tree(entry)

    def start(
        self,
        mirror: Path,
        branch: str,
        name: str,
        make: CloneMaker,
        env: dict[str, str],
        disk: int | None = None,
    ) -> None:
        """Begin preparing `branch`'s clone; an earlier one of it is replaced."""
        if self._closed:
            return
        key = (mirror, branch)
        self._count += 1
        name = f"{name}-{self._count}"
        task = asyncio.create_task(self._make(mirror, key, name, make, env, disk))
        self._making[key] = task
        task.add_done_callback(lambda done: self._made(key, done))

    def holds(self, mirror: Path, branch: str) -> bool:
        """Whether a clone of `branch` is prepared, or being prepared."""
        return (mirror, branch) in self._ready or (mirror, branch) in self._making

    async def claim(
        self,
        mirror: Path,
        branch: str,
        env: dict[str, str],
        disk: int | None = None,
        github_refs: Mapping[str, str] | None = None,
    ) -> Prepared | None:
        """The clone prepared of `branch`, if it is still what a fresh clone would be:
        made from the mirror's refs as they are now or, given `github_refs` (GitHub's
        heads and tags, asked after the session was decided), from exactly those. The
        caller moves `clone` away and then calls `release`."""
        key = (mirror, branch)
        making = self._making.get(key)
        if making is not None:
            await asyncio.wait([making])  # it is the one to take: made moments ago
        prepared = self._ready.pop(key, None)
        if prepared is None:
            return None
        try:
            if github_refs is None:
                async with locked(mirror):
                    fresh = await all_refs(mirror, env) == prepared.cloned.refs
            else:  # every ref the clone copied, none more or less: nothing to read here
                fresh = refs_by_name(prepared.cloned.refs) == github_refs
        except BaseException:
            # No longer among the ready ones, which `aclose` removes: removed here or
            # never (its session cancelled as its workspace was being made).
            await self.release(prepared)
            raise
        young = time.monotonic() - prepared.made < MAX_AGE_SECONDS
        if fresh and young and prepared.disk == disk:
            return prepared
        log.info("prepared clone not taken", branch=branch, fresh=fresh, young=young)
        await self.release(prepared)
        return None

    async def drop(self, mirror: Path, branch: str) -> None:
        """No session is about to take `branch`'s clone (its ticket ended, or waits
        for a person): it is not kept on the worker's disk."""
        key = (mirror, branch)
        making = self._making.get(key)
        if making is not None:
            await asyncio.wait([making])
        prepared = self._ready.pop(key, None)
        if prepared is not None:
            await self.release(prepared)

    async def release(self, prepared: Prepared) -> None:
        try:
            await remove_dir(prepared.root)
        finally:
            prepared.lease.unlink(missing_ok=True)

    async def _make(
        self,
        mirror: Path,
        key: tuple[Path, str],
        name: str,
        make: CloneMaker,
        env: dict[str, str],
        disk: int | None,
    ) -> Prepared | None:
        root = self.root / name
        lease = mirror / "ballet-leases" / f"prepared-{os.getpid()}-{name}"
        try:
            async with locked(mirror):
                lease.parent.mkdir(exist_ok=True)
                lease.write_text(str(root))
                root.mkdir(parents=True)
                if disk is not None:  # the session's own disk, made ahead with its clone
                    mount_limited(root, disk)
                # Under the lock, so no fetch moves a ref between the clone and its refs.
                made = await make(mirror, root / "repo")
        except BaseException as exc:
            # Cancelled as well as failed: the loop's end cancels a clone still being
            # made, and its disk would outlive the worker. (After the mirror's lock.)
            try:
                await remove_dir(root)
            finally:
                lease.unlink(missing_ok=True)
            if not isinstance(exc, Exception):
                raise
            log.info("no clone prepared", branch=key[1], error=repr(exc))
            return None
        return Prepared(root, lease, made, time.monotonic(), disk)

    def _made(self, key: tuple[Path, str], done: asyncio.Task[Prepared | None]) -> None:
        if self._making.get(key) is done:
            del self._making[key]
        prepared = None if done.cancelled() or done.exception() else done.result()
        if prepared is None:
            return
        old = self._ready.pop(key, None)
        if old is not None and old.root != prepared.root:
            self._discard_soon(old)
        self._ready[key] = prepared
        while len(self._ready) > KEEP:
            self._discard_soon(self._ready.pop(next(iter(self._ready))))

    def _discard_soon(self, prepared: Prepared) -> None:
        task = asyncio.create_task(self.release(prepared))
        self._discarding.add(task)
        task.add_done_callback(self._discarding.discard)

    async def made(self) -> None:
        """Wait until the clones being prepared are ready (or failed)."""
        if self._making:
            await asyncio.wait(list(self._making.values()))

    async def aclose(self) -> None:
        """Remove every clone this process prepared. One being made is let finish (a
        local clone, moments): cancelled midway it could leave its directory, lease
        and disk behind, and a disk stays mounted after its worker is gone."""
        self._closed = True
        await self.made()
        await asyncio.gather(*self._discarding, return_exceptions=True)
        ready = list(self._ready.values())
        self._ready.clear()
        for prepared in ready:
            await self.release(prepared)


def _alive(pid: str) -> bool:
    """Whether the process that named a directory `pid` still runs (a reused pid
    only keeps a dead worker's clones a while longer)."""
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
