"""What the forge's own events do to a waiting ticket: checks starting and
finishing, and the result of a merge Ballet asked for (or its place in GitHub's
merge queue, then `merge_queue.py`). `machine.TABLE` says
in which status each runs; a refused event raises `IllegalEvent`.
"""

from __future__ import annotations

from ballet.core import landing_approval, merge_pins, merge_queue, rework, steps
from ballet.core.effects import ReadChecks
from ballet.core.events import PASSING_CONCLUSIONS, ChecksCompleted, ChecksStarted, MergeResult
from ballet.core.handlers import IllegalEvent
from ballet.core.merge_refused import method_refused
from ballet.core.record import ChecksSeen, Record
from ballet.core.returns import ReturnKind, cause
from ballet.core.tx import Tx


def _waiting_for(rec: Record, *kinds: str) -> None:
    if rec.waiting is None or rec.waiting.kind not in kinds:
        doing = rec.waiting.kind if rec.waiting else rec.status
        raise IllegalEvent(f"the ticket waits for {doing}, not {' or '.join(kinds)}")


def checks_started(tx: Tx, ev: ChecksStarted) -> None:
    rec = tx.rec
    if ev.head_sha != rec.head_sha or (rec.checks is not None and rec.checks.sha == ev.head_sha):
        raise IllegalEvent(f"checks starting for {ev.head_sha} are not news")
    tx.set(checks=ChecksSeen(sha=ev.head_sha))
    w = rec.waiting
    if rec.status == "waiting" and w is not None and w.kind == "checks":
        tx.set(waiting=w.model_copy(update={"checks_started": True}))


def checks_completed(tx: Tx, ev: ChecksCompleted) -> None:
    rec = tx.rec
    if ev.head_sha != rec.head_sha:
        raise IllegalEvent(f"checks for {ev.head_sha}, but the head is {rec.head_sha}")
    passed = ev.conclusion in PASSING_CONCLUSIONS
    names = ", ".join(ev.names) or "all checks"
    if ev.partial and passed:
        _one_check_green(tx, ev, names)
        return
    seen = ChecksSeen(
        sha=ev.head_sha, outcome="pass" if passed else "fail", summary=f"{names}: {ev.conclusion}"
    )
    tx.set(checks=seen)
    w = rec.waiting
    if rec.status == "waiting" and w is not None and w.kind == "checks":
        merging = rec.stage is not None and rec.pipeline.stage(rec.stage).action == "merge"
        if merging and passed:
            steps.land(tx)  # which asks again for an approval a new head lapsed
        elif merging:
            steps.settle(
                tx,
                "returned",
                f"red checks on the head: {seen.summary}",
                causes=(steps.red_checks(tx, "merge_checks_failed", seen.summary),),
            )
        else:
            assert seen.outcome is not None
            red = () if passed else (steps.red_checks(tx, "checks_failed", seen.summary),)
            steps.settle(tx, seen.outcome, seen.summary, causes=red)
    elif landing_approval.awaiting_approval(rec) and not passed:
        # Nobody is asked to approve a head whose checks are red: the work goes back.
        red_cause = steps.red_checks(tx, "merge_checks_failed", seen.summary)
        steps.settle(tx, "returned", f"red checks on the head: {seen.summary}", causes=(red_cause,))


def _one_check_green(tx: Tx, ev: ChecksCompleted, names: str) -> None:
    """One check passed: the head's verdict is read only if a checks wait needs it
    now; otherwise it is remembered as readable, and a wait entered later reads it."""
    known = tx.rec.checks
    if known is not None and known.sha == ev.head_sha and known.outcome == "fail":
        raise IllegalEvent(f"the checks on {ev.head_sha} are already red")
    tx.set(checks=ChecksSeen(sha=ev.head_sha, outcome="finished", summary=f"{names}: passed"))
    w = tx.rec.waiting
    if tx.rec.status == "waiting" and w is not None and w.kind == "checks":
        tx.emit(ReadChecks(repo=tx.rec.ticket.repo, sha=ev.head_sha))


def merge_result(tx: Tx, ev: MergeResult) -> None:
    w = tx.rec.waiting
    if ev.result == "updated" and w is not None and w.kind == merge_pins.AUTO_MERGE_WAIT:
        merge_pins.updated(tx, ev.sha)  # brought up to date while auto-merge waits
        return
    _waiting_for(tx.rec, "merge_result")
    if ev.result == "merged":
        # The head stays the PR's: the merge commit is the base's, and moving the head
        # there would leave the integrate check on the merged PR as superseded.
        merge = f" as {ev.sha[:12]}" if ev.sha else ""
        steps.settle(tx, "merged", f"merged by Ballet{merge}")
        return
    if ev.result == "updated":
        # Brought up to date by the landing: the merge waits, pinned to the new head.
        merge_pins.updated(tx, ev.sha)
        return
    if ev.result == "auto_merge":
        merge_pins.auto_merging(tx, ev.sha)  # GitHub merges it (core/merge_pins.py)
        return
    if ev.result == "queued":
        # The base's rules require GitHub's merge queue: its group decides (core/merge_queue.py).
        merge_queue.queued(tx, ev.sha or tx.rec.head_sha)
        return
    if ev.result == "checks_pending" and tx.rec.pending_reviews:
        # Nothing was merged, and people asked for changes meanwhile: those come first.
        rework.apply_pending_reviews(tx)
        return
    if ev.result == "checks_pending":
        # GitHub holds the merge for required checks still running: wait for them.
        steps.wait_checks_before_merge(tx)
        return
    if ev.result == "method_not_allowed":
        # No rework changes a repository setting: trying again would fail the same way.
        steps.ask(tx, method_refused(tx.rec.pipeline.merge.method, ev.detail))
        return
    words = {
        "conflict": "a merge conflict",
        "checks_failed": "red required checks",
        "closed": "the pull request was closed",
    }
    detail = f": {ev.detail}" if ev.detail else ""
    summary = f"merge returned by {words[ev.result]}{detail}"
    kind: ReturnKind = (
        "merge_conflict"
        if ev.result == "conflict"
        else "merge_checks_failed"
        if ev.result == "checks_failed"
        else "merge_closed"
    )
    here = tx.rec.stage or ""
    why = cause(kind, here, tx.now, by=f"stage:{here}", sha=tx.rec.head_sha, text=summary)
    # Reviews that asked for changes during the merge go back with it.
    steps.settle(tx, "returned", summary, causes=(why, *tx.rec.pending_reviews))
    tx.set(pending_reviews=())
