"""A companion whose base's rules require GitHub's merge queue lands through that queue.

Companions land first, one at a time, in order (core/companion_merges.py). Where a
companion's base requires the queue, the edge enqueues its pull request instead of
merging it (`MergeResult` `queued`, marked with its repository: tickets/merge_queue.py)
and the ticket waits for that queue as it does for its own (core/merge_queue.py). The
queue's `merge_group` `checks_requested` gets Ballet's check runs on the group's commit
in the companion's repository, each as it passed on the pull request's head, or a
ruleset that requires them would hold the group forever; the group merged arrives as
the pull request closed and merged (core/companion_events.py `pr_closed`), and the next
one lands. The pull request leaving its queue unmerged is a merge of that companion
that failed (core/companion_landing.py `not_landed`): red checks on the group or a
conflict with the base return the ticket when nothing landed yet, the cause naming the
repository and the group's commit; once one landed, or for any other reason (a person
took it out), the ticket stops with the question listing what landed, what did not
and why, and `/ballet retry` lands the rest in the same order.

The ticket's own queue is core/merge_queue.py's; its pull request leaving the queue
after companions landed stops the ticket the same way, rather than sending the work
back as if nothing had landed.
"""

from __future__ import annotations

from ballet.core import companion_landing
from ballet.core import merge_queue as own_queue
from ballet.core.companion_merges import QUEUE_WAIT, queued_companion
from ballet.core.events import MergeGroupRequested, MergeQueueLeft
from ballet.core.handlers import IllegalEvent
from ballet.core.record import CompanionPR, Record
from ballet.core.tx import Tx

# GitHub's `pull_request.dequeued` reasons that are a failed merge, as a merge's answer.
_AS_MERGE = {"CI_FAILURE": "checks_failed", "MERGE_CONFLICT": "conflict"}


def group_requested(tx: Tx, ev: MergeGroupRequested) -> None:
    rec = tx.rec
    if _own(rec, ev.repo):
        own_queue.group_requested(tx, ev)
        return
    pr = _in_queue(rec, ev.repo)
    w = rec.waiting
    assert w is not None
    if ev.head_sha != (w.sha or pr.head_sha):
        raise IllegalEvent(f"a merge group of {ev.head_sha} in {pr.repo}, but {w.sha} was queued")
    reason = (
        f"GitHub's merge queue of {pr.repo} to merge {pr.repo}#{pr.number} "
        f"(group {ev.group_sha[:12]})"
    )
    tx.set(waiting=w.model_copy(update={"group_sha": ev.group_sha, "reason": reason}))
    head = w.sha or pr.head_sha
    tx.emit(*own_queue.group_check_runs(rec, ev.group_sha, repo=pr.repo, head=head))


def queue_left(tx: Tx, ev: MergeQueueLeft) -> None:
    rec = tx.rec
    if not _own(rec, ev.repo):
        pr = _in_queue(rec, ev.repo)
    elif any(p.state == "merged" for p in rec.companion_prs):
        # Its companions landed: nothing is undone, and a person decides.
        _waiting_for_own_queue(rec)
        pr = CompanionPR(repo=rec.ticket.repo, head_sha=rec.head_sha or "", number=rec.pr_number)
    else:
        own_queue.queue_left(tx, ev)
        return
    group = rec.waiting.group_sha if rec.waiting else None
    at = f" {group[:12]}" if group else ""
    result = _AS_MERGE.get(ev.reason, "")
    if result == "checks_failed":
        detail = f"required checks failed on GitHub's merge queue's group{at}"
    elif result == "conflict":
        detail = f"GitHub's merge queue found a conflict with the base (group{at})"
    else:
        by = f" by @{ev.by}" if ev.by and ev.reason == "MANUAL" else ""
        result, detail = f"it left GitHub's merge queue unmerged{by} (reason {ev.reason})", ""
    # Red checks are read from the group's commit, where they ran, not the head.
    companion_landing.not_landed(tx, pr, result, detail, sha=group or pr.head_sha)


def _own(rec: Record, repo: str | None) -> bool:
    """The event is of the ticket's own pull request; refused while a companion's queue
    is what the ticket waits for."""
    if repo is not None and repo != rec.ticket.repo:
        return False
    queued = queued_companion(rec)
    if queued is not None:
        raise IllegalEvent(f"the ticket waits for the merge queue of {queued.repo}, not its own")
    return True


def _in_queue(rec: Record, repo: str | None) -> CompanionPR:
    pr = queued_companion(rec)
    if pr is None or pr.repo != repo:
        doing = rec.waiting.kind if rec.waiting else rec.status
        raise IllegalEvent(f"the ticket waits for {doing}, not the merge queue of {repo}")
    return pr


def _waiting_for_own_queue(rec: Record) -> None:
    w = rec.waiting
    if rec.status != "waiting" or w is None or w.kind != QUEUE_WAIT:
        raise IllegalEvent("the ticket does not wait for its merge queue")
