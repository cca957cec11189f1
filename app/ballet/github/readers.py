"""One reader per (event, action): a delivery's lenient `Payload` into intents.

`translate.TABLE` says which reader reads which delivery. A reader returns
intents, or an `Ignored` with the reason, so every delivery has an answer
that can be logged and tested. Reading is pure: no API call is made here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast, get_args

from ballet.core.commands import parse_commands
from ballet.core.events import (
    CheckConclusion,
    ChecksCompleted,
    ChecksStarted,
    HeadPushed,
    IssueEdited,
    MergeGroupRequested,
    MergeQueueLeft,
    PullRequestClosed,
    ReviewSubmitted,
)
from ballet.github.forge import AppIdentity
from ballet.github.intents import (
    BaseMoved,
    ConfigChanged,
    ForTicket,
    Ignored,
    InstallationChanged,
    Intent,
    IssueCommands,
    StartTicket,
    TicketTarget,
    ValidateConfigInPR,
)
from ballet.github.merge_queue import pull_of_queue_ref
from ballet.github.payloads import Account, Envelope
from ballet.github.webhook_models import AppRef, Payload, PullRef

CONFIG_PATH = ".ballet.yml"
SKILLS_DIR = ".ballet/skills/"
_CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)\b", re.IGNORECASE)
_CONCLUSIONS: tuple[str, ...] = get_args(CheckConclusion)
# Conclusions GitHub documents beyond the check-run ones: a workflow that could
# not start failed; a `stale` suite was superseded and says nothing (ignored).
_ALIASES = {"startup_failure": "failure"}


@dataclass(frozen=True)
class Context:
    env: Envelope
    payload: Payload
    installation_id: int
    repo: str
    app: AppIdentity
    now: datetime
    trusted_bots: frozenset[str] = frozenset()  # BALLET_TRUSTED_BOTS, casefolded


Translator = Callable[[Context], tuple[Intent, ...]]


def _is_bot(c: Context, account: Account | None) -> bool:
    """A bot (a Bot account, or a login ending in `[bot]`) that BALLET_TRUSTED_BOTS does not
    list: the core refuses its label, commands and reviews with a reply. A listed bot is read
    as a person, of whatever permission it has. Trust is decided here, at the edge, rather
    than in the core: the list is the deployment's, not the ticket's, so it stays out of
    events and records, and every core rule reads the one fact it needs."""
    if account is None:
        return False
    login = account.login or ""
    bot = account.type == "Bot" or login.endswith("[bot]")
    return bot and login.casefold() not in c.trusted_bots


def login_of(account: Account | None) -> str:
    return (account.login if account else None) or ""


# -- issues ---------------------------------------------------------------------


def issue_labeled(c: Context) -> tuple[Intent, ...]:
    issue, label = c.payload.issue, c.payload.label
    if issue is None or issue.number is None or label is None or not label.name:
        return (Ignored("issues.labeled without an issue number or label name"),)
    if issue.pull_request is not None:
        return (Ignored("a pull request was labelled; tickets start from issues"),)
    if label.name.startswith("ballet:") or by_ballet(c.env.sender, None, c.app):
        # Ballet's status labels: no trigger label is spelt like them.
        return (Ignored("Ballet's own label"),)
    return (
        StartTicket(
            installation_id=c.installation_id,
            repo=c.repo,
            issue=issue.number,
            title=issue.title or "",
            body=issue.body or "",
            author=login_of(issue.user),
            labels=tuple(lbl.name for lbl in issue.labels or () if lbl and lbl.name),
            label=label.name,
            requested_by=login_of(c.env.sender),
            requested_by_is_bot=_is_bot(c, c.env.sender),
            default_branch=c.env.repository.default_branch if c.env.repository else None,
            now=c.now,
        ),
    )


def issue_edited(c: Context) -> tuple[Intent, ...]:
    """An issue's title or body edited: its ticket, if it has one, hears it only from
    a writer (the service asks the editor's permission; core/edits.py decides)."""
    issue, changes = c.payload.issue, c.payload.changes
    if issue is None or issue.number is None:
        return (Ignored("issues.edited without an issue number"),)
    if issue.pull_request is not None:
        return (Ignored("a pull request was edited; a ticket's text is its issue's"),)
    if changes is not None and changes.title is None and changes.body is None:
        return (Ignored("issues.edited changed neither the title nor the body"),)
    if not any(lbl and lbl.name for lbl in issue.labels or ()):
        # A ticket's issue carries its trigger label: an unlabelled issue's edit is
        # no ticket's, and costs no look-up.
        return (Ignored("an unlabelled issue was edited; it is no ticket"),)
    edited = IssueEdited(
        now=c.now,
        title=issue.title or "",
        body=issue.body or "",
        editor=login_of(c.env.sender),
        editor_is_bot=_is_bot(c, c.env.sender),
    )
    return (ForTicket(c.installation_id, TicketTarget(repo=c.repo, issue=issue.number), edited),)


def comment_created(c: Context) -> tuple[Intent, ...]:
    issue, comment = c.payload.issue, c.payload.comment
    if issue is None or issue.number is None or comment is None or comment.id is None:
        return (Ignored("issue_comment.created without an issue or comment id"),)
    if by_ballet(comment.user, comment.performed_via_github_app, c.app):
        return (Ignored("Ballet's own comment"),)
    commands = parse_commands(comment.body or "")
    if not commands:
        return (Ignored("the comment holds no /ballet command"),)
    on_pr = issue.pull_request is not None
    # On a pull request, `issue.body` is the PR's body: Ballet's says which issue it closes.
    linked = _CLOSES.search(issue.body or "") if on_pr else None
    target = TicketTarget(
        repo=c.repo,
        issue=None if on_pr else issue.number,
        pr=issue.number if on_pr else None,
        linked_issue=int(linked[1]) if linked else None,
    )
    return (
        IssueCommands(
            installation_id=c.installation_id,
            target=target,
            on_pr=on_pr,
            comment_id=comment.id,
            author=login_of(comment.user),
            author_is_bot=_is_bot(c, comment.user),
            commands=commands,
            now=c.now,
        ),
    )


def by_ballet(user: Account | None, via: AppRef | None, app: AppIdentity) -> bool:
    if via is not None and via.id == app.app_id:
        return True
    login = login_of(user)
    return login.endswith("[bot]") and login.casefold() == app.bot_login.casefold()


# -- pull requests ----------------------------------------------------------------


def pr_target(c: Context) -> TicketTarget | None:
    pr = c.payload.pull_request
    number = (pr.number if pr else None) or c.payload.number
    if number is None:
        return None
    linked = _CLOSES.search(pr.body or "") if pr else None
    return TicketTarget(
        repo=c.repo,
        pr=number,
        branch=pr.head.ref if pr and pr.head else None,
        linked_issue=int(linked[1]) if linked else None,
    )


def pr_closed(c: Context) -> tuple[Intent, ...]:
    target, pr = pr_target(c), c.payload.pull_request
    if target is None or pr is None:
        return (Ignored("pull_request.closed without a pull request number"),)
    merged = bool(pr.merged)
    by = login_of(pr.merged_by) if merged and pr.merged_by else login_of(c.env.sender)
    return (
        ForTicket(c.installation_id, target, PullRequestClosed(now=c.now, merged=merged, by=by)),
    )


def pr_pushed(c: Context) -> tuple[Intent, ...]:
    target, pr = pr_target(c), c.payload.pull_request
    sha = pr.head.sha if pr and pr.head else None
    if target is None or target.pr is None or not sha:
        return (Ignored(f"pull_request.{c.env.action} without a number or head sha"),)
    # A PR that changes no file (the one Ballet opens on its empty seed commit) cannot
    # touch the config: asking GitHub for its files would be a request for nothing.
    untouched = pr is not None and pr.changed_files == 0
    checks = () if untouched else (ValidateConfigInPR(c.installation_id, c.repo, target.pr, sha),)
    if c.env.action != "synchronize":
        return checks or (Ignored(f"pull_request.{c.env.action} changes no file"),)
    pushed = HeadPushed(now=c.now, sha=sha, pusher=login_of(c.env.sender))
    return (ForTicket(c.installation_id, target, pushed), *checks)


def pr_dequeued(c: Context) -> tuple[Intent, ...]:
    """The pull request left the merge queue: merged ones leave by `closed`, not this."""
    target = pr_target(c)
    if target is None:
        return (Ignored("pull_request.dequeued without a pull request number"),)
    left = MergeQueueLeft(now=c.now, reason=c.payload.reason or "", by=login_of(c.env.sender))
    return (ForTicket(c.installation_id, target, left),)


def merge_group_requested(c: Context) -> tuple[Intent, ...]:
    """A merge group wants its checks: the pull request it was built from is in its ref."""
    group = c.payload.merge_group
    pull = pull_of_queue_ref(group.head_ref or "") if group else None
    if group is None or not group.head_sha or pull is None:
        return (Ignored("merge_group.checks_requested without a group's sha or queue ref"),)
    number, head = pull
    event = MergeGroupRequested(now=c.now, group_sha=group.head_sha, head_sha=head)
    return (ForTicket(c.installation_id, TicketTarget(repo=c.repo, pr=number), event),)


def review_submitted(c: Context) -> tuple[Intent, ...]:
    target, review = pr_target(c), c.payload.review
    state = (review.state or "").lower() if review else ""
    if target is None or review is None or state not in _REVIEW_STATES:
        return (Ignored(f"pull_request_review.submitted with state {state or 'none'!r}"),)
    event = ReviewSubmitted(
        now=c.now,
        state=cast(Literal["approved", "changes_requested", "commented", "dismissed"], state),
        author=login_of(review.user),
        author_is_bot=_is_bot(c, review.user),
        commit_id=review.commit_id,
        review_id=review.id,
        body=review.body or "",
    )
    return (ForTicket(c.installation_id, target, event),)


_REVIEW_STATES = ("approved", "changes_requested", "commented", "dismissed")


# -- checks -------------------------------------------------------------------------


def _checks_target(
    c: Context, prs: tuple[PullRef | None, ...] | None, branch: str | None
) -> TicketTarget:
    number = next((p.number for p in prs or () if p and p.number is not None), None)
    return TicketTarget(repo=c.repo, pr=number, branch=branch)


def _checks(
    c: Context, sha: str | None, conclusion: str | None, name: str, target: TicketTarget
) -> tuple[Intent, ...]:
    conclusion = _ALIASES.get(conclusion or "", conclusion)
    if not sha or conclusion not in _CONCLUSIONS:
        return (Ignored(f"checks finished without a sha or with conclusion {conclusion!r}"),)
    event = ChecksCompleted(
        now=c.now,
        head_sha=sha,
        conclusion=cast(CheckConclusion, conclusion),
        names=(name,) if name else (),
        # One suite or status finished: the engine asks for the head's verdict
        # (ReadChecks) when a wait needs it, not at every check's end.
        partial=True,
    )
    return (ForTicket(c.installation_id, target, event),)


def check_suite_completed(c: Context) -> tuple[Intent, ...]:
    suite = c.payload.check_suite
    if suite is None:
        return (Ignored("check_suite.completed without a check suite"),)
    if suite.app is not None and suite.app.id == c.app.app_id:
        return (Ignored("Ballet's own check suite"),)
    name = (suite.app.slug or suite.app.name or "") if suite.app else ""
    target = _checks_target(c, suite.pull_requests, suite.head_branch)
    return _checks(c, suite.head_sha, suite.conclusion, name, target)


def _started(
    c: Context, sha: str | None, app: AppRef | None, target: TicketTarget
) -> tuple[Intent, ...]:
    if app is not None and app.id == c.app.app_id:
        return (Ignored("Ballet's own checks"),)
    if not sha:
        return (Ignored("checks started without a head sha"),)
    return (ForTicket(c.installation_id, target, ChecksStarted(now=c.now, head_sha=sha)),)


def check_suite_started(c: Context) -> tuple[Intent, ...]:
    suite = c.payload.check_suite
    if suite is None:
        return (Ignored("check_suite without a check suite"),)
    target = _checks_target(c, suite.pull_requests, suite.head_branch)
    return _started(c, suite.head_sha, suite.app, target)


def check_run_created(c: Context) -> tuple[Intent, ...]:
    run = c.payload.check_run
    if run is None:
        return (Ignored("check_run.created without a check run"),)
    suite = run.check_suite
    app = run.app or (suite.app if suite else None)
    prs = run.pull_requests or (suite.pull_requests if suite else None)
    target = _checks_target(c, prs, suite.head_branch if suite else None)
    return _started(c, run.head_sha, app, target)


def workflow_run_requested(c: Context) -> tuple[Intent, ...]:
    run = c.payload.workflow_run
    if run is None:
        return (Ignored("workflow_run.requested without a workflow run"),)
    target = _checks_target(c, run.pull_requests, run.head_branch)
    return _started(c, run.head_sha, None, target)


def workflow_run_completed(c: Context) -> tuple[Intent, ...]:
    run = c.payload.workflow_run
    if run is None:
        return (Ignored("workflow_run.completed without a workflow run"),)
    target = _checks_target(c, run.pull_requests, run.head_branch)
    return _checks(c, run.head_sha, run.conclusion, run.name or "", target)


def status(c: Context) -> tuple[Intent, ...]:
    p = c.payload
    if p.state == "pending":
        return (Ignored("a pending commit status"),)
    conclusion = {"success": "success", "failure": "failure", "error": "failure"}.get(p.state or "")
    branch = next((b.name for b in p.branches or () if b.name), None)
    return _checks(c, p.sha, conclusion, p.context or "", TicketTarget(repo=c.repo, branch=branch))


# -- repository and installation bookkeeping --------------------------------------------


def push(c: Context) -> tuple[Intent, ...]:
    """A branch moved: tickets based on it look at their pull request (tickets/base_moves.py);
    on the default branch, a changed `.ballet.yml` or skill is news for live tickets too."""
    p = c.payload
    ref, after = p.ref or "", p.after or ""
    if not ref.startswith("refs/heads/") or not after.strip("0"):
        return (Ignored("a push that deletes a branch, or moves a tag"),)
    touched = {
        path
        for commit in p.commits or ()
        for path in (*(commit.added or ()), *(commit.modified or ()), *(commit.removed or ()))
    }
    branch = ref.removeprefix("refs/heads/")
    moved = BaseMoved(c.installation_id, c.repo, branch, after, tuple(sorted(touched)))
    default = c.env.repository.default_branch if c.env.repository else None
    if branch != default:
        return (moved,)
    if not any(path == CONFIG_PATH or path.startswith(SKILLS_DIR) for path in touched):
        return (moved,)
    return (ConfigChanged(c.installation_id, c.repo, after), moved)


def installation(c: Context) -> tuple[Intent, ...]:
    env, p = c.env, c.payload
    added = p.repositories_added if env.event == "installation_repositories" else p.repositories
    return (
        InstallationChanged(
            installation_id=c.installation_id,
            action=env.action or "",
            added=tuple(r.full_name for r in added or () if r.full_name),
            removed=tuple(r.full_name for r in p.repositories_removed or () if r.full_name),
        ),
    )
