"""The forge: Ballet's narrow seam to GitHub, in Ballet's terms.

Everything Ballet does on GitHub goes through this Protocol. The production
adapter (`ballet.github.rest`) speaks GitHub's REST and GraphQL APIs
through githubkit; the sandbox serves the same HTTP API, so tests and the demo
use the same adapter. Values in and out are plain frozen dataclasses: no
githubkit model leaks past this module's callers.

Repositories are named `owner/name`; a forge instance acts for one App
installation, which is how GitHub scopes the token it uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ballet.core.events import CheckConclusion, Permission
from ballet.github.errors import ForgeError as ForgeError
from ballet.github.errors import ForgeUnavailable as ForgeUnavailable
from ballet.github.errors import HeadMoved as HeadMoved
from ballet.github.errors import NotFound as NotFound
from ballet.github.errors import RateLimited as RateLimited
from ballet.github.said import CheckAnnotation as CheckAnnotation
from ballet.github.said import FailedCheck as FailedCheck
from ballet.github.said import FailedChecks as FailedChecks
from ballet.github.said import ReviewComment as ReviewComment
from ballet.github.said import ReviewDetail as ReviewDetail
from ballet.github.up_to_date import UpToDateReads

MergeMethod = Literal["merge", "squash", "rebase"]
MergeStatus = Literal[
    "merged",
    "conflict",
    "checks_failed",
    "checks_pending",
    "closed",
    "not_mergeable",
    "method_not_allowed",  # the repository disallows the method: a setting, not the work
]
ReactionContent = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]
CheckStatus = Literal["queued", "in_progress", "completed"]
CombinedState = Literal["success", "failure", "pending", "none"]
FAILED_CONCLUSIONS = frozenset({"failure", "cancelled", "timed_out", "action_required", "error"})


@dataclass(frozen=True)
class AppIdentity:
    """Who Ballet is on GitHub, so it can ignore its own comments and check suites."""

    app_id: int
    slug: str

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"


@dataclass(frozen=True)
class PullRequest:
    number: int
    head_ref: str
    head_sha: str
    base_ref: str
    state: Literal["open", "closed"]
    merged: bool
    draft: bool
    # None while GitHub is still computing mergeability.
    mergeable: bool | None
    mergeable_state: str
    html_url: str
    body: str = ""
    node_id: str = ""  # GraphQL's id of the pull request (its mutations name it)
    auto_merge: bool = False  # GitHub's auto-merge is on for it
    allow_auto_merge: bool = False  # its repository allows auto-merge


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    author: str
    html_url: str


@dataclass(frozen=True)
class Annotation:
    path: str
    start_line: int
    end_line: int
    message: str
    level: Literal["notice", "warning", "failure"] = "failure"
    title: str | None = None
    start_column: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class CheckRunSpec:
    """What Ballet wants a check run to show; created once, then updated."""

    name: str
    head_sha: str
    status: CheckStatus
    conclusion: CheckConclusion | None = None
    title: str = ""
    summary: str = ""
    text: str = ""
    external_id: str | None = None
    details_url: str | None = None
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class BranchHead:
    """A branch's commit and that commit's tree (what an empty commit on top needs)."""

    sha: str
    tree: str


@dataclass(frozen=True)
class CheckResult:
    """One check on a ref: a check run, or a commit status context."""

    name: str
    status: CheckStatus
    conclusion: str | None  # check-run conclusion, or a status state
    url: str | None = None
    app_id: int | None = None  # the App that made a check run; None for a status


@dataclass(frozen=True)
class ChecksSummary:
    ref: str
    checks: tuple[CheckResult, ...]
    combined_status: CombinedState

    @property
    def pending(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if c.status != "completed")

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if c.conclusion in FAILED_CONCLUSIONS)

    def without_app(self, app_id: int) -> ChecksSummary:
        """The checks other Apps and CI made: Ballet's own must not gate Ballet."""
        checks = tuple(c for c in self.checks if c.app_id != app_id)
        return ChecksSummary(self.ref, checks, self.combined_status)


@dataclass(frozen=True)
class MergeResult:
    status: MergeStatus
    detail: str = ""
    sha: str | None = None  # the merge commit when merged


@dataclass(frozen=True)
class IssueDetails:
    body: str
    labels: tuple[str, ...]
    url: str
    # Whether the issue is a sub-issue (GitHub's `parent_issue_url`); None: not said.
    has_parent: bool | None = None
    title: str = ""


@dataclass(frozen=True)
class IssueBrief:
    """An issue or pull request as the issues API shows it (`GET .../issues/{n}`)."""

    repo: str  # owner/name
    number: int
    title: str
    state: Literal["open", "closed"]
    url: str  # html_url
    is_pull: bool = False
    merged: bool = False  # a pull request that was merged
    body: str = ""
    labels: tuple[str, ...] = ()
    author: str = ""  # the login that opened it


@dataclass(frozen=True)
class GitRemote:
    """Where and how a session's branch is pushed; the token never reaches a session."""

    url: str
    token: str = field(repr=False)


class Forge(UpToDateReads, Protocol):
    """GitHub, as Ballet uses it. Every method is one or a few API calls."""

    async def default_branch(self, repo: str) -> str: ...

    async def get_issue(self, repo: str, number: int) -> IssueDetails:
        """The issue's body, labels and URL as they are now."""
        ...

    async def repositories(self) -> tuple[str, ...]:
        """The repositories the installation reaches."""
        ...

    async def reached(self, repos: Sequence[str]) -> frozenset[str]:
        """Which of `repos` (lower-cased) this installation reaches: those the App is
        installed on through it (a companion must be one)."""
        ...

    async def open_issues_labelled(self, repo: str, label: str) -> tuple[int, ...]: ...

    async def file_text(self, repo: str, path: str, ref: str) -> str | None:
        """The file's text at `ref`, or None when it does not exist."""
        ...

    async def list_directory(self, repo: str, path: str, ref: str) -> tuple[str, ...]:
        """Names of the files directly in `path` at `ref`; empty when it does not exist."""
        ...

    async def branch_sha(self, repo: str, branch: str) -> str | None: ...

    async def branch_head(self, repo: str, branch: str) -> BranchHead | None:
        """The branch's commit and tree in one read; None when it does not exist."""
        ...

    async def create_branch(
        self,
        repo: str,
        branch: str,
        from_sha: str,
        *,
        seed_message: str | None = None,
        seed_tree: str | None = None,
    ) -> None:
        """Create `branch` at `from_sha`; an existing branch is left as it is.

        With `seed_message`, the branch starts with an empty commit on top of
        `from_sha`, so a pull request can be opened from it right away; `seed_tree`
        (from_sha's tree, when the caller has it from `branch_head`) saves reading it.
        """
        ...

    async def open_draft_pr(
        self, repo: str, *, head: str, base: str, title: str, body: str
    ) -> PullRequest: ...

    async def find_pr_by_head(self, repo: str, head: str) -> PullRequest | None:
        """The open pull request from branch `head`, if any."""
        ...

    async def get_pr(self, repo: str, number: int) -> PullRequest: ...

    async def set_pr_body(self, repo: str, number: int, body: str) -> None:
        """The pull request's description (`PATCH .../pulls/{number}`)."""
        ...

    async def list_pr_files(self, repo: str, number: int) -> tuple[str, ...]: ...

    async def list_comments(self, repo: str, issue_number: int) -> tuple[Comment, ...]: ...

    async def create_comment(self, repo: str, issue_number: int, body: str) -> Comment: ...

    async def edit_comment(self, repo: str, comment_id: int, body: str) -> Comment: ...

    async def add_labels(self, repo: str, issue_number: int, labels: tuple[str, ...]) -> None: ...

    async def remove_label(self, repo: str, issue_number: int, label: str) -> None:
        """Remove `label`; a label that is not there is not an error."""
        ...

    async def react(self, repo: str, comment_id: int, content: ReactionContent) -> None: ...

    async def create_check_run(self, repo: str, spec: CheckRunSpec) -> int: ...

    async def update_check_run(self, repo: str, check_run_id: int, spec: CheckRunSpec) -> None: ...

    async def find_check_run(
        self, repo: str, head_sha: str, name: str, external_id: str
    ) -> int | None:
        """The check run named `name` with `external_id` on `head_sha`, if one was made."""
        ...

    async def checks_for_ref(self, repo: str, ref: str) -> ChecksSummary: ...

    async def failed_checks(
        self,
        repo: str,
        sha: str,
        *,
        ignore_app: int | None = None,
        max_checks: int = 20,
        max_annotations: int = 50,
    ) -> FailedChecks:
        """The failing check runs (but App `ignore_app`'s, Ballet's own) and commit statuses
        of `sha`, with their output; what passes the bounds is only counted."""
        ...

    async def review(
        self, repo: str, pr: int, review_id: int, *, max_comments: int = 50
    ) -> ReviewDetail:
        """One review of pull request `pr` with its first `max_comments` inline comments."""
        ...

    async def reply_to_review_comment(self, repo: str, pr: int, comment_id: int, body: str) -> None:
        """Reply in the thread of review comment `comment_id` of pull request `pr`."""
        ...

    async def merge_pr(
        self,
        repo: str,
        number: int,
        *,
        method: MergeMethod,
        sha: str | None = None,
        commit_title: str | None = None,
        pr: PullRequest | None = None,
    ) -> MergeResult:
        """Merge with `method`; `commit_title` None leaves GitHub's own title; `pr`, the
        pull request as the caller has just read it, spares reading it again."""
        ...

    async def delete_branch(self, repo: str, branch: str) -> None:
        """Delete `branch`; a branch that is already gone is not an error."""
        ...

    async def base_rules(self, repo: str, branch: str) -> frozenset[str]:
        """The types of the rules `branch` is under (`merge_queue`, ...; github/merge_queue.py)."""
        ...

    async def enqueue_pr(self, node_id: str, expected_head: str) -> None:
        """Put a pull request in its base's merge queue; `QueueRefused` if GitHub will not."""
        ...

    async def enable_auto_merge(
        self, node_id: str, expected_head: str, method: MergeMethod, commit_title: str | None
    ) -> None:
        """Turn GitHub's auto-merge on; `AutoMergeRefused` with GitHub's words if it will not."""
        ...

    async def disable_auto_merge(self, node_id: str) -> None:
        """Turn it off; a pull request without it on is not an error (github/auto_merge.py)."""
        ...

    async def update_branch(
        self, repo: str, number: int, expected_head_sha: str | None = None
    ) -> bool:
        """Bring the PR branch up to date with its base; False when it cannot (conflict);
        `HeadMoved` when its head is no longer `expected_head_sha`."""
        ...

    async def mark_ready_for_review(self, repo: str, number: int) -> None: ...

    async def convert_to_draft(self, repo: str, number: int) -> None:
        """Back to draft; a pull request that is already one, or closed, stays as it is."""
        ...

    async def request_reviewers(
        self, repo: str, number: int, reviewers: tuple[str, ...]
    ) -> None: ...

    async def permission(self, repo: str, login: str) -> Permission: ...

    async def issue_brief(self, repo: str, number: int) -> IssueBrief | None:
        """The issue or pull request `number`; None when it does not exist or is hidden."""
        ...

    async def parent_issue(self, repo: str, number: int) -> IssueBrief | None:
        """The issue `number` is a sub-issue of, if any."""
        ...

    async def sub_issues(self, repo: str, number: int) -> tuple[IssueBrief, ...]:
        """The sub-issues of issue `number`, in GitHub's order."""
        ...

    async def cross_references(self, repo: str, number: int) -> tuple[IssueBrief, ...]:
        """The issues and pull requests whose text names issue `number` (its timeline's
        `cross-referenced` events), oldest first, each once."""
        ...

    async def git_remote(self, repo: str) -> GitRemote: ...


async def find_comment(
    forge: Forge, repo: str, issue_number: int, marker: str, *, author: str | None = None
) -> Comment | None:
    """The first comment on the issue whose body carries `marker` — by `author` when
    given: anyone may comment on a public repository, and a marker is easy to copy."""
    for comment in await forge.list_comments(repo, issue_number):
        if author is not None and comment.author.casefold() != author.casefold():
            continue
        if marker in comment.body:
            return comment
    return None
