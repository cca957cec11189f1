"""The merge Ballet asked for is pinned to one head, and only that head lands.

`steps.merge_now` asks the edge to merge the head a person approved (under `merge:
auto`, the head of the moment), and the ticket's `merge_result` wait names it
(`Waiting.sha`). While that merge waits for checks the head may move:

- by the landing's own `update-branch` (the base's rules want the branch up to date):
  the edge pins its waiting merge to the commit GitHub made and says so (`MergeResult`
  `updated`); the wait moves to that head, and its push asks nobody again: the update
  brings in only what the base already has.
- by anyone else's push: the edge's waiting merge, or GitHub's auto-merge, is withdrawn
  (`WithdrawMerge`), and the new head waits for a person's approval again (`merge:
  approved`) or, under `merge: auto`, is merged in its turn. Nothing lands that no
  person approved.

Where auto-merge is the repository's way (`MergeResult` `auto_merge`: it allows
auto-merge and the base's rules hold the pull request back), GitHub itself merges the
pinned head once those rules let it. The ticket waits for that (`auto_merge`), hears
the merge as the pull request closed and merged, and needs no Ballet up meanwhile: the
wait and its pin are in the record on GitHub, the pending merge in GitHub itself.
The base moving on while it waits (tickets/base_moves.py): behind where the rules want
branches up to date (`BaseBehind`), which GitHub never merges by itself, the pinned head
is brought up to date (`UpdateBranch`) and the pin moves to the commit GitHub made
(`updated`), auto-merge staying on; into a conflict, GitHub turns auto-merge off
(`AutoMergeDisabled`) and the work goes where base conflicts go (core/base_moves.py),
once, whichever of the two Ballet hears first. Auto-merge turned off for any other
reason (a person did) asks a question, and `/ballet retry` lands it again.
"""

from __future__ import annotations

from ballet.core import base_moves, companion_heads, landing_approval, steps
from ballet.core.effects import UpdateBranch, WithdrawMerge
from ballet.core.events import AutoMergeDisabled, BaseBehind, HeadPushed
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Record, WaitKind
from ballet.core.returns import cause
from ballet.core.tx import Tx

AUTO_MERGE_WAIT: WaitKind = "auto_merge"
PINNED_WAITS: tuple[WaitKind, ...] = ("merge_result", AUTO_MERGE_WAIT)


def pinned_to(rec: Record) -> str | None:
    """The head the ticket's own merge is pinned to while it waits, if any."""
    w = rec.waiting
    if rec.status != "waiting" or w is None or w.kind not in PINNED_WAITS:
        return None
    return w.sha


def updated(tx: Tx, sha: str | None) -> None:
    """The landing brought the branch up to date: its merge waits, pinned to `sha`
    (GitHub's auto-merge, still on, merges that head)."""
    w = tx.rec.waiting
    assert w is not None
    head = sha[:12] if sha else "the updated head"
    reason = f"checks on {head} (brought up to date with its base) before merging"
    if w.kind == AUTO_MERGE_WAIT:
        reason = f"GitHub to merge {head} (brought up to date with its base) once its checks pass"
    tx.set(waiting=w.model_copy(update={"sha": sha, "reason": reason}))


def base_behind(tx: Tx, ev: BaseBehind) -> None:
    """GitHub's auto-merge waits on a head its base's rules hold back as behind: brought
    up to date, pinned, so only the head approved is (core/merge_pins.py `updated`)."""
    rec, pin = tx.rec, pinned_to(tx.rec)
    w = rec.waiting
    if w is None or w.kind != AUTO_MERGE_WAIT or pin is None or rec.pr_number is None:
        raise IllegalEvent("only a ticket waiting for GitHub's auto-merge is brought up to date")
    if ev.head_sha != pin:
        # Someone pushed since the approval: that push withdraws the merge and asks.
        raise IllegalEvent(f"the head behind is {ev.head_sha}, not the pinned {pin}")
    tx.emit(UpdateBranch(repo=rec.ticket.repo, number=rec.pr_number, sha=pin))


def auto_merging(tx: Tx, sha: str | None) -> None:
    """GitHub's auto-merge is on for `sha`: GitHub merges it when the base's rules let it."""
    head = f" {sha[:12]}" if sha else ""
    reason = (
        f"GitHub to merge the pull request's head{head} once the base's rules let it (auto-merge)"
    )
    steps.wait(tx, AUTO_MERGE_WAIT, reason, (), "", sha=sha or tx.rec.head_sha)


def head_pushed(tx: Tx, ev: HeadPushed) -> None:
    """A new head while the ticket waits: its own, while its merge is pinned, here;
    any other as before (core/companion_heads.py, handlers.head_pushed)."""
    rec = tx.rec
    pin = pinned_to(rec)
    own = ev.repo is None or ev.repo == rec.ticket.repo
    if not own or pin is None or rec.pr_number is None:
        companion_heads.head_pushed(tx, ev)
        return
    if ev.sha == rec.head_sha:
        raise IllegalEvent(f"{ev.sha} is already the known head")
    tx.set(head_sha=ev.sha)
    if ev.sha == pin:
        return  # the landing's own update-branch: its merge is pinned there already
    tx.emit(WithdrawMerge(repo=rec.ticket.repo, number=rec.pr_number))
    if rec.policy.merge != "approved":
        steps.merge_now(tx)  # merge: auto: no person decides; the new head merges
        return
    # An approval holds for the commit it was given for: the new head is asked about.
    tx.set(approval=None)
    landing_approval.await_approval(tx)


def auto_merge_disabled(tx: Tx, ev: AutoMergeDisabled) -> None:
    rec = tx.rec
    w = rec.waiting
    if rec.status != "waiting" or w is None or w.kind != AUTO_MERGE_WAIT:
        raise IllegalEvent("the ticket does not wait for GitHub's auto-merge")
    by = f" by @{ev.by}" if ev.by else ""
    said = f"GitHub turned auto-merge off{by}: {ev.reason or 'no reason given'}"
    if "conflict" not in ev.reason.lower():
        steps.ask(tx, f"{said}. `/ballet retry` lands it again, or say what to do")
        return
    here = rec.stage or ""
    summary = f"merge returned: {said}"
    why = cause("merge_conflict", here, tx.now, by=f"stage:{here}", sha=w.sha, text=summary)
    # The base moved into it (its push may be heard after): where base conflicts go.
    to = base_moves.conflict_target(rec)
    steps.settle(tx, "returned", summary, causes=(why, *rec.pending_reviews), to=to)
    tx.set(pending_reviews=())
