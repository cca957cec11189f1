"""Processes seen from outside: a command's children, and those of a confined session,
which has a pid namespace of its own, so they are found by that namespace, not by
the pids it saw."""

from __future__ import annotations

import os
import time
from pathlib import Path


def children(pid: int) -> set[int]:
    """The processes `pid` started that are still its children."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie no one reaps."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


# Agent code recording the session's pid namespace ("pid:[inode]") in `path`.
def record_namespace(path: Path) -> str:
    return (
        "import os\n"
        f"open({str(path)!r} + '.tmp', 'w').write(os.readlink('/proc/self/ns/pid'))\n"
        f"os.rename({str(path)!r} + '.tmp', {str(path)!r})\n"
    )


def namespace_alive(pid_namespace: str) -> bool:
    """Whether any process of this machine still runs in that pid namespace: a confined
    session's processes have pids of their own, so they are found by namespace."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            same = os.readlink(f"/proc/{entry.name}/ns/pid") == pid_namespace
        except OSError:
            continue
        if same and alive(int(entry.name)):
            return True
    return False


def namespace_ends(pid_namespace: str, within_seconds: float = 5.0) -> bool:
    """Whether the namespace's processes are all gone within the time (the kernel kills
    them when its first process dies, which takes a moment, not a promise)."""
    deadline = time.monotonic() + within_seconds
    while namespace_alive(pid_namespace):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
