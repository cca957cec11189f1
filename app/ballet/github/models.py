"""Lenient models of the GitHub API responses the forge reads.

Only the fields Ballet uses; everything else is ignored, so GitHub, GitHub
Enterprise and the sandbox are all read alike.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import structlog
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

log = structlog.get_logger("ballet.github")


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AppData(Lenient):
    id: int
    slug: str = ""  # documented optional; GitHub sends it for every App


class InstallationData(Lenient):
    id: int


class Repository(Lenient):
    default_branch: str


class ContentItem(Lenient):
    type: str
    name: str
    path: str = ""
    content: str | None = None


class GitObject(Lenient):
    sha: str


class GitRef(Lenient):
    ref: str
    object: GitObject


class GitCommit(Lenient):
    sha: str
    tree: GitObject


class BranchTip(Lenient):
    ref: str
    sha: str


class PullRequestData(Lenient):
    """A pull request; also an item of `GET /pulls`, which carries no `merged`,
    `mergeable*` or `draft` of its own (GitHub's `pull-request-simple`)."""

    number: int
    node_id: str = ""
    head: BranchTip
    base: BranchTip
    state: str  # GitHub's list items document no enum; anything but "open" is closed
    merged: bool = False
    draft: bool = False
    mergeable: bool | None = None
    mergeable_state: str = "unknown"
    html_url: str = ""
    body: str | None = None


class PullFile(Lenient):
    filename: str
    status: str = "modified"


class User(Lenient):
    login: str


# What GitHub shows for an account that no longer exists.
GHOST = "ghost"


class IssueComment(Lenient):
    id: int
    body: str | None = None
    user: User | None = None  # null: the author's account was deleted
    html_url: str = ""

    @property
    def author(self) -> str:
        return self.user.login if self.user is not None else GHOST


class AppRef(Lenient):
    id: int | None = None


# Every status GitHub documents; waiting, requested and pending are GitHub
# Actions jobs held by an environment or a concurrency group.
CheckRunStatus = Literal["queued", "in_progress", "completed", "waiting", "requested", "pending"]


class CheckRunData(Lenient):
    id: int
    app: AppRef | None = None
    name: str = ""
    status: CheckRunStatus = "queued"
    conclusion: str | None = None
    html_url: str | None = None
    external_id: str | None = None


def _readable_runs(value: Any) -> Any:
    """Keep the check runs that parse: a run of another App in a shape Ballet
    does not know must never stop Ballet reading the others."""
    if not isinstance(value, list | tuple):
        return value
    kept: list[Any] = []
    for item in value:
        try:
            kept.append(CheckRunData.model_validate(item))
        except ValidationError as exc:
            log.warning("check run skipped: unreadable", errors=exc.error_count())
    return kept


class CheckRunList(Lenient):
    check_runs: Annotated[tuple[CheckRunData, ...], BeforeValidator(_readable_runs)] = ()


class StatusData(Lenient):
    context: str
    state: str
    target_url: str | None = None


class CombinedStatus(Lenient):
    # GitHub documents a plain string: success, failure, pending (and error seen in the wild).
    state: str = "pending"
    statuses: tuple[StatusData, ...] = ()


class MergeData(Lenient):
    sha: str | None = None
    merged: bool = True


class PermissionData(Lenient):
    # A plain string to GitHub (custom repository roles add their own names).
    permission: str
