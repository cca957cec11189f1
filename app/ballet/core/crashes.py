"""A session whose worker died: no report will ever come (`SessionCrashed`).

Not the agent's doing, so the stage runs again as a new attempt, up to the
deployment's retries per stage run, before a person is asked; what the model
gateway metered of the session before then is the ticket's all the same.
"""

from __future__ import annotations

from ballet.core import render, steps
from ballet.core.events import SessionCrashed
from ballet.core.handlers import IllegalEvent, metered
from ballet.core.report import Report
from ballet.core.tx import Tx

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
    spent = ev.spend if ev.spend is not None and ev.spend.requests else None
    if spent is not None:
        # Metered before the worker died: the ticket pays for it, and its cap holds.
        tx.set(cost_used=rec.cost_used + spent.cost_usd)
        summary += f" Its model requests cost {render.spent_words(spent.cost_usd, spent)}."
    # Nothing metered: the run keeps its empty usage (model_copy does not validate).
    paid = {"usage": metered(spent), "spend": spent} if spent is not None else {}
    done = steps.close_run(tx, CRASHED, summary, report_ref=key.render(), **paid)
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
