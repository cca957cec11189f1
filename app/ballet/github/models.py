"""Lenient models of the GitHub API responses the forge reads.

Only the fields Ballet uses; everything else is ignored, so GitHub, GitHub
Enterprise and the sandbox are all read alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

import structlog
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from ballet.core.events import Permission
from ballet.github.forge import (
    Annotation,
    CheckRunSpec,
    CheckStatus,
    CombinedState,
    Comment,
    PullRequest,
)

log = structlog.get_logger("ballet.github")


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AppData(Lenient):
    id: int
    slug: str = ""  # documented optional; GitHub sends it for every App


class InstallationData(Lenient):
    id: int


def _time_or_none(value: Any) -> Any:
    # Documented as a date-time string; one that is not reads as unknown.
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


class HookDelivery(Lenient):
    """One attempt to deliver a webhook to the App (`GET /app/hook/deliveries`)."""

    id: int
    guid: str  # the X-GitHub-Delivery of every attempt of the same delivery
    delivered_at: Annotated[datetime | None, BeforeValidator(_time_or_none)] = None
    redelivery: bool = False
    status_code: int = 0  # 0: GitHub could not connect

    @property
    def ok(self) -> bool:
        return 200 <= self.status_code < 300


class RepositoryName(Lenient):
    full_name: str


class InstallationRepositories(Lenient):
    total_count: int
    repositories: list[RepositoryName]


class IssueListItem(Lenient):
    number: int
    pull_request: dict[str, Any] | None = None  # present: the item is a pull request


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


class _CommitTree(Lenient):
    tree: GitObject


class BranchCommit(Lenient):
    sha: str
    commit: _CommitTree


class Branch(Lenient):
    """`GET /repos/{repo}/branches/{branch}`: the commit comes with its tree."""

    name: str
    commit: BranchCommit


class RepoSettings(Lenient):
    allow_auto_merge: bool = False  # documented optional: absent reads as not allowed


class BranchTip(Lenient):
    ref: str
    sha: str
    repo: RepoSettings | None = None


class AutoMergeData(Lenient):
    merge_method: str = ""


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
    auto_merge: AutoMergeData | None = None


class IssueLabel(Lenient):
    name: str | None = None


class IssueData(Lenient):
    title: str = ""
    body: str | None = None
    html_url: str
    # GitHub documents a label as an object or a bare name.
    labels: list[IssueLabel | str] = []
    parent_issue_url: str | None = None

    @property
    def has_parent(self) -> bool | None:
        """Whether it is a sub-issue; None when this GitHub does not say."""
        if "parent_issue_url" not in self.model_fields_set:
            return None
        return self.parent_issue_url is not None

    @property
    def label_names(self) -> tuple[str, ...]:
        names = (lbl if isinstance(lbl, str) else lbl.name for lbl in self.labels)
        return tuple(n for n in names if n)


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


class CheckOutput(Lenient):
    title: str | None = None
    summary: str | None = None
    annotations_count: int = 0


class CheckRunData(Lenient):
    id: int
    app: AppRef | None = None
    name: str = ""
    status: CheckRunStatus = "queued"
    conclusion: str | None = None
    html_url: str | None = None
    external_id: str | None = None
    output: CheckOutput | None = None


class CheckAnnotationData(Lenient):
    """An item of `GET .../check-runs/{id}/annotations`."""

    path: str
    start_line: int
    end_line: int
    # All three documented nullable; a level GitHub leaves out reads as a failure.
    annotation_level: str | None = None
    title: str | None = None
    message: str | None = None


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
    description: str | None = None


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


# Responses into the forge's types, and the forge's check runs into request bodies.


def pull_request_of(pr: PullRequestData) -> PullRequest:
    return PullRequest(
        number=pr.number,
        head_ref=pr.head.ref,
        head_sha=pr.head.sha,
        base_ref=pr.base.ref,
        state="open" if pr.state == "open" else "closed",
        merged=pr.merged,
        draft=pr.draft,
        mergeable=pr.mergeable,
        mergeable_state=pr.mergeable_state,
        html_url=pr.html_url,
        body=pr.body or "",
        node_id=pr.node_id,
        auto_merge=pr.auto_merge is not None,
        allow_auto_merge=pr.base.repo is not None and pr.base.repo.allow_auto_merge,
    )


def comment_of(c: IssueComment) -> Comment:
    return Comment(id=c.id, body=c.body or "", author=c.author, html_url=c.html_url)


def permission_of(value: str) -> Permission:
    # An unknown role fails closed: it may not drive a ticket.
    return next((p for p in get_args(Permission) if p == value), "none")


def check_status_of(status: CheckRunStatus) -> CheckStatus:
    # waiting, requested and pending are all "not started yet" to Ballet.
    return status if status in ("in_progress", "completed") else "queued"


def combined_state_of(state: str) -> CombinedState:
    if state == "success":
        return "success"
    return "failure" if state in ("failure", "error") else "pending"


def check_run_body(spec: CheckRunSpec) -> dict[str, Any]:
    body: dict[str, Any] = {"name": spec.name, "head_sha": spec.head_sha, "status": spec.status}
    if spec.conclusion is not None:
        body["conclusion"] = spec.conclusion
    if spec.external_id is not None:
        body["external_id"] = spec.external_id
    if spec.details_url is not None:
        body["details_url"] = spec.details_url
    output: dict[str, Any] = {
        "title": spec.title or spec.name,
        "summary": spec.summary or spec.name,
    }
    if spec.text:
        output["text"] = spec.text
    if spec.annotations:
        # GitHub takes at most 50 annotations per request.
        output["annotations"] = [_annotation(a) for a in spec.annotations[:50]]
    body["output"] = output
    return body


def _annotation(a: Annotation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": a.path,
        "start_line": a.start_line,
        "end_line": a.end_line,
        "annotation_level": a.level,
        "message": a.message,
    }
    if a.title:
        out["title"] = a.title
    # Columns are only allowed on single-line annotations.
    if a.start_column is not None and a.start_line == a.end_line:
        out["start_column"] = a.start_column
        out["end_column"] = a.end_column if a.end_column is not None else a.start_column
    return out
