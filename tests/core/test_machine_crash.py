"""A session whose worker died: re-run on its own as a new attempt, then a question."""

from __future__ import annotations

from datetime import datetime

import pytest
from ballet.core.config import Budget
from ballet.core.effects import PostComment, PostReportComment, SetCheckRun, SetLabels
from ballet.core.events import SessionCrashed
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Record
from ballet.core.report import Usage
from ballet.core.spend import Spend
from core_kit import T0, Ticket, agent, make_pipeline


def crash(
    t: Ticket, retries: int = 2, last_beat: datetime | None = T0, spend: Spend | None = None
) -> None:
    run = t.rec.open_run
    assert run is not None and run.job_key is not None
    t.feed(
        SessionCrashed(
            now=t.now(),
            job_key=run.job_key,
            stage=run.stage,
            iteration=run.iteration,
            attempt=run.attempt,
            phase=run.phase,
            last_beat=last_beat,
            retries_allowed=retries,
            spend=spend,
        )
    )


def test_a_crashed_session_runs_again_as_a_new_attempt_with_its_own_report_and_check() -> None:
    t = Ticket()
    first = t.session()
    t.open_pr()
    crash(t)
    again = t.session()
    assert t.rec.status == "running"
    assert (first.attempt, again.attempt) == (1, 2) and first.job_key != again.job_key
    crashed = t.rec.history[0]
    assert crashed.outcome == "crashed" and "no heartbeat since 2026" in crashed.summary
    report = t.one(PostReportComment)
    assert report.marker.attempt == 1 and "automatic retry 1 of 2" in report.body
    checks = {(c.status, c.run_key, c.conclusion) for c in t.of(SetCheckRun)}
    assert checks == {("completed", "", "cancelled"), ("in_progress", "attempt-2", None)}
    assert not t.of(SetLabels)  # still running: no question label


def test_past_the_retries_the_ticket_asks_and_says_what_happened() -> None:
    t = Ticket()
    for _ in range(2):
        crash(t)
    assert t.rec.status == "running" and t.rec.attempt == 3
    crash(t, last_beat=None)
    assert t.rec.status == "waiting" and t.rec.waiting is not None
    assert t.rec.waiting.kind == "question"
    assert "died 3 times in a row" in t.rec.waiting.reason
    assert "since it started" in t.rec.history[-1].summary
    assert any("ballet:question" in e.labels for e in t.of(SetLabels))
    assert t.of(PostComment)  # the question itself
    assert "the retries are used up" in t.one(PostReportComment).body


def test_no_retries_allowed_asks_at_once() -> None:
    t = Ticket()
    crash(t, retries=0)
    assert t.rec.status == "waiting" and len(t.rec.history) == 1


def test_a_crash_report_for_an_older_session_is_refused() -> None:
    t = Ticket()
    run = t.rec.open_run
    assert run is not None and run.job_key is not None
    crash(t)
    with pytest.raises(IllegalEvent, match="stale crash report"):
        t.feed(
            SessionCrashed(
                now=t.now(), job_key=run.job_key, stage=run.stage, iteration=1, attempt=1
            )
        )


def test_a_crashed_phase_runs_that_phase_again_with_its_handoff() -> None:
    from ballet.core.report import Handoff

    phased = make_pipeline(
        stages=(agent("implement", phases=("plan", "implement"), next={"done": "$done"}),)
    )
    t = Ticket(pipeline=phased)
    t.finish("done", handoff=Handoff(summary="the plan"))
    assert t.session().phase == "implement"
    crash(t)
    again = t.session()
    assert again.phase == "implement" and again.attempt == 2
    assert again.handoff is not None and again.handoff.summary == "the plan"


def test_a_crashed_signoff_session_runs_the_signoff_again() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",)))
    t.open_pr()
    t.finish("done")  # implement
    t.finish("approve")  # review
    t.finish("pass")  # verify: integrate needs the security sign-off first
    signoff = t.session()
    assert signoff.role == "security"
    crash(t)
    again = t.session()
    assert again.role == "security" and again.attempt == signoff.attempt + 1
    keyed = [c for c in t.of(SetCheckRun) if c.status == "in_progress"]
    assert [c.run_key for c in keyed] == [f"attempt-{again.attempt}"]


def test_what_a_crashed_session_spent_counts_in_the_ticket_and_its_cap() -> None:
    t = Ticket(pipeline=make_pipeline(budget=Budget(cost_usd=1.0)))
    spent = Spend(requests=4, input_tokens=9_000, output_tokens=800, cost_usd=0.75)
    crash(t, spend=spent)
    assert t.rec.cost_used == pytest.approx(0.75)
    crashed = t.rec.history[0]
    assert crashed.spend == spent and crashed.usage is not None
    assert crashed.usage.cost_usd == pytest.approx(0.75)
    assert "Its model requests cost $0.75." in crashed.summary
    # The re-run holds to what is left of the ticket's cap, not the whole of it.
    budget = t.session().budget
    assert (budget.ticket_usd, budget.ticket_spent_usd) == (1.0, pytest.approx(0.75))


def test_a_crash_before_any_model_request_costs_nothing() -> None:
    t = Ticket()
    crash(t, spend=Spend())
    crashed = t.rec.history[0]
    assert t.rec.cost_used == 0 and crashed.spend is None and crashed.usage == Usage()
    # The record stays valid through a round trip (it is kept as JSON in Redis).
    assert Record.model_validate_json(t.rec.model_dump_json()) == t.rec
