"""A ticket whose pull request lands through GitHub's merge queue.

Where the base branch's rules require the queue, the edge enqueues the pull
request instead of merging it (`MergeResult` `queued`) and the ticket waits for
the queue. The queue merges a *group*, a commit of its own on a
`gh-readonly-queue/...` ref, once the base's required checks pass on it; Ballet's
own check runs (its stages' and sign-offs') are among them where the rules
require them, so Ballet reports on the group's commit what passed on the pull
request's head, or the queue waits for them forever (policy-bot #800).

The group merged arrives as the pull request closed and merged (`handlers.pr_closed`),
as a person's merge does. The pull request leaving the queue unmerged returns the
ticket with the cause: red checks on the group's commit are read for the next
session as red checks on the head are; a conflict with the base is a merge
conflict; anything else (a person took it out) is a question naming GitHub's reason.
"""

from __future__ import annotations

from ballet.core import check_runs, steps
from ballet.core.effects import SetCheckRun
from ballet.core.events import MergeGroupRequested, MergeQueueLeft
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Record, StageRun, WaitKind
from ballet.core.returns import ReturnKind, cause
from ballet.core.tx import Tx

QUEUE_WAIT: WaitKind = "merge_queue"
# GitHub's `pull_request.dequeued` reasons that send the work back, and as what.
_RETURNS: dict[str, tuple[ReturnKind, str]] = {
    "CI_FAILURE": ("merge_checks_failed", "required checks failed on the merge queue's group"),
    "MERGE_CONFLICT": ("merge_conflict", "the merge queue found a conflict with the base"),
}


def queued(tx: Tx, head_sha: str | None) -> None:
    """The pull request joined the queue with `head_sha`: wait for its group's fate."""
    steps.wait(
        tx, QUEUE_WAIT, "GitHub's merge queue to merge the pull request", (), "", sha=head_sha
    )


def _waiting_in_queue(rec: Record) -> None:
    w = rec.waiting
    if rec.status != "waiting" or w is None or w.kind != QUEUE_WAIT:
        doing = w.kind if w else rec.status
        raise IllegalEvent(f"the ticket waits for {doing}, not the merge queue")


def group_requested(tx: Tx, ev: MergeGroupRequested) -> None:
    rec = tx.rec
    _waiting_in_queue(rec)
    w = rec.waiting
    assert w is not None
    if ev.head_sha != (w.sha or rec.head_sha):
        raise IllegalEvent(f"a merge group of {ev.head_sha}, but {w.sha} was queued")
    reason = f"GitHub's merge queue to merge the pull request (group {ev.group_sha[:12]})"
    tx.set(waiting=w.model_copy(update={"group_sha": ev.group_sha, "reason": reason}))
    tx.emit(*group_check_runs(rec, ev.group_sha))


def group_check_runs(
    rec: Record, group_sha: str, *, repo: str | None = None, head: str | None = None
) -> list[SetCheckRun]:
    """Ballet's check runs for the group's commit: each name's last verdict on the head
    (`repo` and `head`: a companion's queue, its pull request's head)."""
    head = head or rec.head_sha
    where = f" on the pull request's head {head[:12]}" if head else ""
    last: dict[str, StageRun] = {}
    for run in rec.history:
        if run.end is not None and run.outcome != "superseded":
            last[check_runs.name_of(run)] = run
    return [
        SetCheckRun(
            repo=repo or rec.ticket.repo,
            ticket=rec.key,
            name=name,
            head_sha=group_sha,
            status="completed",
            conclusion=check_runs.conclusion_of(run.outcome),
            summary=f"**{run.outcome}**{where}" + (f": {run.summary}" if run.summary else ""),
        )
        for name, run in last.items()
    ]


def queue_left(tx: Tx, ev: MergeQueueLeft) -> None:
    rec = tx.rec
    _waiting_in_queue(rec)
    w = rec.waiting
    assert w is not None
    by = f" by @{ev.by}" if ev.by and ev.reason == "MANUAL" else ""
    if ev.reason not in _RETURNS:
        steps.ask(
            tx,
            f"the pull request left GitHub's merge queue unmerged{by} (reason {ev.reason}):"
            " `/ballet retry` queues it again, or say what to do",
        )
        return
    kind, words = _RETURNS[ev.reason]
    group = w.group_sha
    summary = f"merge returned: {words}" + (f" ({group[:12]})" if group else "")
    here = rec.stage or ""
    # Red checks are read from the group's commit, where they ran, not the head.
    why = cause(kind, here, tx.now, by=f"stage:{here}", sha=group or rec.head_sha, text=summary)
    steps.settle(tx, "returned", summary, causes=(why, *rec.pending_reviews))
    tx.set(pending_reviews=())
