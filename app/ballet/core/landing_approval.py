"""People decide what lands: the approval a landing waits for (policy `merge: approved`).

Under the default policy a ticket's landing (an `action: merge` stage, or an
integrator's `done`) first waits for a person: an approving pull-request review of
the head commit by someone with write permission (or one of the pipeline's
`approvers:`), or `/ballet approve` from such a person. An approval holds only for
the commit it was given for: a new head asks again, as GitHub's "dismiss stale
approvals" does. `merge: auto` lands with no person; `merge: manual` waits for a
person to merge on GitHub. The wait is an `approval` wait at a stage that lands, so
it is heeded like a human stage's (the base moving, the ballet:question label) and
has no timeout.

A ticket with companions lands only when each companion's open pull request is
approved too, at its head, by an approving review of someone with write permission
on THAT repository (core/companion_events.py): each repository's writers decide
what lands in it, and the ticket's own approval speaks for the ticket's repository
alone.
"""

from __future__ import annotations

from ballet.core import routing
from ballet.core.record import CompanionPR, Record
from ballet.core.runs import wait
from ballet.core.tx import Tx

COMMAND = "/ballet approve"


def needs_approval(rec: Record) -> bool:
    """The landing must wait for a person: the policy asks for one and no approval
    holds for the head."""
    return rec.policy.merge == "approved" and (not head_approved(rec) or bool(unapproved(rec)))


def unapproved(rec: Record) -> tuple[CompanionPR, ...]:
    """The companions' open pull requests whose head no writer there approved yet."""
    return tuple(
        p
        for p in rec.companion_prs
        if p.state == "open"
        and p.number is not None
        and (p.approval is None or p.approval.sha != p.head_sha)
    )


def head_approved(rec: Record) -> bool:
    a = rec.approval
    return a is not None and a.sha is not None and a.sha == rec.head_sha


def at_landing(rec: Record) -> bool:
    """The ticket waits, at a stage that lands, for people to decide (an approval,
    or a person's merge) rather than for GitHub."""
    w = rec.waiting
    if rec.status != "waiting" or w is None or rec.stage is None:
        return False
    return w.kind in ("approval", "merge") and routing.lands(rec.pipeline.stage(rec.stage))


def awaiting_approval(rec: Record) -> bool:
    w = rec.waiting
    return at_landing(rec) and w is not None and w.kind == "approval"


def await_approval(tx: Tx, *, ask: bool = True) -> None:
    """Wait for a person's approval of the head; with `ask`, a comment on the pull
    request says whom it asks and how (the tracking comment says it either way)."""
    rec = tx.rec
    who = rec.pipeline.approvers or ()
    wait(tx, "approval", _reason(rec), who, COMMAND)
    if ask:
        sha = rec.head_sha or "head"
        tx.comment("question", _request(rec), extra=f"landing-approval:{sha[:12]}")


def _reason(rec: Record) -> str:
    head = f" {rec.head_sha[:12]}" if rec.head_sha else ""
    own = (
        f"a person to approve the head{head} before it lands: an approving review of the "
        "pull request, or `/ballet approve`"
    )
    left = unapproved(rec)
    if not left:
        return own
    theirs = f"{_companions(left)}, each by an approving review of a writer there"
    if head_approved(rec):
        return f"a person to approve the companions' pull requests before they land: {theirs}"
    return f"{own}; and {theirs}"


def _companions(prs: tuple[CompanionPR, ...]) -> str:
    return ", ".join(f"{p.repo}#{p.number} at {p.head_sha[:12]}" for p in prs)


def _who(rec: Record) -> tuple[str, str]:
    """(whom to mention, who may approve, in words)."""
    approvers = rec.pipeline.approvers
    if approvers:
        named = ", ".join(f"@{a}" for a in approvers)
        return " ".join(f"@{a}" for a in approvers), f"one of the pipeline's approvers ({named})"
    return f"@{rec.ticket.asked}", "anyone with write permission on the repository"


def _request(rec: Record) -> str:
    mention, who = _who(rec)
    head = f"`{rec.head_sha}`" if rec.head_sha else "the head commit"
    return (
        f"{mention} the agents are done and this pull request is ready to land; Ballet "
        f"waits for a person to decide. **Approve it** — a review approving {head} on the "
        f"pull request, or `/ballet approve` — and Ballet lands it by the repository's "
        f"rules; `/ballet reject <reason>` sends it back for rework.\n\n"
        f"Who can approve: {who}. An approval holds for this commit only: a new push "
        f"asks again." + _companions_asked(rec)
    )


def _companions_asked(rec: Record) -> str:
    left = unapproved(rec)
    if not left:
        return ""
    return (
        f"\n\nThe ticket's pull requests in its companions land with it, each once a "
        f"person with write permission there approves its head in a review: {_companions(left)}."
    )


def waits_for_checks_to_land(rec: Record) -> bool:
    """The landing of an approved head waits for its checks (policy merge=approved)."""
    w = rec.waiting
    if rec.policy.merge != "approved" or w is None or w.kind != "checks" or rec.stage is None:
        return False
    return routing.lands(rec.pipeline.stage(rec.stage))
