"""What each accepted event does. `machine.TABLE` says which handler runs in
which status; a handler raises `IllegalEvent` when a guard the table cannot
express refuses the event (before changing anything).
"""

from __future__ import annotations

from datetime import timedelta

from ballet.core import render, routing, steps
from ballet.core.effects import (
    CancelSession,
    OpenBranchAndDraftPR,
    ReadChecks,
    UpsertTrackingComment,
)
from ballet.core.events import (
    ChecksCompleted,
    ChecksStarted,
    HeadPushed,
    MergeResult,
    PullRequestClosed,
    PullRequestOpened,
    ReconcileTick,
    ReviewSubmitted,
    SessionCrashed,
    SessionFinished,
    TicketRequested,
)
from ballet.core.limits import TITLE_MAX, clip, clip_handoff
from ballet.core.merge_refused import method_refused
from ballet.core.record import ChecksSeen, Record, SignOff, TicketRef
from ballet.core.report import Handoff, Report
from ballet.core.slug import branch_name
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
        ticket=TicketRef(repo=ev.repo, number=ev.issue, author=ev.author, title=title),
        ticket_type=p.ticket_type,
        pipeline=p,
        status="running",
        branch=branch,
        base=p.base or ev.default_branch,
        policy=p.policy,
        signoffs_required=known,
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
    first, _ = routing.skip_off_stages(p, rec.policy, p.stages[0].id)
    steps.go(tx, first, note="")


def session_finished(tx: Tx, ev: SessionFinished) -> None:
    rec = tx.rec
    run = rec.open_run
    if run is None or run.job_key != ev.job_key:
        raise IllegalEvent(f"stale session result {ev.job_key}: the ticket has moved on")
    rep = ev.report
    usage = ev.usage or rep.usage
    key = tx.marker("report", extra=run.phase or run.role or "")
    head = ev.head_sha or rec.head_sha
    tx.set(cost_used=rec.cost_used + usage.cost_usd, head_sha=head)
    if rec.approval is not None and rec.approval.sha != head:
        tx.set(approval=None)  # an approval holds only for the commit it was given for
    done = steps.close_run(tx, rep.outcome, rep.summary, usage=usage, report_ref=key.render())
    assert done is not None
    add_required_roles(tx, rep)
    next_step = route_session(tx, rep, ev.handoff, run.role, run.phase)
    steps.post_report(tx, key, done, rep, ev.handoff, next_step)


CRASHED = "crashed"


def session_crashed(tx: Tx, ev: SessionCrashed) -> None:
    rec = tx.rec
    run = rec.open_run
    if run is None or run.job_key != ev.job_key:
        raise IllegalEvent(f"stale crash report {ev.job_key}: the ticket has moved on")
    when = ev.last_beat.isoformat(timespec="seconds") if ev.last_beat else "it started"
    summary = (
        f"The session's worker stopped (no heartbeat since {when}); nothing it did was pushed."
    )
    key = tx.marker("report", extra=run.phase or run.role or "")
    done = steps.close_run(tx, CRASHED, summary, report_ref=key.render())
    assert done is not None
    same = (run.stage, run.iteration, run.role, run.phase)
    crashes = sum(
        1
        for r in tx.rec.history
        if r.outcome == CRASHED and (r.stage, r.iteration, r.role, r.phase) == same
    )
    if crashes > ev.retries_allowed:
        steps.ask(
            tx,
            f"the `{run.stage}` session's worker died {crashes} times in a row "
            f"(Ballet re-ran it {ev.retries_allowed} times on its own); check the workers "
            "(memory, evictions), then `/ballet retry`",
        )
        next_step = "a question: the retries are used up"
    else:
        if run.role is None:
            tx.set(attempt=steps.next_attempt(tx.rec, run.stage, None))
        # The crash was the infrastructure's, not the ticket's: a used-up budget does
        # not stop the re-run (the session still counts).
        steps.start_session(tx, run.stage, run.phase, role=run.role, bypass_budget=True)
        next_step = f"a new attempt (automatic retry {crashes} of {ev.retries_allowed})"
    steps.post_report(tx, key, done, Report(outcome=CRASHED, summary=summary), None, next_step)


def add_required_roles(tx: Tx, rep: Report) -> None:
    rec = tx.rec
    new = [
        r
        for r in rep.require_signoffs
        if r in rec.pipeline.roles and r not in rec.signoffs_required
    ]
    unknown = [r for r in rep.require_signoffs if r not in rec.pipeline.roles]
    if new:
        tx.set(signoffs_required=(*rec.signoffs_required, *new))
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
        return "a question to the ticket's author"
    if role is not None:
        return route_signoff(tx, rep, role)
    stage = rec.pipeline.stage(rec.stage or "")
    if phase is not None and rep.outcome == "done" and phase != stage.phases[-1]:
        nxt = stage.phases[stage.phases.index(phase) + 1]
        tx.set(handoff=clip_handoff(handoff))
        steps.start_session(tx, stage.id, nxt)
        return f"phase `{nxt}`"
    target, why = routing.next_target(rec.pipeline, stage.id, rep.outcome)
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
        tx.set(signoff_role=None, gate_target=None)
        rework = routing.rework_stage(rec.pipeline)
        steps.go(tx, rework, note=f"sign-off `{role}` asked for changes: {rep.summary}")
        return f"`{rework}` with the requested changes"
    steps.ask(
        tx, f"the `{role}` sign-off session reported `{rep.outcome}`, not `signed_off` or `changes`"
    )
    return "a question to the ticket's author"


def session_timeout(tx: Tx, ev: ReconcileTick) -> None:
    rec = tx.rec
    run = rec.open_run
    assert run is not None and run.job_key is not None, "running means a session is open"
    minutes = (
        steps.SIGNOFF_TIMEOUT_MINUTES if run.role else rec.pipeline.stage(run.stage).timeout_minutes
    )
    if ev.now < run.start + timedelta(minutes=minutes):
        raise IllegalEvent("nothing to settle: the session is within its timeout")
    tx.emit(CancelSession(repo=rec.ticket.repo, job_key=run.job_key))
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
    passed = ev.conclusion in ("success", "neutral", "skipped")
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
            steps.merge_now(tx)
        elif merging:
            steps.settle(tx, "returned", f"red checks on the head: {seen.summary}")
        else:
            assert seen.outcome is not None
            steps.settle(tx, seen.outcome, seen.summary)


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


def review_submitted(tx: Tx, ev: ReviewSubmitted) -> None:
    _waiting_for(tx.rec, "review")
    if ev.author_is_bot or ev.state not in ("approved", "changes_requested"):
        raise IllegalEvent(f"a {ev.state} review by {ev.author} is not a verdict")
    outcome = "approve" if ev.state == "approved" else "changes_requested"
    steps.settle(tx, outcome, f"review by @{ev.author}: {ev.state}")


def merge_result(tx: Tx, ev: MergeResult) -> None:
    _waiting_for(tx.rec, "merge_result")
    if ev.result == "merged":
        # The head stays the PR's: the merge commit is the base's, and moving the head
        # there would leave the integrate check on the merged PR as superseded.
        merge = f" as {ev.sha[:12]}" if ev.sha else ""
        steps.settle(tx, "merged", f"merged by Ballet{merge}")
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
    steps.settle(tx, "returned", f"merge returned by {words[ev.result]}{detail}")


def pr_opened(tx: Tx, ev: PullRequestOpened) -> None:
    rec = tx.rec
    if rec.pr_number is not None:
        raise IllegalEvent(f"the ticket already has pull request #{rec.pr_number}")
    # Only a PR Ballet opens from a fresh branch starts on its seed commit.
    seed = ev.head_sha if rec.head_sha is None else None
    tx.set(pr_number=ev.number, head_sha=rec.head_sha or ev.head_sha, seed_sha=seed)
    # The issue keeps a short pointer; the full record moves to the PR.
    key = steps.tracking_key(tx.rec)
    body = render.with_marker(render.pointer(tx.rec), key.render())
    tx.emit(
        UpsertTrackingComment(
            repo=rec.ticket.repo, number=rec.ticket.number, target="issue", marker=key, body=body
        )
    )


def pr_closed(tx: Tx, ev: PullRequestClosed) -> None:
    rec = tx.rec
    w = rec.waiting
    if (
        ev.merged
        and rec.status == "waiting"
        and w is not None
        and w.kind in ("merge", "merge_result")
    ):
        steps.settle(tx, "merged", f"merged by @{ev.by}" if ev.by else "merged")
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


def approval_stage_behind(rec: Record) -> str | None:
    """The switched-on human stage the ticket already passed, if any."""
    assert rec.stage is not None, "an approval was given at a stage"
    here = routing.index_of(rec.pipeline, rec.stage)
    for stage in rec.pipeline.stages[:here]:
        if stage.kind == "human" and routing.is_on(stage, rec.policy):
            return stage.id
    return None
