"""What people and CI said on GitHub, as the forge reads it: a review with its
inline comments, a commit's failing checks with their output and annotations.
(The `Forge` Protocol in `forge.py` returns these; they live here to keep that
module short.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ReviewComment:
    id: int
    path: str
    line: int | None  # GitHub's `line`; for an outdated comment, its `original_line`
    start_line: int | None  # a multi-line comment's first line
    side: str | None  # "LEFT" | "RIGHT"
    diff_hunk: str
    body: str
    author: str
    in_reply_to: int | None = None


@dataclass(frozen=True)
class ReviewDetail:
    id: int
    author: str
    state: str  # as GitHub says: "APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", ...
    body: str
    commit_id: str | None
    html_url: str
    comments: tuple[ReviewComment, ...]
    comments_left_out: int = 0  # comments past the bound that were not read


@dataclass(frozen=True)
class CheckAnnotation:
    path: str
    start_line: int
    end_line: int
    level: str  # "notice" | "warning" | "failure"
    message: str
    title: str | None = None


@dataclass(frozen=True)
class FailedCheck:
    """A failing check run or commit status, and what it said."""

    name: str
    kind: Literal["check_run", "status"]
    conclusion: str  # a check run's conclusion, or a status's state ("failure", "error")
    title: str = ""  # check run output.title (statuses: "")
    summary: str = ""  # check run output.summary, or a status's description
    url: str | None = None  # html_url / target_url
    annotations: tuple[CheckAnnotation, ...] = ()
    annotations_left_out: int = 0


@dataclass(frozen=True)
class FailedChecks:
    sha: str
    checks: tuple[FailedCheck, ...]
    checks_left_out: int = 0
