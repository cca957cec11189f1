"""Before a session's process starts: is its program there, and what git must ignore."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def findable(program: str, clone: Path, path: str) -> bool:
    """Whether the session's PATH (or the clone, for a relative path) has `program`;
    asked before the sandbox starts, so a missing CLI is named as such."""
    if "/" in program:
        return os.access(clone / program, os.X_OK)
    return shutil.which(program, path=path) is not None


def exclude_from_git(clone: Path, patterns: tuple[str, ...]) -> None:
    if patterns:
        exclude = clone / ".git" / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        with exclude.open("a") as file:
            file.write("".join(f"{pattern}\n" for pattern in patterns))
