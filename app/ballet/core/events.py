"""Domain events: what happened to a ticket, as the edge reports it.

The edge translates webhooks and session results into these; `machine.advance`
is the only consumer. Every event carries `now`, the time it is handled.

Session failures are not events of their own: a session that crashed, wrote no
valid report or ran out of time arrives as `SessionFinished` whose report has
outcome `failed` (or `timed_out`) and a summary saying which, so routing treats
it like any other outcome (`next: {failed: …}`, else a question).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ballet.core.commands import ParsedCommand
from ballet.core.config import ResolvedPipeline
from ballet.core.report import Handoff, Report, Usage
from ballet.core.spend import Cap, Spend

Permission = Literal["none", "read", "triage", "write", "maintain", "admin"]
# The permissions that may drive a ticket (docs/commands.md).
WRITE_PERMISSIONS: frozenset[Permission] = frozenset({"write", "maintain", "admin"})
# Every conclusion GitHub documents for a check run or suite.
CheckConclusion = Literal[
    "success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"
]
# The conclusions that let a pull request through, as GitHub's required checks read them.
PASSING_CONCLUSIONS: frozenset[CheckConclusion] = frozenset({"success", "neutral", "skipped"})


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    now: datetime


class TicketRequested(Event):
    kind: Literal["ticket_requested"] = "ticket_requested"
    repo: str
    issue: int
    author: str
    title: str
    body: str = ""
    labels: tuple[str, ...] = ()
    pipeline: ResolvedPipeline
    default_branch: str
    requested_by: str = ""  # who added the label, whose reading of the text is pinned
    # What the pinned pipeline may not do as its writer expects (core/price_rules.py).
    warnings: tuple[str, ...] = ()


class SessionFinished(Event):
    kind: Literal["session_finished"] = "session_finished"
    job_key: str  # the StartSession's job key; a stale key is refused
    stage: str
    iteration: int
    attempt: int
    phase: str | None = None
    report: Report
    head_sha: str | None = None
    usage: Usage | None = None  # None: take it from the report
    # What the session's model gateway metered (wins over `usage` and the report's),
    # and the cap that refused a request of the session, if one did.
    spend: Spend | None = None
    cap_reached: Cap | None = None
    duration_seconds: float = 0.0
    handoff: Handoff | None = None
    # Per companion whose ticket branch has commits of its own: its pushed head.
    companion_heads: dict[str, str] = Field(default_factory=dict)


class CompanionPROpened(Event):
    """Ballet opened (or found open) the ticket's pull request in a companion."""

    kind: Literal["companion_pr_opened"] = "companion_pr_opened"
    repo: str
    number: int
    head_sha: str


class SessionCrashed(Event):
    """A session's worker died mid-session (its heartbeat stopped): no report
    will ever come. Not the agent's doing, so the stage runs again as a new
    attempt, up to `retries_allowed` times per stage run, before a person is asked."""

    kind: Literal["session_crashed"] = "session_crashed"
    job_key: str
    stage: str
    iteration: int
    attempt: int
    phase: str | None = None
    last_beat: datetime | None = None  # when the session's job last beat
    retries_allowed: int = Field(default=2, ge=0)  # the deployment's setting
    # What the session's model gateway metered before its worker died (kept in Redis
    # as each answer came): it counts in the ticket's cost like any session's.
    spend: Spend | None = None


class WorkerAwaited(Event):
    """The session was queued on a pool with no live worker: it starts when one
    of that pool's workers comes up, and the stage's timeout still counts."""

    kind: Literal["worker_awaited"] = "worker_awaited"
    job_key: str
    pool: str


class SessionStarted(Event):
    """A worker took a session that had waited for a worker of its pool."""

    kind: Literal["session_started"] = "session_started"
    job_key: str
    worker: str = ""


class IssueText(BaseModel):
    """An issue's title and body as GitHub has them now."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    body: str


class IssueEdited(Event):
    """The ticket's issue had its title or body edited. Heard only from a person
    with write permission (the edge asks, as for slash commands); anyone else's
    edit leaves the pinned text as it is (core/edits.py)."""

    kind: Literal["issue_edited"] = "issue_edited"
    title: str
    body: str
    editor: str
    editor_is_bot: bool = False
    permission: Permission = "none"


class CommandIssued(Event):
    kind: Literal["command_issued"] = "command_issued"
    command: ParsedCommand  # a CommandError gets the help text as a reply
    author: str
    permission: Permission
    author_is_bot: bool = False
    # The comment that gave it; None for a command from Ballet's web pages, which
    # has no comment to react to or reply on (the page shows the outcome instead).
    comment_id: int | None
    head_sha: str | None = None  # the PR's head SHA when the comment was made
    # The issue's text as the edge read it for `/ballet refresh`; None for other verbs.
    issue_text: IssueText | None = None


class ReviewSubmitted(Event):
    """A pull-request review. It counts only from a person with write permission
    (the edge reads it as for slash commands), and an approval only for the head
    commit it names."""

    kind: Literal["review_submitted"] = "review_submitted"
    state: Literal["approved", "changes_requested", "commented", "dismissed"]
    author: str
    author_is_bot: bool = False
    permission: Permission = "none"
    commit_id: str | None = None  # the commit the review was given on
    review_id: int | None = None
    body: str = ""
    # A companion's pull request (core/companion_events.py); None: the ticket's own.
    repo: str | None = None


class ChecksStarted(Event):
    """A check suite or run started for a SHA: a checks wait is no longer "never started"."""

    kind: Literal["checks_started"] = "checks_started"
    head_sha: str


class ChecksCompleted(Event):
    """Checks finished on a SHA: the verdict of all of them, or (`partial`) of one.

    A webhook tells of one check suite or status at a time; reading every check on
    the head costs two GitHub requests, so the edge reads them only when the engine
    asks (`ReadChecks`): a red one is the head's verdict at once, a green one only
    says the verdict can now be read.
    """

    kind: Literal["checks_completed"] = "checks_completed"
    head_sha: str
    conclusion: CheckConclusion
    names: tuple[str, ...] = ()
    partial: bool = False  # one check's conclusion; the others on the head unread
    repo: str | None = None  # a companion's pull request's head; None: the ticket's own


class PullRequestOpened(Event):
    kind: Literal["pull_request_opened"] = "pull_request_opened"
    number: int
    head_sha: str


class PullRequestClosed(Event):
    kind: Literal["pull_request_closed"] = "pull_request_closed"
    merged: bool
    by: str = ""
    repo: str | None = None  # a companion's pull request; None: the ticket's own


class HeadPushed(Event):
    kind: Literal["head_pushed"] = "head_pushed"
    sha: str
    pusher: str
    repo: str | None = None  # a companion's pull request's head; None: the ticket's own


class BaseConflict(Event):
    """The base moved while the ticket waited and its pull request now conflicts with it."""

    kind: Literal["base_conflict"] = "base_conflict"
    base: str
    base_sha: str
    head_sha: str | None = None  # the head GitHub found conflicting
    files: tuple[str, ...] = ()  # changed by both the base's push and the pull request
    repo: str | None = None  # a companion's pull request conflicts; None: the ticket's own


class BaseBehind(Event):
    """The base moved while GitHub's auto-merge waited, and the pull request is behind it
    where the base's rules want branches up to date: it must be brought up to date."""

    kind: Literal["base_behind"] = "base_behind"
    base: str
    base_sha: str
    head_sha: str  # the head GitHub found behind


class MergeResult(Event):
    kind: Literal["merge_result"] = "merge_result"
    result: Literal[
        "merged",
        "conflict",
        "checks_failed",
        "checks_pending",
        "closed",
        "method_not_allowed",
        "queued",  # the base's rules require the merge queue: the pull request joined it
        "updated",  # brought up to date with its base: the merge waits, pinned to `sha`
        "auto_merge",  # GitHub's auto-merge turned on, pinned to `sha`: GitHub merges it
    ]
    detail: str = ""
    # The merge commit when merged; the head queued, updated to or auto-merged otherwise.
    sha: str | None = None
    repo: str | None = None  # the pull request's repository (None: the ticket's own)


class MergeGroupRequested(Event):
    """GitHub's merge queue built a group for the ticket's pull request (`merge_group`
    `checks_requested`): its commit, whose required checks decide the merge."""

    kind: Literal["merge_group_requested"] = "merge_group_requested"
    group_sha: str
    head_sha: str  # the pull request's head the group was built from
    repo: str | None = None  # a companion's merge queue; None: the ticket's own


class MergeQueueLeft(Event):
    """The pull request left the merge queue unmerged (`pull_request` `dequeued`), with
    GitHub's reason: CI_FAILURE, MERGE_CONFLICT, MANUAL, ..."""

    kind: Literal["merge_queue_left"] = "merge_queue_left"
    reason: str
    by: str = ""
    repo: str | None = None  # a companion's pull request left its queue; None: the ticket's own


class AutoMergeDisabled(Event):
    """GitHub turned the pull request's auto-merge off (`pull_request`
    `auto_merge_disabled`) before it merged: a conflict, or a person; GitHub's reason."""

    kind: Literal["auto_merge_disabled"] = "auto_merge_disabled"
    reason: str
    by: str = ""


class ReconcileTick(Event):
    kind: Literal["reconcile_tick"] = "reconcile_tick"


class RolesInConfig(Event):
    """`.ballet.yml` changed on the default branch: the roles it has now, given to
    each live ticket of the repository (a required role not among them is dropped)."""

    kind: Literal["roles_in_config"] = "roles_in_config"
    roles: tuple[str, ...]
    sha: str  # the default branch's commit that changed it


AnyEvent = Annotated[
    TicketRequested
    | SessionFinished
    | SessionCrashed
    | WorkerAwaited
    | SessionStarted
    | CommandIssued
    | IssueEdited
    | ReviewSubmitted
    | ChecksStarted
    | ChecksCompleted
    | PullRequestOpened
    | CompanionPROpened
    | PullRequestClosed
    | HeadPushed
    | BaseConflict
    | BaseBehind
    | MergeResult
    | MergeGroupRequested
    | MergeQueueLeft
    | AutoMergeDisabled
    | ReconcileTick
    | RolesInConfig,
    Field(discriminator="kind"),
]
