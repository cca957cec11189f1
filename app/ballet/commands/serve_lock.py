"""One `ballet serve` per data directory.

Two serves on one BALLET_DATA_DIR would run two embedded Valkeys on one
append-only file, and two workers on one set of mirrors and workspaces, with
nothing to tell either. Serve holds an exclusive lock on `serve.lock` in the
data dir for its whole life (flock: the kernel lets it go when the process ends,
however it ends) and writes its pid there, so a second serve can name the first,
and `ballet stats` can tell whether an embedded Valkey it finds is alive.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "serve.lock"


class DataDirInUse(Exception):
    """Another `ballet serve` holds the data dir; the message names its pid."""


@contextmanager
def serving_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data dir for the block; raises DataDirInUse when another serve does."""
    data_dir.mkdir(parents=True, exist_ok=True)
    # os.open's descriptors are not inherited: Valkey and the sessions never hold it.
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid_in(fd)
            who = f"another ballet serve (pid {pid})" if pid else "another ballet serve"
            raise DataDirInUse(
                f"{who} is using the data dir {data_dir.resolve()}: stop it first, or give"
                " this one a data dir of its own (BALLET_DATA_DIR)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def is_served(data_dir: Path) -> bool:
    """Whether a `ballet serve` holds `data_dir` now."""
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False  # nobody holds it: its serve has ended


def _pid_in(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None
