"""A session's start is written only if it lasts (core.outbox.with_grace, superseded).

The "in progress" check run and the tracking-comment edit of a transition that
starts a session get a not-before time; writes a person waits for never do.
"""

from __future__ import annotations

from datetime import timedelta

from ballet.core.effects import (
    AnyEffect,
    MarkerKey,
    PostComment,
    PostReportComment,
    RemoveLabels,
    SetCheckRun,
    SetLabels,
    UpsertTrackingComment,
)
from ballet.core.events import MergeResult
from ballet.core.outbox import due, superseded
from ballet.core.report import Question
from core_kit import Ticket

GRACE = timedelta(seconds=5)


def deferred(effects: list[AnyEffect]) -> list[str]:
    return [e.kind for e in effects if getattr(e, "not_before", None) is not None]


def graced() -> Ticket:
    t = Ticket()
    t.grace = GRACE
    return t


def test_a_session_start_defers_its_in_progress_check_not_its_tracking_edit() -> None:
    t = graced()
    t.open_pr(sha="c0")
    # The PR's tracking comment is made at once: it is the record's backup on GitHub.
    assert deferred(t.effects) == []
    effects = t.finish("done", sha="c1")  # implement ends, review starts
    # The tracking edit naming review's session is the backup a rebuild needs to
    # take review's result (Redis lost meanwhile): written at once.
    assert deferred(effects) == ["set_check_run"]
    (running,) = [c for c in t.of(SetCheckRun) if c.status == "in_progress"]
    assert running.name == "ballet/review"
    assert running.not_before == t.rec.updated_at + GRACE
    # What implement said is written at once: its report and its completed check.
    (done,) = [c for c in t.of(SetCheckRun) if c.status == "completed"]
    assert done.not_before is None
    assert all(r.not_before is None for r in [*t.of(SetCheckRun)] if r.status == "completed")
    assert t.of(PostReportComment)


def test_without_a_grace_nothing_waits() -> None:
    t = Ticket()
    t.open_pr(sha="c0")
    assert deferred(t.finish("done", sha="c1")) == []


def test_the_end_of_a_ticket_is_written_at_once() -> None:
    t = graced()
    t.open_pr(sha="c0")
    t.finish("done", sha="c1")
    t.finish("approve", sha="c1")
    t.finish("pass", sha="c1")  # integrate: the merge is under way (deferred, like a start)
    assert "upsert_tracking_comment" in deferred(t.effects)
    effects = t.feed(MergeResult(now=t.now(), result="merged"))
    assert t.rec.status == "done"
    assert deferred(effects) == []  # done: tracking, labels, the completed check


def test_a_question_and_what_a_person_caused_are_never_deferred() -> None:
    t = graced()
    t.open_pr(sha="c0")
    questions = (Question(text="Which flag?", blocking=True),)
    asked = t.finish("question", sha="c1", report_fields={"questions": questions})
    assert t.rec.status == "waiting"
    assert deferred(asked) == []
    assert t.of(PostComment) or t.of(SetLabels)
    # The answer starts a session again: a person waits to see it, so nothing waits.
    assert deferred(t.command("/ballet answer --verbose")) == []
    assert t.rec.status == "running"


def test_a_due_write_is_never_held_back_by_a_deferred_one_behind_it() -> None:
    t = graced()
    t.open_pr(sha="c0")
    now = t.rec.updated_at
    key = MarkerKey(ticket=t.rec.key, kind="tracking")

    def tracking(body: str, wait: bool) -> UpsertTrackingComment:
        return UpsertTrackingComment(
            repo="octo/app",
            number=8,
            target="pr",
            marker=key,
            body=body,
            not_before=now + GRACE if wait else None,
        )

    first, later = tracking("v1", False), tracking("v2", True)
    assert due(first, now) and not due(later, now) and due(later, now + GRACE)
    # v1 is due now: v2, which waits, does not stand in for it...
    assert not superseded(first, [later], now)
    # ...but once v2 is due (or for a deferred v1), the newer one wins.
    assert superseded(first, [later], now + GRACE)
    assert superseded(tracking("v1", True), [later], now)
    # A deferred check run is dropped for the completed one behind it.
    check = t.finish("done", sha="c1")
    (running,) = [c for c in check if isinstance(c, SetCheckRun) and c.status == "in_progress"]
    completed = running.model_copy(update={"status": "completed", "not_before": None})
    assert superseded(running, [completed], now)
    # Labels are never deferred.
    labels = [e for e in check if isinstance(e, SetLabels | RemoveLabels)]
    assert all(getattr(e, "not_before", None) is None for e in labels)
