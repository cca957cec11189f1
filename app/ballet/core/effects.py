"""Effects: what the core asks the edge to do, as values.

The edge's interpreter turns each into I/O, in list order (an
`OpenBranchAndDraftPR` comes before the `StartSession` that needs the branch).
Every comment effect carries a `MarkerKey`: the edge looks for a comment whose
body holds `marker_for(key.render())` and edits it instead of posting a second.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ballet.core.config import Runtime
from ballet.core.pools import DEFAULT_POOL
from ballet.core.record import SignOff
from ballet.core.report import Handoff
from ballet.core.returns import ReturnCause, SignoffChange
from ballet.core.spend import SessionBudget

Label = Literal[
    "ballet:running", "ballet:waiting", "ballet:question", "ballet:done", "ballet:failed"
]
ALL_LABELS: tuple[Label, ...] = (
    "ballet:running",
    "ballet:waiting",
    "ballet:question",
    "ballet:done",
    "ballet:failed",
)
CommentKind = Literal["tracking", "report", "question", "knowledge", "signoffs", "reply", "notice"]


# What Ballet's own check runs may conclude (a subset of events.CheckConclusion).
CheckRunConclusion = Literal["success", "failure", "neutral", "cancelled"]


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MarkerKey(Frozen):
    """Names one comment Ballet writes: stable across retries of one effect."""

    ticket: str  # "owner/repo#n"
    kind: CommentKind
    stage: str = ""
    iteration: int = 0
    attempt: int = 0
    extra: str = ""  # e.g. the phase, or the comment id replied to

    def render(self) -> str:
        parts = [self.ticket, self.kind, self.stage, str(self.iteration), str(self.attempt)]
        return ":".join([*parts, self.extra] if self.extra else parts)


class Effect(Frozen):
    repo: str  # "owner/name"


class OpenBranchAndDraftPR(Effect):
    kind: Literal["open_branch_and_draft_pr"] = "open_branch_and_draft_pr"
    issue: int
    branch: str
    base: str
    title: str
    body: str


class OpenCompanionPR(Effect):
    """The ticket's draft pull request in a companion (`repo`), from the ticket's branch
    a session pushed there to the companion's default branch; reused when one is open."""

    kind: Literal["open_companion_pr"] = "open_companion_pr"
    ticket: str  # "owner/repo#n"
    branch: str
    title: str
    body: str


class LinkPullRequest(Effect):
    """Ballet's marked block in pull request `number`'s body, naming the ticket and its
    other pull requests (core/companion_text.py); the edge rewrites only that block,
    and only when it changed."""

    kind: Literal["link_pull_request"] = "link_pull_request"
    number: int
    block: str


class UpsertTrackingComment(Effect):
    kind: Literal["upsert_tracking_comment"] = "upsert_tracking_comment"
    number: int  # the issue, or the PR once it exists
    target: Literal["issue", "pr"]
    marker: MarkerKey
    body: str
    # Not written before this time, and not at all if a later write of the same
    # comment comes first (core/outbox.py): a session's start that an instant
    # session's end supersedes at once is never worth a request. None: at once.
    not_before: datetime | None = None


class PostReportComment(Effect):
    kind: Literal["post_report_comment"] = "post_report_comment"
    number: int
    marker: MarkerKey
    body: str


class PostComment(Effect):
    kind: Literal["post_comment"] = "post_comment"
    number: int
    marker: MarkerKey
    body: str


class PostReply(Effect):
    kind: Literal["post_reply"] = "post_reply"
    number: int
    in_reply_to: int  # the comment id of the command
    marker: MarkerKey
    body: str


class SetLabels(Effect):
    kind: Literal["set_labels"] = "set_labels"
    number: int
    labels: tuple[Label, ...]


class RemoveLabels(Effect):
    kind: Literal["remove_labels"] = "remove_labels"
    number: int
    labels: tuple[Label, ...]


class React(Effect):
    kind: Literal["react"] = "react"
    comment_id: int
    content: Literal["eyes"] = "eyes"


class SetCheckRun(Effect):
    kind: Literal["set_check_run"] = "set_check_run"
    name: str
    head_sha: str
    status: Literal["queued", "in_progress", "completed"]
    conclusion: CheckRunConclusion | None = None
    summary: str = ""
    # Besides (name, head), what makes this check run one of its own: a stage
    # re-run after its worker crashed gets a check run of its own attempt.
    run_key: str = ""
    # The ticket ("owner/repo#n") whose memo ledger may vouch that the run was never made.
    ticket: str = ""
    # Ballet's page of the run (a path: the edge adds the public URL), and the
    # session whose log's end the completed check shows.
    page: str = ""
    job_key: str | None = None
    # As for UpsertTrackingComment: an "in progress" run a completed one soon overwrites.
    not_before: datetime | None = None
    # Only closes this run's "in progress" on a head the PR left (core/check_runs.py):
    # if that was never written, neither is this (core/outbox.py `unwritten_close`).
    closes_start: bool = False


class SessionSpec(Frozen):
    """Everything the session runner needs besides what it reads from GitHub."""

    job_key: str  # "owner/repo#n:stage:iteration:attempt[:phase]"
    repo: str
    issue: int
    title: str
    author: str
    stage: str
    kind: Literal["agent", "signoff"] = "agent"
    role: str | None = None
    iteration: int
    attempt: int
    phase: str | None = None
    runtime: str
    runtime_config: Runtime
    # The agent pool whose workers run it; a default, so sessions queued before pools load.
    pool: str = DEFAULT_POOL
    model: str | None = None
    effort: str | None = None
    skills: tuple[str, ...] = ()
    instructions: str = ""
    timeout_minutes: int
    branch: str | None
    base: str
    # An integrator's session: how it brings the branch up to date (`merge: update:`).
    update_with: Literal["merge", "rebase"] | None = None
    pr_number: int | None = None
    pipeline: str  # name
    pipeline_version: int
    handoff: Handoff | None = None  # the previous phase's
    answers: tuple[str, ...] = ()  # answers to this ticket's questions, oldest first
    note: str = ""  # why this session runs, e.g. what a merge returned
    returned: tuple[ReturnCause, ...] = ()  # why the ticket came back, for rework
    signoffs_required: tuple[str, ...] = ()
    signoffs_given: tuple[SignOff, ...] = ()
    # What people required or waived since the ticket's previous session began.
    signoff_changes: tuple[SignoffChange, ...] = ()
    # The session's and the ticket's cost caps, which its model gateway enforces.
    budget: SessionBudget = SessionBudget()


class StartSession(Effect):
    kind: Literal["start_session"] = "start_session"
    spec: SessionSpec


class CancelSession(Effect):
    kind: Literal["cancel_session"] = "cancel_session"
    job_key: str


class MergePR(Effect):
    kind: Literal["merge_pr"] = "merge_pr"
    number: int
    method: Literal["merge", "squash", "rebase"] = "squash"
    sha: str | None = None  # merge only if the head is still this
    commit_title: str | None = None  # None: GitHub's own
    delete_branch: bool = False  # the head branch, once merged
    # A companion's pull request (core/companion_merges.py): its checks still running
    # are answered at once (`checks_pending`), and it is merged directly, never queued.
    companion: bool = False


class WithdrawMerge(Effect):
    """The head moved off the one the merge was pinned to: forget the edge's waiting
    merge and turn GitHub's auto-merge off, if it is on (core/merge_pins.py)."""

    kind: Literal["withdraw_merge"] = "withdraw_merge"
    number: int


class UpdateBranch(Effect):
    """Bring the pull request up to date with its base, only if its head is still `sha`
    (GitHub's `expected_head_sha`); the edge answers with the new head (`MergeResult`
    `updated`), nothing if the head had moved or the update could not be made."""

    kind: Literal["update_branch"] = "update_branch"
    number: int
    sha: str


class ReadChecks(Effect):
    """Read every check on `sha`; the edge answers with their `ChecksCompleted`
    verdict once all are done, `ChecksStarted` while some still run, nothing while
    there are none (their completion, or the wait's timeout, will tell)."""

    kind: Literal["read_checks"] = "read_checks"
    sha: str


class ReplyToReview(Effect):
    """Tell a review that asked for changes which commit addressed them: on its
    first inline comment's thread (a review without one is told in the report)."""

    kind: Literal["reply_to_review"] = "reply_to_review"
    number: int
    review_id: int
    marker: MarkerKey
    body: str


class MarkReadyForReview(Effect):
    kind: Literal["mark_ready_for_review"] = "mark_ready_for_review"
    number: int


class ConvertToDraft(Effect):
    """The pull request goes back to draft: the ticket is in the agents' hands again."""

    kind: Literal["convert_to_draft"] = "convert_to_draft"
    number: int


class RequestReviewers(Effect):
    kind: Literal["request_reviewers"] = "request_reviewers"
    number: int
    reviewers: tuple[str, ...]


AnyEffect = Annotated[
    OpenBranchAndDraftPR
    | OpenCompanionPR
    | LinkPullRequest
    | UpsertTrackingComment
    | PostReportComment
    | PostComment
    | PostReply
    | SetLabels
    | RemoveLabels
    | React
    | SetCheckRun
    | StartSession
    | CancelSession
    | MergePR
    | WithdrawMerge
    | UpdateBranch
    | ReadChecks
    | ReplyToReview
    | MarkReadyForReview
    | ConvertToDraft
    | RequestReviewers,
    Field(discriminator="kind"),
]
