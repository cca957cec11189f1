"""A review asking for changes sends the ticket back, whatever it was doing.

Outside a `wait_for: review` stage a person's changes-requested review (with
write permission, `reviews: rework`) returns the ticket to the rework stage at
once when it waits, and when the running session or merge ends otherwise.
"""

from __future__ import annotations

from ballet.core import render, routing
from ballet.core.effects import ReplyToReview
from ballet.core.record import StageRun
from ballet.core.report import Report
from ballet.core.returns import ReturnCause
from ballet.core.steps import close_run, go, post_report
from ballet.core.tx import Tx


def rework(tx: Tx, causes: tuple[ReturnCause, ...], summary: str) -> str:
    """Back to the rework stage with these causes, whatever the ticket was doing
    (a review asking for changes): counted against the iteration limit. Returns
    the next step in words."""
    rec = tx.rec
    target = routing.rework_stage(rec.pipeline)
    qa = rec.open_question
    if rec.status == "waiting" and qa is not None:
        done_qa = qa.model_copy(update={"answer": f"(superseded: {summary})", "answered_by": ""})
        tx.set(questions=(*rec.questions[:-1], done_qa))
    key = tx.marker("report")
    done = close_run(tx, "changes_requested", summary, report_ref=key.render())
    tx.set(pending_reviews=(), gate_target=None, signoff_role=None)
    go(tx, target, note=summary, causes=causes, returning=True)
    if done is not None:
        report = Report(outcome="changes_requested", summary=summary)
        post_report(tx, key, done, report, None, f"`{target}`")
    return f"`{target}`: {summary}"


def apply_pending_reviews(tx: Tx) -> str | None:
    """Reviews that asked for changes while a session or merge ran act now; returns
    the next step in words, or None when none waits."""
    pending = tx.rec.pending_reviews
    if not pending:
        return None
    people = ", ".join(f"@{c.by}" for c in pending)
    return rework(tx, pending, f"changes requested in a review by {people}")


def tell_reviews(tx: Tx, run: StageRun) -> str:
    """The rework stage's session left a new head: each review that asked for the
    changes it made is told which commit addressed it (once). Returns words for
    the session's report.

    A review is addressed by a head other than the one it was given on. That is
    asked of the review, not of the record's head before the result: the push's
    webhook may have moved the record's head before the session's result came."""
    rec = tx.rec
    head = rec.head_sha
    stage = rec.pipeline.stage(run.stage)
    last_phase = run.phase is None or run.phase == stage.phases[-1]
    if (
        run.role is not None
        or run.stage != routing.rework_stage(rec.pipeline)
        or not last_phase
        or head is None
        or rec.pr_number is None
    ):
        return ""
    due = [
        c
        for c in rec.returned
        if c.kind == "changes_requested" and c.addressed_in is None and c.sha != head
    ]
    if not due:
        return ""
    for c in due:
        # A companion's review is answered on its pull request, naming its head there.
        there = next((p for p in rec.companion_prs if (p.repo, p.number) == (c.repo, c.pr)), None)
        if c.review_id is None or (c.repo is not None and there is None):
            continue
        key = tx.marker("reply", extra=f"review:{c.review_id}")
        body = (
            f"Ballet's `{run.stage}` session addressed this review in "
            f"{there.head_sha if there is not None else head} (iteration {run.iteration})."
        )
        tx.emit(
            ReplyToReview(
                repo=c.repo or rec.ticket.repo,
                number=c.pr if there is not None and c.pr is not None else rec.pr_number,
                review_id=c.review_id,
                marker=key,
                body=render.with_marker(body, key.render()),
            )
        )
    told = tuple(
        c.model_copy(update={"addressed_in": head}) if c in due else c for c in rec.returned
    )
    tx.set(returned=told)
    people = ", ".join(f"@{c.by}" for c in due)
    return f"; addresses the review by {people} in {head}"
