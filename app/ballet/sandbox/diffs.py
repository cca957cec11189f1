"""Where a review comment sits in a pull request's diff, as GitHub places it.

GitHub anchors an inline comment to a line of the pull request's diff (head
against its merge base with base, three lines of context) and reports it two
ways: `position`, the number of lines below the file's first `@@` header (later
headers count as lines), and `diff_hunk`, the comment's hunk from its header
down to the commented line. A line outside every hunk cannot take a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ballet.sandbox.gitrepo import GitError, git

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Anchor:
    position: int
    diff_hunk: str


def file_diff(repo: Path, base: str, head: str, path: str) -> list[str] | None:
    """The diff of `path` from its first hunk header on; None when the pull request
    does not change it (or changes it as a binary file, which has no lines)."""
    try:
        merge_base = git(repo, "merge-base", base, head).decode().strip()
        out = git(
            repo,
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--unified=3",
            merge_base,
            head,
            "--",
            f":(literal){path}",
        )
    except GitError:
        return None
    lines = out.decode(errors="replace").splitlines()
    first = next((n for n, text in enumerate(lines) if text.startswith("@@")), None)
    return None if first is None else lines[first:]


def anchor(diff: list[str], line: int, side: str) -> Anchor | None:
    """Where `line` of the base (side LEFT) or of the head (RIGHT) is in `diff`."""
    old = new = 0
    hunk_start = 0
    for index, text in enumerate(diff):
        header = HUNK_HEADER.match(text)
        if header:
            old, new, hunk_start = int(header[1]), int(header[2]), index
            continue
        kind = text[:1]
        if kind not in (" ", "-", "+"):
            continue  # "\ No newline at end of file"
        on_left = kind in (" ", "-") and side == "LEFT" and old == line
        on_right = kind in (" ", "+") and side == "RIGHT" and new == line
        if on_left or on_right:
            return Anchor(position=index, diff_hunk="\n".join(diff[hunk_start : index + 1]))
        old += kind in (" ", "-")
        new += kind in (" ", "+")
    return None
