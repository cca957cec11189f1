"""What each accepted event does. `machine.TABLE` says which handler runs in
which status; a handler raises `IllegalEvent` when a guard the table cannot
express refuses the event (before changing anything).
"""

from __future__ import annotations

from datetime import timedelta

from ballet.core import budgets, landing_approval, render, rework, routing, steps
from ballet.core.effects import (
    CancelSession,
    OpenBranchAndDraftPR,
    UpsertTrackingComment,
)
from ballet.core.events import (
    HeadPushed,
    PullRequestClosed,
    PullRequestOpened,
    ReconcileTick,
    SessionFinished,
    SessionStarted,
    TicketRequested,
    WorkerAwaited,
)
from ballet.core.limits import TITLE_MAX, clip, clip_handoff
from ballet.core.pinned_text import pin
from ballet.core.record import Record, SignOff, TicketRef
from ballet.core.report import Handoff, Report, Usage
from ballet.core.returns import SignoffChange, cause
from ballet.core.session_spec import SIGNOFF_TIMEOUT_MINUTES
from ballet.core.slug import branch_name
from ballet.core.spend import Spend
from ballet.core.tx import Tx

# Checks that have not even started after this long are reported, not awaited.
NEVER_STARTED_MINUTES = 15


class IllegalEvent(Exception):
    """The ticket cannot take this event now; nothing changed. Log it and drop it."""


def start(tx: Tx, ev: TicketRequested) -> None:
    p = ev.pipeline
    title = clip(ev.title, TITLE_MAX)
    branch = branch_name(p.branch, ev.issue, title, p.ticket_type) if p.branch else None
    known = tuple(r for r in p.signoffs if r in p.roles)
    rec = Record(
        ticket=TicketRef(
            repo=ev.repo,
            number=ev.issue,
            author=ev.author,
            title=title,
            requested_by=ev.requested_by,
        ),
        ticket_type=p.ticket_type,
        pipeline=p,
        status="running",
        branch=branch,
        base=p.base or ev.default_branch,
        policy=p.policy,
        signoffs_required=known,
        # What the person who labelled the issue read is what the ticket runs on.
        text=pin(ev.title, ev.body, ev.requested_by or ev.author, "labelled", ev.now),
        version=0,
        created_at=ev.now,
        updated_at=ev.now,
    )
    tx.begin(rec)
    if branch is not None:
        body = f"Closes #{ev.issue}\n\nOpened by Ballet for @{ev.author}."
        tx.emit(
            OpenBranchAndDraftPR(
                repo=ev.repo, issue=ev.issue, branch=branch, base=rec.base, title=title, body=body
            )
        )
    dropped = [r for r in p.signoffs if r not in p.roles]
    if dropped:
        tx.announce(
            "dropped",
            f"Sign-offs from {', '.join(dropped)} are not required: "
            "those roles are not in the configuration.",
        )
    if ev.warnings:
        said = "\n".join(f"- {render.text(w)}" for w in ev.warnings)
        tx.comment("notice", f"⚠️ Pipeline `{p.name}`, for this ticket:\n\n{said}", extra="start")
    first, _ = routing.skip_off_stages(p, rec.policy, p.stages[0].id)
    steps.go(tx, first, note="")


def session_finished(tx: Tx, ev: SessionFinished) -> None:
    rec = tx.rec
    run = rec.open_run
    if run is None or run.job_key != ev.job_key:
        raise IllegalEvent(f"stale session result {ev.job_key}: the ticket has moved on")
    rep = ev.report
    usage = metered_usage(ev)
    key = tx.marker("report", extra=run.phase or run.role or "")
    head = ev.head_sha or rec.head_sha
    tx.set(cost_used=rec.cost_used + usage.cost_usd, head_sha=head)
    if rec.approval is not None and rec.approval.sha != head:
        tx.set(approval=None)  # an approval holds only for the commit it was given for
    done = steps.close_run(
        tx, rep.outcome, rep.summary, usage=usage, spend=ev.spend, report_ref=key.render()
    )
    assert done is not None
    add_required_roles(tx, rep)
    told = rework.tell_reviews(tx, run)
    if budgets.stopped_at_a_cap(rep.outcome, ev.cap_reached):
        # A cap stopped the session: a writer decides whether the ticket spends more.
        steps.ask(tx, budgets.cap_question(run.stage, ev.cap_reached, ev.spend))
        next_step = "a question: a cost cap stopped the session"
    else:
        # A review that asked for changes meanwhile comes before the outcome's next stage.
        next_step = rework.apply_pending_reviews(tx) or route_session(
            tx, rep, ev.handoff, run.role, run.phase
        )
    steps.post_report(tx, key, done, rep, ev.handoff, next_step + told)


def metered_usage(ev: SessionFinished) -> Usage:
    """The gateway's meter wins over the CLI's count (`usage`) and the agent's claim."""
    if ev.spend is None:
        return ev.usage or ev.report.usage
    return metered(ev.spend)


def metered(s: Spend) -> Usage:
    return Usage(
        input_tokens=s.all_input_tokens, output_tokens=s.output_tokens, cost_usd=s.cost_usd
    )


def worker_awaited(tx: Tx, ev: WorkerAwaited) -> None:
    """The session waits, queued, for a worker of its pool: the tracking comment says
    so (render.worker_line); the ticket stays running and the timeout still counts."""
    run = tx.rec.open_run
    if run is None or run.job_key != ev.job_key:
        raise IllegalEvent(f"stale pool notice {ev.job_key}: the ticket has moved on")
    if run.awaits_pool == ev.pool:
        raise IllegalEvent(f"already noted: the session waits for a worker of pool {ev.pool}")
    _update_open_run(tx, awaits_pool=ev.pool)


def session_started(tx: Tx, ev: SessionStarted) -> None:
    """A worker of the pool took the waiting session: the note goes."""
    run = tx.rec.open_run
    if run is None or run.job_key != ev.job_key or run.awaits_pool is None:
        raise IllegalEvent(f"nothing to note: {ev.job_key} was not waiting for a worker")
    _update_open_run(tx, awaits_pool=None)


def _update_open_run(tx: Tx, **changes: object) -> None:
    run = tx.rec.open_run
    assert run is not None
    tx.set(history=(*tx.rec.history[:-1], run.model_copy(update=changes)))


def add_required_roles(tx: Tx, rep: Report) -> None:
    rec = tx.rec
    new = [
        r
        for r in rep.require_signoffs
        if r in rec.pipeline.roles and r not in rec.signoffs_required
    ]
    unknown = [r for r in rep.require_signoffs if r not in rec.pipeline.roles]
    if new:
        # News for the agent too, like a person's `/ballet signoff require`.
        by = f"role:{rec.signoff_role}" if rec.signoff_role else f"stage:{rec.stage}"
        told = tuple(SignoffChange(role=r, action="required", by=by, at=tx.now) for r in new)
        tx.set(
            signoffs_required=(*rec.signoffs_required, *new),
            signoff_changes=(*rec.signoff_changes, *told),
        )
        tx.announce("required", f"Stage `{rec.stage}` requires sign-off from: {', '.join(new)}.")
    if unknown:
        tx.announce(
            "unknown",
            f"Stage `{rec.stage}` asked for sign-off from unknown roles "
            f"{', '.join(unknown)}; ignored (known: {', '.join(rec.pipeline.roles)}).",
        )


def route_session(
    tx: Tx, rep: Report, handoff: Handoff | None, role: str | None, phase: str | None
) -> str:
    """Decide what follows a session's report; returns the next step in words."""
    rec = tx.rec
    blocking = [q.text for q in rep.questions if q.blocking]
    if blocking:
        steps.ask(tx, "; ".join(blocking))
        return f"a question to @{rec.ticket.asked}"
    if role is not None:
        return route_signoff(tx, rep, role)
    stage = rec.pipeline.stage(rec.stage or "")
    if phase is not None and rep.outcome == "done" and phase != stage.phases[-1]:
        nxt = stage.phases[stage.phases.index(phase) + 1]
        tx.set(handoff=clip_handoff(handoff))
        steps.start_session(tx, stage.id, nxt)
        return f"phase `{nxt}`"
    target, why = routing.session_target(rec.pipeline, stage.id, rep.outcome)
    steps.go(tx, target, why, note=f"`{stage.id}` reported `{rep.outcome}`: {rep.summary}")
    return f"`{target}`"


def route_signoff(tx: Tx, rep: Report, role: str) -> str:
    rec = tx.rec
    target = rec.gate_target or routing.DONE
    if rep.outcome == "signed_off":
        tx.set(
            signoffs_given=(*rec.signoffs_given, SignOff(role=role, by=f"role:{role}", at=tx.now)),
            signoff_role=None,
        )
        tx.announce(f"signed:{role}", f"Role `{role}` signed off.")
        steps.proceed(tx, target)
        return f"`{target}` once every sign-off is in"
    if rep.outcome == "changes":
        # Back to whoever handed the ticket to the gate (routing.handed_over_by).
        note = f"sign-off `{role}` asked for changes: {rep.summary}"
        tx.set(signoff_role=None, gate_target=None)
        here = rec.pipeline.stage(rec.stage) if rec.stage else None
        if here is not None and here.kind == "human":
            # People handed it over: they decide again (reject, or waive the role).
            steps.enter(
                tx,
                here.id,
                note=f"{note}. Reject to send it back for rework, or "
                f"`/ballet signoff waive {role}`; an approval asks `{role}` again.",
            )
            return f"`{here.id}`: its approvers decide on the requested changes"
        back = routing.handed_over_by(rec.pipeline, rec.stage)
        why = cause(
            "signoff_changes", back, tx.now, by=f"role:{role}", sha=rec.head_sha, text=rep.summary
        )
        steps.go(tx, back, note=note, causes=(why,), returning=True)
        return f"`{back}` with the requested changes"
    steps.ask(
        tx, f"the `{role}` sign-off session reported `{rep.outcome}`, not `signed_off` or `changes`"
    )
    return f"a question to @{tx.rec.ticket.asked}"


def session_timeout(tx: Tx, ev: ReconcileTick) -> None:
    rec = tx.rec
    run = rec.open_run
    assert run is not None and run.job_key is not None, "running means a session is open"
    minutes = SIGNOFF_TIMEOUT_MINUTES if run.role else rec.pipeline.stage(run.stage).timeout_minutes
    if ev.now < run.start + timedelta(minutes=minutes):
        raise IllegalEvent("nothing to settle: the session is within its timeout")
    tx.emit(CancelSession(repo=rec.ticket.repo, job_key=run.job_key))
    if run.awaits_pool is not None:
        # It never started: the agent is not to blame, the missing worker is.
        reason = (
            f"no worker of pool `{run.awaits_pool}` was up to run the `{run.stage}` session "
            f"within its {minutes}-minute timeout; start one (`ballet worker --pool "
            f"{run.awaits_pool}`) or change the stage's `pool:`, then `/ballet retry`"
        )
        steps.close_run(tx, "timed_out", f"no worker of pool {run.awaits_pool} in {minutes} min")
        steps.ask(tx, reason)
        return
    steps.close_run(tx, "timed_out", f"no result after {minutes} minutes")
    steps.ask(tx, f"the `{run.stage}` session ran past its {minutes}-minute timeout")


def wait_timeout(tx: Tx, ev: ReconcileTick) -> None:
    rec = tx.rec
    w = rec.waiting
    assert w is not None, "waiting means a wait is recorded"
    if w.kind in ("question", "approval"):
        raise IllegalEvent("nothing to settle: a person's answer has no timeout")
    minutes = rec.pipeline.stage(rec.stage or "").timeout_minutes
    if w.kind == "checks" and not w.checks_started:
        minutes = min(minutes, NEVER_STARTED_MINUTES)
        reason = f"no checks started for {w.sha or 'the head commit'} within {minutes} minutes"
    else:
        reason = f"stage `{rec.stage}` waited for {w.reason} past its {minutes}-minute timeout"
    if ev.now < w.since + timedelta(minutes=minutes):
        raise IllegalEvent("nothing to settle: the wait is within its timeout")
    steps.close_run(tx, "timed_out", reason)
    steps.ask(tx, reason)


def pr_opened(tx: Tx, ev: PullRequestOpened) -> None:
    rec = tx.rec
    if rec.pr_number is not None:
        raise IllegalEvent(f"the ticket already has pull request #{rec.pr_number}")
    # Only a PR Ballet opens from a fresh branch starts on its seed commit.
    seed = ev.head_sha if rec.head_sha is None else None
    tx.set(pr_number=ev.number, head_sha=rec.head_sha or ev.head_sha, seed_sha=seed)
    # The full record moves to the PR. A PR opened at the ticket's start comes before
    # the issue got any comment (the start's tracking comment, behind the opening in
    # the outbox, gives way to the PR's: core/outbox.py), and GitHub links the PR
    # from the issue itself ("Closes #N"). A PR that came later finds the issue's
    # comment written: it becomes a pointer, so no stale state is left there.
    if rec.version > 1:
        key = steps.tracking_key(tx.rec)
        body = render.with_marker(render.pointer(tx.rec), key.render())
        tx.emit(
            UpsertTrackingComment(
                repo=rec.ticket.repo,
                number=rec.ticket.number,
                target="issue",
                marker=key,
                body=body,
            )
        )


def pr_closed(tx: Tx, ev: PullRequestClosed) -> None:
    rec = tx.rec
    w = rec.waiting
    if (
        ev.merged
        and rec.status == "waiting"
        and w is not None
        and w.kind in ("merge", "merge_result", "merge_queue", "auto_merge")
    ):
        # A person who merged has decided: no sign-off follows the merge.
        steps.settle(tx, "merged", f"merged by @{ev.by}" if ev.by else "merged", gated=False)
        return
    run = rec.open_run
    if rec.status == "running" and run is not None and run.job_key is not None:
        tx.emit(CancelSession(repo=rec.ticket.repo, job_key=run.job_key))
    # A person who merges or closes the PR decides; sign-offs gate only Ballet.
    verb = "merged" if ev.merged else "closed"
    steps.end(
        tx,
        "done" if ev.merged else "cancelled",
        f"the pull request was {verb} by @{ev.by or 'a person'}",
        by=ev.by or "a person",
    )


def head_pushed(tx: Tx, ev: HeadPushed) -> None:
    rec = tx.rec
    if ev.sha == rec.head_sha:
        raise IllegalEvent(f"{ev.sha} is already the known head")
    tx.set(head_sha=ev.sha)
    w = rec.waiting
    if w is not None and w.kind == "checks":
        tx.set(
            waiting=w.model_copy(update={"sha": ev.sha, "checks_started": False, "since": ev.now})
        )
    if landing_approval.awaiting_approval(rec):
        landing_approval.await_approval(tx, ask=False)
    if rec.approval is None or rec.approval.sha == ev.sha:
        return
    # An approval holds for the commit it was given for: a new push asks again.
    tx.set(approval=None)
    human = approval_stage_behind(tx.rec)
    if rec.status == "waiting" and human is not None:
        steps.close_run(tx, "superseded", f"@{ev.pusher} pushed {ev.sha} after the approval")
        steps.enter(
            tx,
            human,
            note=f"@{ev.pusher} pushed {ev.sha} after the approval; approve again for the new head",
        )
    elif rec.status == "waiting" and landing_approval.waits_for_checks_to_land(rec):
        steps.land(tx)


def approval_stage_behind(rec: Record) -> str | None:
    """The switched-on gate the ticket already passed, if any: a human stage, or a
    stage that waits for a review."""
    assert rec.stage is not None, "an approval was given at a stage"
    here = routing.index_of(rec.pipeline, rec.stage)
    for stage in rec.pipeline.stages[:here]:
        gate = stage.kind == "human" or stage.wait_for == "review"
        if gate and routing.is_on(stage, rec.policy):
            return stage.id
    return None
