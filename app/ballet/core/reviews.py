"""Pull-request reviews: the gate of a `wait_for: review` stage, the approval a
landing waits for (policy merge=approved), and a review asking for changes that
steers the ticket wherever it is.

A review counts only from a person (never a bot) with write permission, read
the way slash commands read it; an approval (at a review gate, or kept for the
landing) only from the pipeline's `approvers:` when it names them, and only for
the head commit it names
(`commit_id`): an approval of an older head does not pass, and a new head lapses
an approval given earlier (`handlers.head_pushed`). A review that does not
count raises `IllegalEvent` with why, which the edge logs; nothing changes.
A bot's verdict is the exception (unless BALLET_TRUSTED_BOTS lists it, and then
it is read as a person's): it changes nothing either, but the bot is told so on
the pull request, in one comment per bot that each later review edits.
"""

from __future__ import annotations

from ballet.core import landing_approval, render, rework, steps
from ballet.core.effects import MarkerKey, PostComment
from ballet.core.events import WRITE_PERMISSIONS, ReviewSubmitted
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Approval, Record
from ballet.core.returns import PENDING_MAX, ReturnCause, cause
from ballet.core.tx import Tx

VERDICTS = ("approved", "changes_requested")


def review_submitted(tx: Tx, ev: ReviewSubmitted) -> None:
    rec = tx.rec
    if ev.author_is_bot and ev.state in VERDICTS:
        _refuse_the_bot(tx, ev)
        return
    refusal = _who_may_not(rec, ev)
    if refusal:
        raise IllegalEvent(refusal)
    w = rec.waiting
    if rec.status == "waiting" and w is not None and w.kind == "review":
        _at_the_gate(tx, ev)
        return
    if ev.state == "approved":
        _approved(tx, ev)
        return
    if rec.pipeline.reviews == "ignore":
        raise IllegalEvent("the pipeline says `reviews: ignore`")
    c = review_cause(rec, ev)
    if rec.status in ("running", "paused") or (
        w is not None and w.kind in ("merge_result", "merge_queue")
    ):
        # The running session (or merge) ends first; its outcome's next stage gives way.
        kept = tuple(p for p in rec.pending_reviews if p.review_id != ev.review_id)
        tx.set(pending_reviews=(*kept, c)[-PENDING_MAX:])
        return
    rework.rework(tx, (c,), f"changes requested in a review by @{ev.author}")


def _who_may_not(rec: Record, ev: ReviewSubmitted) -> str | None:
    if ev.state not in VERDICTS:
        return f"a {ev.state} review by @{ev.author} is not a verdict"
    if ev.permission not in WRITE_PERMISSIONS:
        return (
            f"a review by @{ev.author} counts only with write permission "
            f"(they have {ev.permission})"
        )
    return None


def _refuse_the_bot(tx: Tx, ev: ReviewSubmitted) -> None:
    marker = MarkerKey(ticket=tx.rec.key, kind="notice", extra=f"review-by:{ev.author}")
    body = (
        f"⚠️ The review by `{ev.author}` ({ev.state.replace('_', ' ')}) does not count: it "
        "is a bot's, and only people's reviews steer this ticket. Ask a person with write "
        "permission to review; or, if this bot's reviews should count, Ballet's operator "
        "lists it in BALLET_TRUSTED_BOTS."
    )
    tx.emit(
        PostComment(
            repo=tx.rec.ticket.repo,
            number=tx.number,
            marker=marker,
            body=render.with_marker(body, marker.render()),
        )
    )


def _not_for_the_head(rec: Record, ev: ReviewSubmitted) -> str | None:
    """Why this review decides nothing for the head, or None."""
    approvers = rec.pipeline.approvers
    if approvers is not None and ev.author.lower() not in {a.lower() for a in approvers}:
        return f"@{ev.author} is not among the pipeline's approvers ({', '.join(approvers)})"
    if ev.commit_id is None or ev.commit_id != rec.head_sha:
        return (
            f"the review by @{ev.author} is of {ev.commit_id or 'an unknown commit'}, "
            f"but the head is {rec.head_sha}: it must review the head"
        )
    return None


def _approved(tx: Tx, ev: ReviewSubmitted) -> None:
    """An approval of the head, wherever the ticket is, is kept (until a new head
    lapses it); a landing that waits for people lands on it (core/landing_approval.py)."""
    rec = tx.rec
    refusal = _not_for_the_head(rec, ev)
    if refusal:
        raise IllegalEvent(refusal)
    assert ev.commit_id is not None
    tx.set(approval=Approval(by=ev.author, sha=ev.commit_id, at=tx.now))
    if landing_approval.awaiting_approval(rec):
        steps.land(tx)


def _at_the_gate(tx: Tx, ev: ReviewSubmitted) -> None:
    rec = tx.rec
    refusal = _not_for_the_head(rec, ev)
    if refusal:
        raise IllegalEvent(refusal)
    assert ev.commit_id is not None
    summary = f"review by @{ev.author} of {ev.commit_id[:12]}: {ev.state}"
    if ev.state == "approved":
        tx.set(approval=Approval(by=ev.author, sha=ev.commit_id, at=tx.now))
        steps.settle(tx, "approve", summary)
    else:
        steps.settle(tx, "changes_requested", summary, causes=(review_cause(rec, ev),))


def review_cause(rec: Record, ev: ReviewSubmitted) -> ReturnCause:
    # A companion's review (core/companion_events.py) is read there, on its pull request.
    pr = next((p.number for p in rec.companion_prs if p.repo == ev.repo), None)
    return cause(
        "changes_requested",
        rec.stage or "",
        ev.now,
        by=ev.author,
        sha=ev.commit_id,
        text=ev.body,
        review_id=ev.review_id,
        repo=ev.repo,
        pr=pr if ev.repo is not None else None,
    )
