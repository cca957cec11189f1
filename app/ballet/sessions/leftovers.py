"""What a session or a prepared clone leaves on the worker's machine, removed
whatever ends it: its disk (a tmpfs outlives the process that mounted it, and
keeps its directory busy), its directory, and those a dead worker left.

A removal runs to its end once begun. Cancellation comes in twos and threes
as a worker stops: a person's `/ballet cancel` aborts a session's job, the
stop cancels every job still running, its grace running out cancels the run
again, and the loop's end cancels whatever task is left. Each may land in a
removal, so none of its awaits may be where it stops; and the disk goes first,
in the event loop itself, not in a thread that a busy pool may never start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import structlog

from ballet.sessions.disk import unmount, unmount_stale

log = structlog.get_logger("ballet.sessions.leftovers")

T = TypeVar("T")


async def to_the_end(work: Awaitable[T]) -> T:
    """`work` awaited until it is done, however often the caller is cancelled
    meanwhile; a cancellation is raised once it is (after it, not instead of it)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        if not task.cancelled():
            task.exception()  # retrieved: the removal logged its own failure
        raise asyncio.CancelledError
    return task.result()


async def remove_dir(root: Path) -> None:
    """A session's or prepared clone's directory gone: its own disk unmounted at once
    (all it held goes with it), then the directory, whatever the session made of it."""
    unmount(root)
    await to_the_end(asyncio.to_thread(remove_tree, root))


def remove_stale(under: Path) -> None:
    """Unmount and remove the disks dead workers left under `under` (SIGKILLed, or
    the machine's OOM killer: nothing of theirs ran to remove them)."""
    for stale in unmount_stale(under):
        log.warning("unmounted a dead worker's session disk", path=str(stale))
        remove_tree(stale)


def remove_tree(root: Path) -> None:
    """Remove a session's directory whole, even where the session made a directory
    unreadable (chmod 000): a worker that is not root cannot list it, and plain rmtree
    would leave it, and what it holds, on the workspaces volume for good. Such
    directories are made the worker's to open again, never through a symbolic link
    (the session's processes are all gone by now: nothing swaps one in)."""
    shutil.rmtree(root, ignore_errors=True)
    if not root.exists() and not root.is_symlink():
        return
    pending = [root]
    while pending:
        directory = pending.pop()
        if directory.is_symlink():
            continue
        with contextlib.suppress(OSError):
            directory.chmod(0o700)
            with os.scandir(directory) as entries:
                pending += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        log.error("a session's directory could not be removed", path=str(root))
