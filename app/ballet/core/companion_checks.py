"""A companion's checks heard while the ticket waits to land (issue 37 item 3).

GitHub tells of a check suite or status finishing on a companion's pull request's
head as it does on the ticket's own; the edge hands it on marked with the
companion's repository (core/companion_events.py). A red one returns the ticket
where a red one on its own head does — while it waits for checks before its merge,
or for a person's approval to land — its cause naming the repository and the
pull request. A companion's merge held for its checks (core/companion_merges.py)
is tried again at once, green or red: the merge reads them all and lands it or
returns the ticket, rather than waiting for the reconciler's next tick. Anywhere
else (a session runs, the ticket is paused or waits for something else) a red
verdict is kept on the record and returns the ticket when it comes to land
(core/companion_reds.py); a green one after it clears it (a re-run passed).
"""

from __future__ import annotations

from ballet.core import forge_waits, landing_approval, steps
from ballet.core.companion_merges import CHECKS_FIRST, landing_next, merge_effect
from ballet.core.companion_reds import red_cause
from ballet.core.events import PASSING_CONCLUSIONS, ChecksCompleted
from ballet.core.handlers import IllegalEvent
from ballet.core.record import ChecksSeen, CompanionPR, Record
from ballet.core.tx import Tx


def checks_completed(tx: Tx, ev: ChecksCompleted) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        forge_waits.checks_completed(tx, ev)
        return
    pr = next((p for p in rec.companion_prs if p.repo == ev.repo), None)
    if pr is None or pr.number is None:
        raise IllegalEvent(f"{ev.repo} has no pull request of this ticket")
    named = f"{pr.repo}#{pr.number}"
    if ev.head_sha != pr.head_sha:
        raise IllegalEvent(f"checks for {ev.head_sha}, but the head of {named} is {pr.head_sha}")
    w = rec.waiting
    if landing_next(rec) == pr and w is not None and w.kind == "merge_result":
        if not w.reason.startswith(CHECKS_FIRST):
            raise IllegalEvent(f"the merge of {named} is under way; it reads its checks")
        tx.emit(merge_effect(rec, pr))  # held for these checks: it reads them now
        return
    names = ", ".join(ev.names) or "all checks"
    held = pr.checks if pr.checks is not None and pr.checks.sha == pr.head_sha else None
    if ev.conclusion in PASSING_CONCLUSIONS:
        if ev.partial or held is None or held.outcome != "fail":
            raise IllegalEvent(f"green checks on {named} are read when it lands")
        _keep(tx, pr, ChecksSeen(sha=pr.head_sha, outcome="pass", summary=f"{names}: passed"))
        return  # every check finished green since: nothing red is held any more
    seen = ChecksSeen(sha=pr.head_sha, outcome="fail", summary=f"{names}: {ev.conclusion}")
    acts = _waits_for_checks_to_merge(rec) or landing_approval.awaiting_approval(rec)
    if held == seen and not acts:
        raise IllegalEvent(f"red checks on {named} are held already")
    _keep(tx, pr, seen)
    if acts:
        why = red_cause(rec, pr, seen.summary, tx.now)
        steps.settle(tx, "returned", why.text, causes=(why,))


def _keep(tx: Tx, pr: CompanionPR, seen: ChecksSeen) -> None:
    """The verdict on the companion's head, kept: a red one returns the ticket when
    it comes to land (`steps.land`, core/companion_reds.py)."""
    tx.set(companion_prs=tx.rec.with_companion_pr(pr.model_copy(update={"checks": seen})))


def _waits_for_checks_to_merge(rec: Record) -> bool:
    """The ticket's own merge waits for its checks (its companions landed, or have
    not been tried: a red one of theirs must not land the rest)."""
    w = rec.waiting
    return (
        rec.status == "waiting"
        and w is not None
        and w.kind == "checks"
        and rec.stage is not None
        and rec.pipeline.stage(rec.stage).action == "merge"
    )
