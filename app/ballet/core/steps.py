"""The moves every transition is made of: enter a stage, start a session,
raise a question, end the ticket.

Each move works on a `Tx` (`ballet.core.tx`). Handlers in `machine` and
`verbs` compose these moves; nothing here decides which event is legal.
"""

from __future__ import annotations

from ballet.core import landing_approval, render, routing
from ballet.core.budgets import over_budget
from ballet.core.companion_merges import in_review_with_the_ticket, land_first
from ballet.core.companion_reds import held_red, red_cause
from ballet.core.effects import (
    ConvertToDraft,
    MarkerKey,
    MarkReadyForReview,
    MergePR,
    PostReportComment,
    ReadChecks,
    RequestReviewers,
    StartSession,
)
from ballet.core.pinned_text import TEXT_LOST
from ballet.core.record import QA, Record, StageRun, Status
from ballet.core.report import Handoff, Report
from ballet.core.returns import ReturnCause, ReturnKind, cause
from ballet.core.routing import DONE, FAILED, LAND, QUESTION
from ballet.core.runs import close_run as close_run
from ballet.core.runs import open_run as open_run
from ballet.core.runs import set_status as set_status
from ballet.core.runs import wait as wait
from ballet.core.session_spec import session_spec
from ballet.core.tx import Tx


def tracking_key(rec: Record) -> MarkerKey:
    """The tracking comment's key: one per ticket, whatever stage it is in."""
    return MarkerKey(ticket=rec.key, kind="tracking")


def go(
    tx: Tx,
    target: str,
    reason: str = "",
    note: str = "",
    causes: tuple[ReturnCause, ...] = (),
    returning: bool = False,
    gated: bool = True,
) -> None:
    """Route to an outcome's target: skip switched-off stages, count iterations.

    A return (to this stage or an earlier one, or `returning`) starts a new
    iteration and keeps its causes for the sessions that follow; without a cause
    of its own it is the stage's report that sent the ticket back. `gated` False:
    a person decided (merged), and no sign-off holds them back."""
    rec = tx.rec
    target, why = routing.skip_off_stages(rec.pipeline, rec.policy, target)
    if target == QUESTION:
        ask(tx, reason or why)
        return
    if target == FAILED:
        end(tx, "failed", reason or "the pipeline routed the ticket to `$failed`")
        return
    if returning or routing.is_backwards(rec.pipeline, rec.stage, target):
        limit = rec.pipeline.iteration_limit
        if rec.iteration >= limit:
            ask(
                tx,
                f"the iteration limit ({limit}) is reached; the ticket would return to "
                f"`{target}` again. {note}".strip(),
            )
            return
        here = rec.stage or target
        own = causes or (cause("stage_report", here, tx.now, by=f"stage:{here}", text=note),)
        tx.set(iteration=rec.iteration + 1, returned=own, resume_at=None)
        back_to_draft(tx)
    proceed(tx, target, note=note, gated=gated)


def back_to_draft(tx: Tx) -> None:
    """The work is in the agents' hands again: no longer in review, so roles never
    sign off on a pull request people are asked to read. The gate marks it ready again."""
    rec = tx.rec
    if rec.ready_for_review and rec.pr_number is not None:
        tx.set(ready_for_review=False)
        tx.emit(ConvertToDraft(repo=rec.ticket.repo, number=rec.pr_number))
        tx.emit(*in_review_with_the_ticket(rec, ready=False))


def settle(
    tx: Tx,
    outcome: str,
    summary: str,
    causes: tuple[ReturnCause, ...] = (),
    gated: bool = True,
    to: str | None = None,
) -> None:
    """A human or platform stage has its outcome: report it and route it (`to`:
    sent there as a return, whatever the stage's `next` says)."""
    rec = tx.rec
    stage = rec.stage or ""
    # An integrator's landing: its session's report keeps its own comment.
    key = tx.marker("report", extra="landing" if rec.pipeline.stage(stage).kind == "agent" else "")
    done = close_run(tx, outcome, summary, report_ref=key.render())
    assert done is not None, "a waiting stage has an open run"
    target, why = (to, "") if to else routing.next_target(rec.pipeline, stage, outcome)
    note = f"`{stage}` returned `{outcome}`: {summary}"
    go(tx, target, why, note=note, causes=causes, returning=to is not None, gated=gated)
    post_report(tx, key, done, Report(outcome=outcome, summary=summary), None, f"`{target}`")


def red_checks(tx: Tx, kind: ReturnKind, summary: str) -> ReturnCause:
    """Red checks on the head: the session job reads their output by this commit."""
    here = tx.rec.stage or ""
    return cause(kind, here, tx.now, by=f"stage:{here}", sha=tx.rec.head_sha, text=summary)


def post_report(
    tx: Tx,
    key: MarkerKey,
    run: StageRun,
    report: Report,
    handoff: Handoff | None,
    next_step: str,
) -> None:
    """Post a closed run's report; call it after routing, so it shows where the ticket went."""
    # A session's report says what the ticket spent so far; a person's decision does not.
    spent = render.ticket_spend_line(tx.rec) if run.job_key is not None else ""
    body = render.report(run, report, handoff, next_step, spent)
    tx.emit(
        PostReportComment(
            repo=tx.rec.ticket.repo,
            number=tx.number,
            marker=key,
            body=render.with_marker(body, key.render()),
        )
    )


def proceed(tx: Tx, target: str, note: str = "", gated: bool = True) -> None:
    """Enter a target once its sign-off gate is open (`gated` False: a person decided)."""
    gate = gated and routing.needs_signoffs(tx.rec.pipeline, target)
    if gate and hold_for_signoff(tx, target, note):
        return
    tx.set(gate_target=None, signoff_role=None)
    if target == DONE:
        end(tx, "done", "the pipeline finished")
        return
    if target == LAND and tx.rec.resume_at is not None:
        # The integrator resolved a conflict the base made at a gate: back to its people.
        back = tx.rec.resume_at
        tx.set(resume_at=None)
        enter(tx, back, note=note)
        return
    if target == LAND:
        # The integrator reported done: its stage's run goes on as the landing.
        open_run(tx, tx.rec.stage or "")
        land(tx)
        return
    enter(tx, target, note=note)


def hold_for_signoff(tx: Tx, target: str, note: str, bypass_budget: bool = False) -> bool:
    """Start the first missing role's sign-off session; True when the gate holds."""
    rec = tx.rec
    missing = rec.missing_signoffs()
    if missing:
        tx.set(gate_target=target)
        start_session(
            tx, rec.stage or target, None, note=note, role=missing[0], bypass_budget=bypass_budget
        )
        return True
    if target != DONE and rec.pr_number is not None and not rec.ready_for_review:
        # Moving to "in review": the draft becomes a PR people are asked to read.
        tx.set(ready_for_review=True)
        tx.emit(MarkReadyForReview(repo=rec.ticket.repo, number=rec.pr_number))
        tx.emit(*in_review_with_the_ticket(rec, ready=True))
        if rec.pipeline.approvers:
            tx.emit(
                RequestReviewers(
                    repo=rec.ticket.repo, number=rec.pr_number, reviewers=rec.pipeline.approvers
                )
            )
    return False


def enter(
    tx: Tx,
    stage_id: str,
    note: str = "",
    attempt: int | None = None,
    phase: str | None = None,
    bypass_budget: bool = False,
) -> None:
    rec = tx.rec
    tx.set(
        stage=stage_id,
        attempt=attempt if attempt is not None else next_attempt(rec, stage_id, None),
        phase=None,
        waiting=None,
        handoff=rec.handoff if phase else None,
    )
    stage = rec.pipeline.stage(stage_id)
    if stage.kind == "agent":
        first = phase or (stage.phases[0] if stage.phases else None)
        start_session(tx, stage_id, first, note=note, bypass_budget=bypass_budget)
    elif stage.kind == "human":
        open_run(tx, stage_id)
        who = rec.pipeline.approvers or ()
        wait(
            tx,
            "approval",
            f"approval of stage `{stage_id}`",
            who,
            "/ballet approve  or  /ballet reject <reason>",
        )
        tx.comment("question", render.approval_request(tx.rec, note), extra="approval")
    else:
        enter_platform(tx, stage_id)


def next_attempt(rec: Record, stage_id: str, role: str | None) -> int:
    """Attempts count per stage (or sign-off role) and iteration, so every
    session's job key and every comment's marker is new."""
    earlier = [
        r.attempt
        for r in rec.history
        if r.stage == stage_id and r.role == role and r.iteration == rec.iteration
    ]
    return max(earlier, default=0) + 1


def enter_platform(tx: Tx, stage_id: str) -> None:
    rec = tx.rec
    stage = rec.pipeline.stage(stage_id)
    needs_pr = stage.action == "merge" or stage.wait_for in ("review", "merge")
    if needs_pr and rec.pr_number is None:
        ask(tx, f"stage `{stage_id}` needs a pull request and the ticket has none")
        return
    open_run(tx, stage_id)
    if stage.action == "merge":
        land(tx)
    elif stage.wait_for == "merge":
        wait_for_person_to_merge(tx, "")
    elif stage.wait_for == "review":
        who = rec.pipeline.approvers or ()
        wait(tx, "review", "a pull request review", who, "submit a review on the pull request")
    else:
        enter_checks_wait(tx)


def land(tx: Tx) -> None:
    """Land the pull request by the repository's rules (the edge's `MergePR`:
    tickets/interpret.py) once a person approved its head (policy merge=approved,
    core/landing_approval.py), or wait for a person to merge it (merge=manual).
    Its result settles the open run: `merged`, or `returned` with its cause."""
    rec = tx.rec
    if rec.pr_number is None:
        ask(tx, f"stage `{rec.stage}` lands a pull request and the ticket has none")
        return
    if rec.policy.merge == "manual":
        wait_for_person_to_merge(tx, " (policy merge=manual)")
        return
    seen = rec.checks if rec.checks is not None and rec.checks.sha == rec.head_sha else None
    agent = rec.stage is not None and rec.pipeline.stage(rec.stage).kind == "agent"
    held = held_red(rec)  # a companion's, heard while a session ran
    if seen is not None and seen.outcome == "fail":
        red = red_checks(tx, "merge_checks_failed", seen.summary)
        settle(tx, "returned", f"red checks on the head: {seen.summary}", causes=(red,))
    elif held is not None and held.checks is not None:
        why = red_cause(rec, held, held.checks.summary, tx.now)
        settle(tx, "returned", why.text, causes=(why,))
    elif landing_approval.needs_approval(rec):
        landing_approval.await_approval(tx)
    elif seen is not None and seen.outcome is None and not agent:
        wait_checks_before_merge(tx)
    else:
        # Checks still running after an integrator's session: the edge's merge waits
        # for them itself (interpret.py `_merge`) and answers with its result.
        merge_now(tx)


def wait_for_person_to_merge(tx: Tx, why: str) -> None:
    who = tx.rec.pipeline.approvers or ()
    reason = f"a person to merge the pull request{why}"
    wait(tx, "merge", reason, who, "merge the pull request on GitHub")


def enter_checks_wait(tx: Tx) -> None:
    rec = tx.rec
    seen = rec.checks if rec.checks is not None and rec.checks.sha == rec.head_sha else None
    if seen is not None and seen.outcome in ("pass", "fail"):
        # CI finished before the ticket got here: nothing more will arrive.
        red = (red_checks(tx, "checks_failed", seen.summary),) if seen.outcome == "fail" else ()
        settle(tx, seen.outcome, f"{seen.summary} (finished before the wait)", causes=red)
        return
    # Whatever Ballet heard of the head's checks so far, their verdict is read once
    # now: a green check heard of needs the others', and a completion this ticket
    # never heard of (a lost delivery, a record rebuilt after Redis was lost) is
    # found instead of waited for. Checks still running, or none yet, answer nothing.
    if rec.head_sha is not None:
        tx.emit(ReadChecks(repo=rec.ticket.repo, sha=rec.head_sha))
    wait_checks(tx, started=seen is not None)


def wait_checks(tx: Tx, *, started: bool) -> None:
    sha = tx.rec.head_sha
    wait(tx, "checks", f"checks on {sha or 'the head commit'}", (), "", sha=sha, started=started)


def merge_now(tx: Tx) -> None:
    if land_first(tx):
        return  # the ticket's companions land first, in order
    rec = tx.rec
    assert rec.pr_number is not None
    strategy = rec.pipeline.merge
    title = strategy.commit_title
    if title is not None:
        title = title.format(title=rec.ticket.title, pr=rec.pr_number, ticket=rec.ticket.number)
    merge = MergePR(
        repo=rec.ticket.repo,
        number=rec.pr_number,
        sha=rec.head_sha,
        method=strategy.method,
        commit_title=title,
        delete_branch=strategy.delete_branch,
    )
    tx.emit(merge)
    # Pinned to that head: another one withdraws the merge (core/merge_pins.py).
    wait(tx, "merge_result", "the merge of the pull request", (), "", sha=rec.head_sha)


def wait_checks_before_merge(tx: Tx) -> None:
    """The head's checks still run: merge when they pass, return the work when they fail."""
    sha = tx.rec.head_sha
    reason = f"checks on {sha or 'the head commit'} to pass before merging"
    # Their end may already have happened unheard: a delivery lost with Redis, or
    # applied while a merge GitHub then held for them was in flight. One read finds
    # it; checks still running answer nothing new.
    if sha is not None:
        tx.emit(ReadChecks(repo=tx.rec.ticket.repo, sha=sha))
    wait(tx, "checks", reason, (), "", sha=sha, started=True)


def start_session(
    tx: Tx,
    stage_id: str,
    phase: str | None,
    note: str = "",
    role: str | None = None,
    bypass_budget: bool = False,
) -> None:
    """One fresh session: a stage (or one of its phases), or a role's sign-off."""
    rec = tx.rec
    tx.set(stage=stage_id, phase=phase, signoff_role=role)
    if role is not None:
        tx.set(attempt=next_attempt(rec, stage_id, role))
    if rec.text is not None and not rec.text.known:
        # No session runs on words no writer is known to stand behind (core/edits.py).
        ask(tx, TEXT_LOST)
        return
    spent = over_budget(rec)
    if spent and not bypass_budget:
        ask(tx, spent)
        return
    rec = tx.rec
    spec = session_spec(rec, stage_id, phase, role, note)
    job = spec.job_key
    open_run(tx, stage_id, phase=phase, role=role, job=job)
    tx.set(sessions_used=rec.sessions_used + 1)
    set_status(tx, "running")
    tx.emit(StartSession(repo=rec.ticket.repo, spec=spec))


def ask(tx: Tx, reason: str) -> None:
    """Raise a question to the writer who started the ticket; it waits for `/ballet answer`."""
    close_run(tx, "question", reason)
    rec = tx.rec
    qa = QA(
        question=reason, stage=rec.stage, role=rec.signoff_role, phase=rec.phase, asked_at=tx.now
    )
    tx.set(questions=(*rec.questions, qa))
    wait(tx, "question", reason, (rec.ticket.asked,), "/ballet answer <text>")
    tx.comment("question", render.question(tx.rec, reason), extra=str(len(tx.rec.questions)))


def end(tx: Tx, status: Status, reason: str, by: str | None = None) -> None:
    close_run(tx, status, reason)
    set_status(tx, status)
    tx.set(signoff_role=None, gate_target=None, ended_by=by, handoff=None, pending_reviews=())
    rec = tx.rec
    if status == "done" and rec.branch is None and by is None:
        # A ticket without a branch (a spike) ends with what it learned.
        tx.comment("knowledge", render.knowledge_report(rec))
