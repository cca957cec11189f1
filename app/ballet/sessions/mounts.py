"""/proc/self/mountinfo, read: where the cgroup hierarchies are (confine/cgroups.py)
and which sessions' disks a dead worker left mounted (disk.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    root: str  # the directory of the filesystem mounted here
    point: Path
    fstype: str
    options: frozenset[str]  # the superblock's: a v1 cgroup hierarchy's controllers
    source: str = ""


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        head, _, tail = line.partition(" - ")
        fields, after = head.split(), tail.split()
        if len(fields) < 5 or len(after) < 3:
            continue
        point = Path(_unescape(fields[4]))
        options = frozenset(after[2].split(","))
        mounts.append(Mount(fields[3], point, after[0], options, _unescape(after[1])))
    return mounts


def _unescape(text: str) -> str:
    """The kernel writes a space, tab, newline or backslash in a path as octal: \\040."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), text)


def mounts() -> list[Mount]:
    try:
        return parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    except OSError:
        return []
