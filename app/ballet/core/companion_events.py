"""What people do on a companion's pull request (core/companions.py) while the ticket runs.

The edge hears a companion's pull-request deliveries through the record's index of
them and hands on three kinds, marked with the companion's repository: a review,
the pull request closed, and its checks finished (core/companion_checks.py). A
writer's review asking for changes returns the ticket as one on its own pull request
does (at once when it waits, once the running session or merge ends otherwise), its
cause naming the repository. Where people decide (policy merge: approved), an
approving review of its head by a writer of that repository is the approval it lands
on (core/landing_approval.py); under any other policy an approval there decides
nothing. A companion's pull request a person merged is one landing skips; one closed
unmerged is marked so, and the next session that pushes the branch there gets a
pull request again.
"""

from __future__ import annotations

from ballet.core import companion_landing, handlers, landing_approval, reviews, steps
from ballet.core.companion_merges import landing_next
from ballet.core.events import (
    WRITE_PERMISSIONS,
    AnyEvent,
    ChecksCompleted,
    HeadPushed,
    MergeGroupRequested,
    MergeQueueLeft,
    MergeResult,
    PullRequestClosed,
    ReviewSubmitted,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Approval, Record
from ballet.core.tx import Tx

_HEARD = (
    ReviewSubmitted, PullRequestClosed, ChecksCompleted, HeadPushed, MergeGroupRequested,
    MergeQueueLeft,
)  # fmt: skip


def companion_event(event: AnyEvent, repo: str) -> AnyEvent | None:
    """The event of a companion's pull request the ticket hears, marked with its
    repository (a review, its close, its checks finished: core/companion_checks.py; a
    new head, its merge queue's group and leaving it: core/companion_queue.py); None
    for any other (edits)."""
    if isinstance(event, _HEARD):
        return event.model_copy(update={"repo": repo})
    return None


def review_submitted(tx: Tx, ev: ReviewSubmitted) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        reviews.review_submitted(tx, ev)
        return
    at = _companion_at(rec, ev.repo)
    pr = rec.companion_prs[at]
    if ev.state == "approved" and rec.policy.merge == "approved":
        _approved(tx, ev, at)
        return
    if ev.state != "changes_requested":
        raise IllegalEvent(
            f"a {ev.state} review of {ev.repo}#{pr.number} decides nothing (policy "
            f"merge={rec.policy.merge})"
        )
    # Its words and the repository go back, as of the ticket's head (a review gate reads
    # it as of the change now); the cause keeps the companion's repository and pull
    # request, where the next session's job reads its inline comments.
    said = f" {ev.body}" if ev.body else ""
    own = ev.model_copy(
        update={"commit_id": rec.head_sha,
                "body": f"(a review of {ev.repo}#{pr.number}, at {pr.head_sha[:12]}){said}"}
    )  # fmt: skip
    reviews.review_submitted(tx, own)


def _approved(tx: Tx, ev: ReviewSubmitted, at: int) -> None:
    """A person with write permission on the companion's repository (its permission,
    read there) approved its head: kept until a new head there lapses it; a landing
    waiting for people goes on once nothing else is left to approve."""
    rec = tx.rec
    pr = rec.companion_prs[at]
    named = f"{pr.repo}#{pr.number}"
    if ev.author_is_bot:
        raise IllegalEvent(f"a bot's approval of {named} decides nothing: a person's does")
    if ev.permission not in WRITE_PERMISSIONS:
        raise IllegalEvent(
            f"an approval of {named} by @{ev.author} counts only with write permission on "
            f"{pr.repo} (they have {ev.permission})"
        )
    approvers = rec.pipeline.approvers
    if approvers is not None and ev.author.lower() not in {a.lower() for a in approvers}:
        raise IllegalEvent(f"@{ev.author} is not among the pipeline's approvers")
    if ev.commit_id != pr.head_sha:
        raise IllegalEvent(
            f"an approval of {ev.commit_id}, but the head of {named} is {pr.head_sha}"
        )
    approved = pr.model_copy(
        update={"approval": Approval(by=ev.author, sha=pr.head_sha, at=tx.now)}
    )
    tx.set(companion_prs=rec.with_companion_pr(approved))
    if landing_approval.awaiting_approval(rec):
        steps.land(tx)  # lands, or waits on for what is still unapproved


def pr_closed(tx: Tx, ev: PullRequestClosed) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        handlers.pr_closed(tx, ev)
        return
    at = _companion_at(rec, ev.repo)
    pr = rec.companion_prs[at]
    state = "merged" if ev.merged else "closed"
    if pr.state == state:
        raise IllegalEvent(f"{ev.repo}#{pr.number} is {state} already")
    w = rec.waiting
    landing = w is not None and w.kind in ("merge_result", "merge_queue")
    if ev.merged and landing_next(rec) == pr and landing:
        # Heard before Ballet's own merge answered (or a person merged it meanwhile), or
        # its merge queue merged it: the landing goes on, and an answer still to come
        # then finds this merge no longer awaited.
        merged = MergeResult(now=ev.now, result="merged", repo=ev.repo)
        companion_landing.merge_result(tx, merged)
        return
    tx.set(companion_prs=rec.with_companion_pr(pr.model_copy(update={"state": state})))


def names_pr(rec: Record, repo: str, number: int) -> bool:
    """`repo`'s pull request `number` is the ticket's own, or one of its companions'."""
    if repo == rec.ticket.repo:
        return rec.pr_number == number
    return any((p.repo, p.number) == (repo, number) for p in rec.companion_prs)


def _companion_at(rec: Record, repo: str) -> int:
    """Where in the record the ticket's pull request in `repo` is; an event about a
    repository the ticket has none in is refused."""
    at = next((i for i, p in enumerate(rec.companion_prs) if p.repo == repo), None)
    if at is None:
        raise IllegalEvent(f"{repo} has no pull request of this ticket")
    return at
