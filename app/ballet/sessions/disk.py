"""A session's disk: its workspace (clone, HOME, BALLET_* files and /tmp) on a
size-limited tmpfs of its own, so the kernel refuses a write beyond the limit.

Mounting needs CAP_SYS_ADMIN in the worker's mount namespace (root, or a
privileged container); `can_mount()` finds out once. tmpfs is memory: the pages
of what the session writes are charged to its memory cgroup as well (the
clone's checkout, written by the worker's git, to the worker's), and the whole
filesystem goes at once when it is unmounted. docs/security.md says what it
costs and what an unprivileged worker limits instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ballet.sessions.mounts import mounts

MS_NOSUID, MS_NODEV = 0x2, 0x4
MNT_DETACH = 0x2
MS_MOVE = 0x2000
# Inodes in proportion to the size (one per 4 KiB): a session making millions of
# empty files fills its disk, as a large file does, rather than the worker's memory.
BYTES_PER_INODE = 4096
MIN_INODES = 16_384
# A write fails once fewer than this many bytes are free: the disk counts as full.
FULL_MARGIN = 64 * 1024
SOURCE_PREFIX = "ballet-session-"  # and the worker's pid: /proc/self/mountinfo shows it


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_limited(path: Path, size: int) -> None:
    """A fresh tmpfs of `size` bytes over the (empty) directory `path`; OSError if not.
    Its source names this worker's pid, so one left by a worker that died is known."""
    inodes = max(MIN_INODES, size // BYTES_PER_INODE)
    options = f"size={size},nr_inodes={inodes},mode=0700".encode()
    flags = MS_NOSUID | MS_NODEV
    source = f"{SOURCE_PREFIX}{os.getpid()}".encode()
    if _libc().mount(source, os.fsencode(path), b"tmpfs", flags, options) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot mount a tmpfs on {path}: {os.strerror(error)}")


def move_mount(source: Path, target: Path) -> None:
    """The tmpfs at `source` moved to the (empty) directory `target`, all it holds
    with it: a clone prepared on a session's disk handed to the session (prepared.py)."""
    if _libc().mount(os.fsencode(source), os.fsencode(target), None, MS_MOVE, None) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot move the tmpfs at {source} to {target}: {os.strerror(error)}")


def unmount(path: Path) -> None:
    """Unmount the tmpfs at `path` (its files go with it); nothing if none is there.
    Detached: a process still holding a file of it (none should) cannot keep it up."""
    if os.path.ismount(path) and _libc().umount2(os.fsencode(path), MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot unmount {path}: {os.strerror(error)}")


def unmount_stale(under: Path) -> list[Path]:
    """Unmount the sessions' disks under `under` whose worker is gone (killed, or the
    machine's OOM killer): a mount outlives its process, and with it all it holds."""
    gone = []
    for mount in mounts():
        pid = mount.source.removeprefix(SOURCE_PREFIX)
        if (
            mount.fstype == "tmpfs"
            and mount.source.startswith(SOURCE_PREFIX)
            and pid.isdigit()
            and not _alive(int(pid))
            and mount.point.is_relative_to(under)
        ):
            with contextlib.suppress(OSError):
                unmount(mount.point)
                gone.append(mount.point)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@functools.cache
def can_mount() -> bool:
    """Whether this process may mount a size-limited tmpfs (asked once, by trying)."""
    probe = Path(tempfile.mkdtemp(prefix="ballet-mount-probe-"))
    try:
        mount_limited(probe, 1024 * 1024)
    except OSError:
        return False
    else:
        unmount(probe)
        return True
    finally:
        shutil.rmtree(probe, ignore_errors=True)


@dataclass(frozen=True)
class DiskUse:
    used: int  # bytes
    size: int

    @property
    def full(self) -> bool:
        return self.size - self.used < FULL_MARGIN


def disk_use(path: Path) -> DiskUse | None:
    """How much of the filesystem at `path` is in use; None once it is gone."""
    with contextlib.suppress(OSError):
        stat = os.statvfs(path)
        size = stat.f_blocks * stat.f_frsize
        free_inodes = stat.f_favail
        used = size - stat.f_bavail * stat.f_frsize
        # Out of inodes is full too: no file can be made, however little it holds.
        return DiskUse(size if free_inodes == 0 else used, size)
    return None
