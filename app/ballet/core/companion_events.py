"""What people do on a companion's pull request (core/companions.py) while the ticket runs.

The edge hears a companion's pull-request deliveries through the record's index of
them and hands on three kinds, marked with the companion's repository: a review,
the pull request closed, and its checks finished. A writer's review asking for changes returns the ticket
as one on its own pull request does (at once when it waits, once the running session
or merge ends otherwise), its cause naming the repository; an approval there decides
nothing (people approve the ticket's own pull request). A companion's pull request a
person merged is one landing skips; one closed unmerged is marked so, and the next
session that pushes the branch there gets a pull request again. Its checks finished
are heard too (core/companion_checks.py): a red one returns a ticket waiting to land.
"""

from __future__ import annotations

from ballet.core import companion_landing, handlers, reviews
from ballet.core.companion_merges import landing_next
from ballet.core.events import (
    AnyEvent,
    ChecksCompleted,
    MergeResult,
    PullRequestClosed,
    ReviewSubmitted,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Record
from ballet.core.tx import Tx


def companion_event(event: AnyEvent, repo: str) -> AnyEvent | None:
    """The event of a companion's pull request the ticket hears, marked with its
    repository (a review, its close, its checks finished: core/companion_checks.py);
    None for any other (pushes, edits)."""
    if isinstance(event, ReviewSubmitted | PullRequestClosed | ChecksCompleted):
        return event.model_copy(update={"repo": repo})
    return None


def review_submitted(tx: Tx, ev: ReviewSubmitted) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        reviews.review_submitted(tx, ev)
        return
    pr = next((p for p in rec.companion_prs if p.repo == ev.repo), None)
    if pr is None:
        raise IllegalEvent(f"{ev.repo} has no pull request of this ticket")
    if ev.state != "changes_requested":
        raise IllegalEvent(
            f"a {ev.state} review of {ev.repo}#{pr.number} decides nothing: people approve "
            f"the ticket's own pull request"
        )
    # Its words and the repository go back, as of the ticket's head (a review gate reads
    # it as of the change now); its inline comments are the companion's, not read here.
    said = f" {ev.body}" if ev.body else ""
    own = ev.model_copy(
        update={"repo": None, "review_id": None, "commit_id": rec.head_sha,
                "body": f"(a review of {ev.repo}#{pr.number}, at {pr.head_sha[:12]}){said}"}
    )  # fmt: skip
    reviews.review_submitted(tx, own)


def pr_closed(tx: Tx, ev: PullRequestClosed) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        handlers.pr_closed(tx, ev)
        return
    at = next((i for i, p in enumerate(rec.companion_prs) if p.repo == ev.repo), None)
    if at is None:
        raise IllegalEvent(f"{ev.repo} has no pull request of this ticket")
    pr = rec.companion_prs[at]
    state = "merged" if ev.merged else "closed"
    if pr.state == state:
        raise IllegalEvent(f"{ev.repo}#{pr.number} is {state} already")
    w = rec.waiting
    if ev.merged and landing_next(rec) == pr and w is not None and w.kind == "merge_result":
        # Heard before Ballet's own merge answered (or a person merged it meanwhile):
        # the landing goes on, and that answer then finds this merge no longer awaited.
        merged = MergeResult(now=ev.now, result="merged", repo=ev.repo)
        companion_landing.merge_result(tx, merged)
        return
    prs = rec.companion_prs
    tx.set(companion_prs=(*prs[:at], pr.model_copy(update={"state": state}), *prs[at + 1 :]))


def names_pr(rec: Record, repo: str, number: int) -> bool:
    """`repo`'s pull request `number` is the ticket's own, or one of its companions'."""
    if repo == rec.ticket.repo:
        return rec.pr_number == number
    return any((p.repo, p.number) == (repo, number) for p in rec.companion_prs)
