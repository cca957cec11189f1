"""A mirror's lock (sessions/mirror.py `locked`), held by a test as a long fetch holds
it, and who waits for it, as the kernel tells (/proc/locks): what Ballet does next
is then known, not guessed from time."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def lock_file(mirror: Path) -> Path:
    return mirror.with_suffix(".lock")


@contextlib.contextmanager
def held(mirror: Path) -> Iterator[None]:
    """The mirror's flock, held until the block ends."""
    path = lock_file(mirror)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def waiting(mirror: Path) -> int:
    """How many flock calls wait for the mirror's lock now."""
    info = os.stat(lock_file(mirror))
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for line in lines if " -> FLOCK " in line and f" {device} " in line)


async def until_waiting(mirror: Path, count: int = 1, limit: float = 30.0) -> None:
    """Wait until `count` flock calls wait for the mirror's lock; fail after `limit`."""
    async with asyncio.timeout(limit):
        while waiting(mirror) < count:
            await asyncio.sleep(0.005)
