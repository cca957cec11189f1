"""When a role's sign-off stops being needed mid-ticket, and where a signer's
`changes` goes.

Only people remove a role: a writer waives it (`/ballet signoff waive`), or
`.ballet.yml` on the default branch no longer has it (`RolesInConfig`, which
the edge gives every live ticket of the repository when the file changes). Either
way the ticket stops waiting for that role: its session is cancelled, its open
question is set aside, and the gate goes on without it, now or, for a paused
ticket, on `/ballet resume` (`verbs.rerun` asks `missing_signoffs` first).
"""

from __future__ import annotations

from ballet.core import routing, steps
from ballet.core.effects import CancelSession
from ballet.core.events import RolesInConfig
from ballet.core.handlers import IllegalEvent
from ballet.core.returns import SignoffChange
from ballet.core.tx import Tx


def let_go(tx: Tx, role: str, outcome: str, summary: str) -> None:
    """The ticket no longer waits for `role`, which is no longer required."""
    rec = tx.rec
    if rec.signoff_role != role:
        return  # the role was not being asked: the gate skips it when it comes
    qa = rec.open_question
    if qa is not None and qa.role == role and rec.status in ("waiting", "paused"):
        done = qa.model_copy(update={"answer": f"(superseded: {summary})", "answered_by": ""})
        tx.set(questions=(*rec.questions[:-1], done))
        if rec.status == "paused":
            tx.set(waiting=None)  # so `/ballet resume` goes on instead of asking again
    if rec.status == "paused":
        return  # `/ballet resume` goes on: `verbs.rerun` finds the role no longer missing
    run = rec.open_run
    if rec.status == "running" and run is not None and run.job_key is not None:
        tx.emit(CancelSession(repo=rec.ticket.repo, job_key=run.job_key))
        steps.close_run(tx, outcome, summary)
    tx.set(signoff_role=None)
    steps.proceed(tx, rec.gate_target or routing.DONE)


def roles_in_config(tx: Tx, ev: RolesInConfig) -> None:
    """`.ballet.yml` changed on the default branch: a required role it no longer has is
    no longer required (the pinned pipeline keeps everything else as it was)."""
    rec = tx.rec
    deleted = [r for r in rec.signoffs_required if r not in ev.roles]
    if not deleted:
        raise IllegalEvent("every required role is still in the configuration")
    sha = ev.sha[:12]
    tx.set(
        signoffs_required=tuple(r for r in rec.signoffs_required if r not in deleted),
        signoffs_given=tuple(s for s in rec.signoffs_given if s.role not in deleted),
        signoff_changes=(
            *rec.signoff_changes,
            *(
                SignoffChange(role=r, action="deleted", by=f"config:{sha}", at=tx.now)
                for r in deleted
            ),
        ),
    )
    names = ", ".join(f"`{r}`" for r in deleted)
    tx.announce(
        "deleted",
        f"`.ballet.yml` on the default branch ({sha}) no longer has the roles {names}:"
        " their sign-off is no longer needed.",
    )
    for role in deleted:
        let_go(tx, role, "deleted", f"the role was deleted from .ballet.yml ({sha})")
