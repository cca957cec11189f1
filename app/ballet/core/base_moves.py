"""The base branch moves while the ticket waits for people or for the merge.

A pull request that waits (a human stage, a review, a person's merge) may fall
behind its base, or come to conflict with it, with nobody at work on it. Behind
but clean, the edge brings it up to date itself where the base's rules want
up-to-date branches (tickets/base_moves.py): no person, and nothing here. A
conflict needs work: it goes to the pipeline's integrator (else to rework,
`implement`) with a `merge_conflict` cause naming the files both sides changed.
From a gate before the integrator, the integrator's `done` brings the ticket back
to that gate (`Record.resume_at`), not to the landing: people decide on the
resolved head, then the ticket lands as it would have. A companion's base moving
into a conflict with its pull request goes the same way, the cause naming that
repository (`BaseConflict.repo`): the integrator brings every repository's branch
up to date, not only the ticket's own.
"""

from __future__ import annotations

from ballet.core import routing, steps
from ballet.core.effects import WithdrawMerge
from ballet.core.events import BaseConflict
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Record, WaitKind
from ballet.core.returns import cause
from ballet.core.tx import Tx

# The waits in which nobody works on the branch. A merge under way is the edge's
# (it answers a conflict itself); checks and questions end by themselves or by a person.
# GitHub's auto-merge waits on the base too: behind, it is brought up to date pinned
# (core/merge_pins.py `base_behind`); conflicting, it is returned as here.
HEEDS_BASE: tuple[WaitKind, ...] = ("approval", "review", "merge", "auto_merge")


def conflict_target(rec: Record) -> str:
    """Where a conflict with the moved base goes: the integrator, else rework."""
    return routing.integrator_stage(rec.pipeline) or routing.rework_stage(rec.pipeline)


def heeds_base(rec: Record) -> bool:
    """Whether a move of the ticket's base concerns it now."""
    w = rec.waiting
    return rec.status == "waiting" and w is not None and w.kind in HEEDS_BASE


def base_conflict(tx: Tx, ev: BaseConflict) -> None:
    rec = tx.rec
    if not heeds_base(rec) or rec.stage is None:
        raise IllegalEvent("a base conflict concerns only a ticket waiting for people or a merge")
    head, pr, where, repo, number = rec.head_sha, "the pull request", "", None, None
    if ev.repo is not None and ev.repo != rec.ticket.repo:
        # A companion's base moved (tickets/base_moves.py): that repository's branch
        # is the integrator's to bring up to date, and the cause names it.
        theirs = next((p for p in rec.companion_prs if p.repo == ev.repo), None)
        if theirs is None or theirs.number is None or theirs.state != "open":
            raise IllegalEvent(f"{ev.repo} has no open pull request of this ticket")
        head, repo, number = theirs.head_sha, ev.repo, theirs.number
        pr, where = f"{ev.repo}#{theirs.number}", f" of {ev.repo}"
    if ev.head_sha is not None and ev.head_sha != head:
        raise IllegalEvent(f"the conflict was found on {ev.head_sha}, but the head is {head}")
    here = rec.stage
    files = ", ".join(f"`{f}`" for f in ev.files) or "files GitHub does not name"
    text = (
        f"`{ev.base}`{where} moved to {ev.base_sha[:12]} while the ticket waited at `{here}`, "
        f"and {pr} now conflicts with it; both changed {files}. Merge `{ev.base}` into the "
        f"branch{where} keeping both intents: the base's change and the ticket's."
    )
    by = f"base:{ev.repo}:{ev.base}" if where else f"base:{ev.base}"
    why = cause("merge_conflict", here, tx.now, by=by, sha=head, text=text, repo=repo, pr=number)
    integrator = routing.integrator_stage(rec.pipeline)
    if rec.waiting is not None and rec.waiting.kind == "auto_merge" and rec.pr_number:
        # GitHub turns it off over the conflict; made sure of, lest the resolution land unseen.
        tx.emit(WithdrawMerge(repo=rec.ticket.repo, number=rec.pr_number))
    steps.settle(tx, "returned", text, causes=(why,), to=conflict_target(rec))
    order = [s.id for s in rec.pipeline.stages]
    ahead = integrator is not None and order.index(here) < order.index(integrator)
    if ahead and tx.rec.stage == integrator and tx.rec.status == "running":
        tx.set(resume_at=here)  # the resolved head goes back to this gate's people
