"""Landing a ticket's companions' pull requests first, in the order `companions:` gives.

`steps.merge_now`, wherever the ticket's own pull request is to be merged, asks
here first: the first companion pull request still open is merged instead, and
the ticket waits for that merge; each one merged brings the next, the ticket's own
last (the repository whose `.ballet.yml` names the others depends on them). What a
companion's merge answers is read by `core/companion_landing.py`; a companion whose
base's rules require GitHub's merge queue joins it, and the ticket waits for that
queue (`core/companion_queue.py`).
"""

from __future__ import annotations

from ballet.core.effects import ConvertToDraft, MarkReadyForReview, MergePR
from ballet.core.record import CompanionPR, Record, WaitKind
from ballet.core.runs import wait
from ballet.core.tx import Tx

# A companion's merge that waits for its checks: tried again at each reconciler tick.
CHECKS_FIRST = "checks on "
# A merge queue's wait, as the ticket's own (core/merge_queue.py, which imports steps).
QUEUE_WAIT: WaitKind = "merge_queue"
AnyReview = MarkReadyForReview | ConvertToDraft


def landing_next(rec: Record) -> CompanionPR | None:
    """The companion pull request that lands next: the first not merged yet."""
    return next((pr for pr in rec.companion_prs if pr.state != "merged"), None)


def land_first(tx: Tx) -> bool:
    """Merge the next companion's pull request, if one is left (True: the ticket now
    waits for that merge, not its own)."""
    pr = landing_next(tx.rec)
    if pr is None or pr.number is None:
        return False
    tx.emit(merge_effect(tx.rec, pr))
    wait(tx, "merge_result", f"the merge of {pr.repo}#{pr.number} (companions land first)",
         (), "", sha=pr.head_sha)  # fmt: skip
    return True


def merge_effect(rec: Record, pr: CompanionPR) -> MergePR:
    assert pr.number is not None
    strategy = rec.pipeline.merge
    return MergePR(
        repo=pr.repo, number=pr.number, sha=pr.head_sha, method=strategy.method,
        delete_branch=strategy.delete_branch, companion=True,
    )  # fmt: skip


def wait_for_companion_checks(tx: Tx, pr: CompanionPR) -> None:
    wait(tx, "merge_result", f"{CHECKS_FIRST}{pr.repo}#{pr.number} to finish before it lands",
         (), "", sha=pr.head_sha)  # fmt: skip


def wait_in_companion_queue(tx: Tx, pr: CompanionPR, head_sha: str | None) -> None:
    """Its pull request joined its base's merge queue with `head_sha`: wait for its group."""
    wait(tx, QUEUE_WAIT, f"GitHub's merge queue of {pr.repo} to merge {pr.repo}#{pr.number} "
         "(companions land first)", (), "", sha=head_sha or pr.head_sha)  # fmt: skip


def queued_companion(rec: Record) -> CompanionPR | None:
    """The companion whose merge queue the ticket waits for; None where it waits for
    none, or for its own pull request's queue (its companions landed)."""
    w, pr = rec.waiting, landing_next(rec)
    if rec.status != "waiting" or w is None or w.kind != QUEUE_WAIT or pr is None:
        return None
    return pr


def in_review_with_the_ticket(rec: Record, *, ready: bool) -> list[AnyReview]:
    """The companions' open pull requests follow the ticket's own into review (`ready`)
    and back to a draft: people are asked to read the whole change, and GitHub says a
    companion's branch is `behind` its base only once it is no draft (a base move
    brings it up to date where the rules want that: tickets/base_moves.py)."""
    review = MarkReadyForReview if ready else ConvertToDraft
    return [
        review(repo=p.repo, number=p.number)
        for p in rec.companion_prs
        if p.state == "open" and p.number is not None
    ]
