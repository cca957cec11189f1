"""The ticket index's summary and per-stage tallies, cut from records by the pure core.

The tallies are what transitions add to the fleet page's per-stage table; summed over
a ticket's transitions they must equal what `ballet stats` computes from its final
record, each run counted once however many transitions follow it.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from ballet.core.config import Runtime
from ballet.core.events import SessionFinished, TicketRequested
from ballet.core.machine import advance
from ballet.core.record import Record
from ballet.core.report import Report
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.core.ticket_summary import StageTally, lead_seconds, stage_tallies, summary_of
from ballet.stats import stage_stats

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def started() -> Record:
    pipeline = resolve_pipeline(
        default_config(Runtime(adapter="command", command=("python3", "agent.py"))), ()
    )
    record, _ = advance(
        None,
        TicketRequested(
            now=T0,
            repo="acme/app",
            issue=7,
            author="alice",
            title="Add <b>multiply</b>\u202e",
            pipeline=pipeline,
            default_branch="main",
        ),
    )
    return record


def finished(record: Record, outcome: str, minutes: int) -> Record:
    run = record.open_run
    assert run is not None and run.job_key is not None
    after, _ = advance(
        record,
        SessionFinished(
            now=T0 + timedelta(minutes=minutes),
            job_key=run.job_key,
            stage=run.stage,
            iteration=run.iteration,
            attempt=run.attempt,
            report=Report(outcome=outcome, summary="s"),
        ),
    )
    return after


def test_tallies_summed_over_transitions_equal_ballet_stats_of_the_final_record() -> None:
    record = started()
    tallies: list[StageTally] = stage_tallies(None, record)
    for outcome, minutes in (("done", 5), ("changes_requested", 9), ("done", 20), ("done", 31)):
        after = finished(record, outcome, minutes)
        tallies += stage_tallies(record, after)
        record = after
    summed: dict[str, Counter[str]] = {}
    for t in tallies:
        c = summed.setdefault(t.stage, Counter())
        c["runs"] += t.runs
        c["rework"] += t.rework
        c["ms"] += t.milliseconds
    expected = {s.stage: s for s in stage_stats([record])}
    assert set(summed) == set(expected) == {"implement", "review"}
    for stage, c in summed.items():
        assert c["runs"] == expected[stage].runs
        assert c["rework"] == expected[stage].rework
        assert c["ms"] / 1000 == expected[stage].seconds
    # The review that asked for changes sent the ticket back: one rework, counted once.
    assert summed["review"]["rework"] == 1 and summed["review"]["runs"] == 2
    # A transition that repeats nothing new adds nothing.
    assert stage_tallies(record, record) == []


def test_summary_says_stage_session_pool_and_clean_title() -> None:
    record = started()
    summary = summary_of(record)
    assert summary.key == "acme/app#7" and summary.live
    assert summary.title == "Add <b>multiply</b>"  # the invisible override removed
    assert summary.session is not None
    assert summary.session.stage == "implement" and summary.session.pool == "default"
    assert summary.session.started == T0
    assert lead_seconds(record) is None
    done = record.model_copy(update={"status": "done", "updated_at": T0 + timedelta(hours=3)})
    assert lead_seconds(done) == 3 * 3600
    assert not summary_of(done).live
