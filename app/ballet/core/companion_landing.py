"""What a merge answers when the ticket has companions (core/companion_merges.py).

A companion's pull request merged: the next one lands, the ticket's own last. One
that cannot land before any other did returns the ticket to rework with the cause,
naming the repository (red required checks, a conflict, a closed pull request),
as the ticket's own would. Once one has landed, nothing is undone and nothing is
hidden: whatever fails after stops the ticket with a question listing what landed,
what did not and why; `/ballet retry` runs the landing again, which merges only
what is still open, in the same order. A review that asked for changes while a
companion's merge ran returns the ticket once it ends, as for the ticket's own. A
companion whose base requires GitHub's merge queue joins it (`queued`), and its
leaving the queue unmerged is read here too (core/companion_queue.py).
"""

from __future__ import annotations

from datetime import timedelta

from ballet.core import forge_waits, handlers, rework, steps
from ballet.core.companion_merges import (
    CHECKS_FIRST,
    QUEUE_WAIT,
    landing_next,
    merge_effect,
    wait_for_companion_checks,
    wait_in_companion_queue,
)
from ballet.core.events import MergeResult, ReconcileTick
from ballet.core.handlers import IllegalEvent
from ballet.core.record import CompanionPR, Record
from ballet.core.returns import ReturnKind, cause
from ballet.core.tx import Tx

_WORDS = {
    "conflict": "a merge conflict",
    "checks_failed": "red required checks",
    "closed": "the pull request was closed",
    "method_not_allowed": "a merge method the repository does not allow",
}
_KINDS: dict[str, ReturnKind] = {
    "conflict": "merge_conflict",
    "checks_failed": "merge_checks_failed",
    "closed": "merge_closed",
}


def merge_result(tx: Tx, ev: MergeResult) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        landed = _landed(rec)
        # Still landing (queued, checks, brought up to date, GitHub's auto-merge on).
        going_on = ("merged", "queued", "checks_pending", "updated", "auto_merge")
        if landed and ev.result not in going_on:
            _stop(tx, f"{rec.ticket.repo}#{rec.pr_number}", _said(ev.result, ev.detail))
            return
        forge_waits.merge_result(tx, ev)
        return
    pr = landing_next(rec)
    w = rec.waiting
    # Its merge queue's wait ends only by the group merged (companion_events.pr_closed).
    awaited = ("merge_result", QUEUE_WAIT) if ev.result == "merged" else ("merge_result",)
    if pr is None or pr.repo != ev.repo or w is None or w.kind not in awaited:
        raise IllegalEvent(f"no merge of {ev.repo} is awaited")
    if ev.result == "merged":
        tx.set(companion_prs=rec.with_companion_pr(pr.model_copy(update={"state": "merged"})))
        if rec.pending_reviews:
            # People asked for changes meanwhile: the rest waits for that rework, and
            # the next landing merges only what is still open.
            rework.apply_pending_reviews(tx)
        else:
            steps.merge_now(tx)  # the next companion, or the ticket's own pull request
    elif ev.result == "queued":
        wait_in_companion_queue(tx, pr, ev.sha)  # its base's rules require the queue
    elif ev.result == "checks_pending" and rec.pending_reviews:
        rework.apply_pending_reviews(tx)
    elif ev.result == "checks_pending":
        wait_for_companion_checks(tx, pr)
    else:
        not_landed(tx, pr, ev.result, ev.detail, sha=pr.head_sha)


def not_landed(tx: Tx, pr: CompanionPR, result: str, detail: str, *, sha: str | None) -> None:
    """A companion's pull request did not land (`result`: GitHub's merge's answer, or the
    way its merge queue let it go; or the ticket's own, once its companions landed).
    Before any other landed, a conflict, red checks or a closed pull request return the
    ticket with the cause naming the repository (`sha`: the commit the red checks ran
    on); once one landed, or for anything else, a person decides."""
    rec = tx.rec
    where = f"{pr.repo}#{pr.number}"
    if _landed(rec) or result not in _KINDS:
        _stop(tx, where, _said(result, detail))
        return
    said = f": {detail}" if detail else ""
    summary = f"merge of {where} returned by {_WORDS[result]}{said}"
    here = rec.stage or ""
    # The repository and pull request: the next session's job reads its checks there.
    why = cause(_KINDS[result], here, tx.now, by=f"stage:{here}", sha=sha, text=summary,
                repo=pr.repo, pr=pr.number)  # fmt: skip
    steps.settle(tx, "returned", summary, causes=(why, *rec.pending_reviews))
    tx.set(pending_reviews=())


def tick(tx: Tx, ev: ReconcileTick) -> None:
    """A companion's merge held for its checks is tried again; any other wait is
    settled past its timeout as before (`handlers.wait_timeout`)."""
    rec, w = tx.rec, tx.rec.waiting
    pr = landing_next(rec)
    held = w is not None and w.kind == "merge_result" and w.reason.startswith(CHECKS_FIRST)
    if held and pr is not None and w is not None and ev.now < w.since + _timeout(rec):
        tx.emit(merge_effect(rec, pr))
        return
    handlers.wait_timeout(tx, ev)


def _timeout(rec: Record) -> timedelta:
    return timedelta(minutes=rec.pipeline.stage(rec.stage or "").timeout_minutes)


def _landed(rec: Record) -> list[str]:
    return [f"{p.repo}#{p.number}" for p in rec.companion_prs if p.state == "merged"]


def _said(result: str, detail: str) -> str:
    return _WORDS.get(result, result) + (f" ({detail})" if detail else "")


def _stop(tx: Tx, where: str, why: str) -> None:
    """Part of the change landed: a person decides; nothing is undone."""
    rec = tx.rec
    left = [f"{p.repo}#{p.number}" for p in rec.companion_prs if p.state != "merged"]
    rest = [x for x in (*left, f"{rec.ticket.repo}#{rec.pr_number}") if x != where]
    landed = _landed(rec)
    steps.ask(
        tx,
        "landing stopped part way: "
        + (f"landed {', '.join(landed)}; " if landed else "nothing landed; ")
        + f"{where} did not land: {why}"
        + (f"; not tried yet: {', '.join(rest)}" if rest else "")
        + ". Fix it, then `/ballet retry` lands what is left, in the same order",
    )
