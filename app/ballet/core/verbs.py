"""What each slash command does once `machine` has checked who may give it.

A verb returns a refusal (a sentence saying why and what to do instead)
before changing anything, or None once it has acted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ballet.core import commands, landing_approval, render, rework, routing, signoffs, steps
from ballet.core.commands import Command
from ballet.core.config import Policy
from ballet.core.effects import CancelSession
from ballet.core.events import CommandIssued
from ballet.core.record import Approval
from ballet.core.returns import SignoffChange, cause
from ballet.core.tx import Tx


def approve(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    if rec.waiting is None or rec.waiting.kind != "approval":
        return (
            "nothing waits for an approval now; `/ballet status` shows what the ticket waits for."
        )
    head = rec.head_sha or ev.head_sha
    if cmd.sha and (head is None or not head.startswith(cmd.sha)):
        return (
            f"the approval names {cmd.sha}, but the head is {head or 'unknown'}; "
            "review the new head and approve again."
        )
    tx.set(approval=Approval(by=ev.author, sha=head, at=tx.now))
    if landing_approval.awaiting_approval(rec):
        steps.land(tx)  # a person decided: it lands by the repository's rules
        return None
    note = f": {cmd.text}" if cmd.text else ""
    steps.settle(tx, "approve", f"approved by @{ev.author} at {head or 'an unknown head'}{note}")
    return None


def reject(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    if rec.waiting is None or rec.waiting.kind != "approval":
        return (
            "nothing waits for an approval now; `/ballet status` shows what the ticket waits for."
        )
    head = rec.head_sha or ev.head_sha
    why = cause("rejected", rec.stage or "", tx.now, by=ev.author, sha=head, text=cmd.text)
    # A landing's outcomes are `merged` and `returned`: a rejected landing returns the work.
    outcome = "returned" if landing_approval.awaiting_approval(rec) else "reject"
    steps.settle(tx, outcome, f"rejected by @{ev.author}: {cmd.text}", causes=(why,))
    return None


def answer(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    qa = rec.open_question
    if rec.waiting is None or rec.waiting.kind != "question" or qa is None:
        return "no question is open; `/ballet status` shows what the ticket waits for."
    done = qa.model_copy(update={"answer": cmd.text, "answered_by": ev.author})
    tx.set(questions=(*rec.questions[:-1], done))
    rerun(tx, qa.stage, qa.role, qa.phase, f"@{ev.author} answered: {cmd.text}")
    return None


def rerun(tx: Tx, stage: str | None, role: str | None, phase: str | None, note: str) -> None:
    """Run the stage (or sign-off) again in a new session; a person asked for it,
    so the budget does not stop it."""
    steps.close_run(tx, "retried", note)
    rec = tx.rec
    if role is not None and role in rec.missing_signoffs():
        steps.start_session(tx, rec.stage or "", None, note=note, role=role, bypass_budget=True)
    elif role is not None:
        # Waived, or deleted from `.ballet.yml`, since: the gate goes on without it.
        tx.set(signoff_role=None)
        steps.proceed(tx, rec.gate_target or routing.DONE, note=note)
    elif stage is None:
        steps.go(tx, rec.pipeline.stages[0].id, note=note)
    elif routing.needs_signoffs(rec.pipeline, stage) and rec.missing_signoffs():
        # A sign-off required again since the gate opened is asked before the stage runs.
        steps.proceed(tx, stage, note=note)
    else:
        steps.enter(tx, stage, note=note, phase=phase, bypass_budget=True)


def retry(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    cancel_running(tx)
    qa = rec.open_question
    if qa is not None and rec.status == "waiting":
        done = qa.model_copy(update={"answer": "(retried)", "answered_by": ev.author})
        tx.set(questions=(*rec.questions[:-1], done))
    rerun(tx, rec.stage, rec.signoff_role, rec.phase, f"@{ev.author} asked for a retry")
    return None


def cancel_running(tx: Tx) -> None:
    run = tx.rec.open_run
    if tx.rec.status == "running" and run is not None and run.job_key is not None:
        tx.emit(CancelSession(repo=tx.rec.ticket.repo, job_key=run.job_key))


def cancel(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    cancel_running(tx)
    steps.end(tx, "cancelled", f"cancelled by @{ev.author}", by=ev.author)
    return None


def pause(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    cancel_running(tx)
    if rec.status == "running":
        steps.close_run(tx, "paused", f"paused by @{ev.author}")
    tx.set(status="paused", paused_from=rec.status)
    return None


def resume(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    w = rec.waiting
    if rec.pending_reviews:
        # People asked for changes while it was paused: that is where it resumes.
        tx.set(status=rec.paused_from or "waiting", paused_from=None)
        rework.apply_pending_reviews(tx)
        return None
    if rec.paused_from == "waiting" and w is not None and w.kind in ("question", "approval"):
        tx.set(status="waiting", paused_from=None)
        return None
    tx.set(paused_from=None)
    rerun(tx, rec.stage, rec.signoff_role, rec.phase, f"@{ev.author} resumed the ticket")
    return None


def signoff_require(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    role = cmd.role or ""
    if role not in rec.pipeline.roles:
        known = ", ".join(rec.pipeline.roles) or "none"
        return f"`{role}` is not a role of this pipeline (roles: {known}); add it under `roles:`."
    if role in rec.signoffs_required:
        return f"`{role}` is already required."
    tx.set(
        signoffs_required=(*rec.signoffs_required, role),
        signoffs_waived=tuple(r for r in rec.signoffs_waived if r != role),
        signoff_changes=(*rec.signoff_changes, change(role, "required", ev.author, tx.now)),
    )
    tx.announce(f"+{role}", f"@{ev.author} requires sign-off from `{role}`.")
    return None


def signoff_waive(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    role = cmd.role or ""
    if role not in rec.signoffs_required:
        required = ", ".join(rec.signoffs_required) or "none"
        return f"`{role}` is not a required sign-off (required: {required})."
    # A sign-off holds while its role is required, and no longer: required again,
    # the role is asked again.
    tx.set(
        signoffs_required=tuple(r for r in rec.signoffs_required if r != role),
        signoffs_waived=(*rec.signoffs_waived, role),
        signoffs_given=tuple(s for s in rec.signoffs_given if s.role != role),
        signoff_changes=(*rec.signoff_changes, change(role, "waived", ev.author, tx.now)),
    )
    tx.announce(f"-{role}", f"@{ev.author} waived the sign-off from `{role}`.")
    signoffs.let_go(tx, role, "waived", f"waived by @{ev.author}")
    return None


def policy(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    rec = tx.rec
    new = Policy(review=cmd.review or rec.policy.review, merge=cmd.merge or rec.policy.merge)
    tx.set(policy=new)
    tx.reply(ev.comment_id, "policy", f"Policy is now review={new.review} merge={new.merge}.")
    w = rec.waiting
    here = rec.pipeline.stage(rec.stage) if rec.stage else None
    if (
        rec.status == "waiting"
        and w
        and w.kind == "approval"
        and here
        and not routing.is_on(here, new)
    ):
        # The human stage just got switched off: go on as if it were never there.
        steps.close_run(tx, "skipped", "switched off by the policy")
        target, _ = routing.skip_off_stages(rec.pipeline, new, here.id)
        steps.go(tx, target)
    elif new.merge != rec.policy.merge and landing_approval.at_landing(rec):
        # The landing waits for people: it goes on as the new policy says.
        steps.land(tx)
    return None


def status(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    tx.reply(ev.comment_id, "status", render.status(tx.rec))
    return None


def help_(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    tx.reply(ev.comment_id, "help", commands.HELP_TEXT)
    return None


def change(
    role: str, action: Literal["required", "waived"], by: str, at: datetime
) -> SignoffChange:
    return SignoffChange(role=role, action=action, by=by, at=at)
