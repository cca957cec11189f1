"""The pipeline's main path: start, routing, iterations, budgets, phases, timeouts."""

from __future__ import annotations

import pytest
from ballet.core.config import Budget
from ballet.core.effects import (
    CancelSession,
    MergePR,
    OpenBranchAndDraftPR,
    PostComment,
    PostReportComment,
    RemoveLabels,
    SetLabels,
    StartSession,
    UpsertTrackingComment,
)
from ballet.core.events import MergeResult, ReconcileTick, TicketRequested
from ballet.core.machine import IllegalEvent, advance
from ballet.core.report import Handoff, Question, Report, Usage
from core_kit import Ticket, agent, at, human, make_pipeline, platform


def test_start_opens_branch_and_draft_pr_then_the_first_session() -> None:
    t = Ticket(title="Fix: crash on `--> <!--` input!")
    assert [e.kind for e in t.effects] == [
        "open_branch_and_draft_pr",
        "start_session",
        "set_labels",
        "upsert_tracking_comment",
    ]
    pr = t.one(OpenBranchAndDraftPR)
    assert pr.branch == "ballet/7-fix-crash-on-input" and pr.base == "main"
    assert pr.body.startswith("Closes #7")
    spec = t.session()
    assert spec.job_key == "octo/app#7:implement:1:1"
    assert (spec.stage, spec.iteration, spec.attempt, spec.branch) == ("implement", 1, 1, pr.branch)
    assert spec.skills == ("implementer",) and spec.model is None and spec.runtime == "claude"
    assert t.one(SetLabels).labels == ("ballet:running",)
    tracking = t.one(UpsertTrackingComment)
    assert tracking.target == "issue" and tracking.number == 7
    assert (t.rec.status, t.rec.version, t.rec.sessions_used) == ("running", 1, 1)


def test_the_pipeline_base_wins_over_the_default_branch() -> None:
    t = Ticket(pipeline=make_pipeline(base="develop"))
    assert t.one(OpenBranchAndDraftPR).base == "develop" and t.session().base == "develop"


def test_a_second_request_for_the_same_ticket_is_illegal() -> None:
    t = Ticket()
    with pytest.raises(
        IllegalEvent, match="ticket_requested does not apply: the ticket is running"
    ):
        t.feed(
            TicketRequested(
                now=at(1),
                repo="octo/app",
                issue=7,
                author="a",
                title="t",
                pipeline=make_pipeline(),
                default_branch="main",
            )
        )


def test_events_before_a_ticket_exists_are_illegal() -> None:
    with pytest.raises(IllegalEvent, match="there is no ticket yet"):
        advance(None, ReconcileTick(now=at(0)))


def test_happy_path_to_merge() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done")
    assert t.session().stage == "review" and t.session().runtime == "codex"
    report = t.one(PostReportComment)
    assert report.number == 8 and report.marker.render() == "octo/app#7:report:implement:1:1"
    assert t.rec.history[0].report_ref == report.marker.render()
    t.finish("approve")
    t.finish("pass")
    assert t.rec.stage == "integrate" and t.rec.waiting and t.rec.waiting.kind == "merge_result"
    assert t.one(MergePR).sha == "c1"
    t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    assert t.rec.status == "done" and t.rec.head_sha == "c1"  # the PR's head, not "m1"
    assert t.rec.history[-1].summary == "merged by Ballet as m1"
    assert t.one(SetLabels).labels == ("ballet:done",)
    assert t.one(RemoveLabels).labels == ("ballet:waiting",)
    assert [r.outcome for r in t.rec.history] == ["done", "approve", "pass", "merged"]


def test_rework_starts_a_new_iteration_with_the_reason() -> None:
    t = Ticket()
    t.finish("done")
    t.finish("changes_requested", "the tests are missing")
    spec = t.session()
    assert (spec.stage, spec.iteration, spec.attempt) == ("implement", 2, 1)
    assert "`review` reported `changes_requested`: the tests are missing" in spec.note
    assert spec.job_key == "octo/app#7:implement:2:1"


def test_the_iteration_limit_raises_a_question_instead() -> None:
    t = Ticket(pipeline=make_pipeline(iteration_limit=2))
    t.finish("done")
    t.finish("changes_requested")
    t.finish("done")
    t.finish("changes_requested", "still wrong")
    assert t.rec.status == "waiting" and t.rec.iteration == 2
    assert t.rec.waiting and t.rec.waiting.kind == "question"
    assert "iteration limit (2) is reached" in t.rec.waiting.reason
    question = t.one(PostComment)
    assert question.body.count("@alice") == 1 and "/ballet answer" in question.body
    assert set(t.one(SetLabels).labels) == {"ballet:waiting", "ballet:question"}


def test_an_outcome_without_target_is_a_question_with_the_reason() -> None:
    t = Ticket()
    t.finish("confused")
    assert t.rec.waiting and "`confused`, which has no target" in t.rec.waiting.reason
    assert t.rec.questions[-1].stage == "implement"


def test_a_failed_session_becomes_a_question_unless_routed() -> None:
    t = Ticket()
    t.finish("failed", "no report written; output tail: boom")
    assert t.rec.waiting and t.rec.waiting.kind == "question"
    p = make_pipeline((agent("a", next={"failed": "$failed"}),))
    t2 = Ticket(pipeline=p)
    t2.finish("failed")
    assert t2.rec.status == "failed" and t2.one(SetLabels).labels == ("ballet:failed",)


def test_a_blocking_question_in_a_report_waits_for_an_answer() -> None:
    t = Ticket()
    t.finish(
        "done",
        report_fields={
            "questions": (Question(text="Which API?", blocking=True), Question(text="fyi"))
        },
    )
    assert t.rec.waiting and t.rec.waiting.reason == "Which API?"
    t.command("/ballet answer the v2 one")
    spec = t.session()
    assert (spec.stage, spec.attempt, spec.answers) == ("implement", 2, ("the v2 one",))
    assert t.rec.questions[-1].answered_by == "alice"


def test_budget_of_sessions_raises_a_question_and_an_answer_allows_one_more() -> None:
    t = Ticket(pipeline=make_pipeline(budget=Budget(sessions=2)))
    t.finish("done")
    t.finish("approve")
    assert t.rec.waiting and "session budget (2 sessions) is used up" in t.rec.waiting.reason
    assert t.rec.stage == "verify" and not t.of(StartSession)
    t.command("/ballet answer go on")
    assert t.session().stage == "verify" and t.rec.sessions_used == 3


def test_budget_of_cost_raises_a_question() -> None:
    t = Ticket(pipeline=make_pipeline(budget=Budget(cost_usd=1.0)))
    t.finish("done", report_fields={"usage": Usage(cost_usd=0.75)})
    t.finish("approve", usage=Usage(cost_usd=0.5))
    assert t.rec.cost_used == 1.25
    assert t.rec.waiting and "cost budget ($1.00) is used up ($1.25)" in t.rec.waiting.reason


def test_phases_run_one_session_each_with_the_previous_handoff() -> None:
    p = make_pipeline(
        (
            agent(
                "implement",
                phases=("research", "plan", "implement", "verify"),
                next={"done": "$done"},
                effort="medium",
            ),
        )
    )
    t = Ticket(pipeline=p)
    spec = t.session()
    # The core passes only the stage's own overrides; the session side routes the
    # phase for its adapter (a Codex research phase must never get `-m opus`).
    assert (spec.phase, spec.model, spec.effort, spec.handoff) == ("research", None, "medium", None)
    assert spec.job_key == "octo/app#7:implement:1:1:research"
    seen = []
    for n, _phase in enumerate(("plan", "implement", "verify")):
        t.finish("done", handoff=Handoff(summary=f"h{n}"))
        spec = t.session()
        seen.append((spec.phase, spec.model, spec.handoff.summary if spec.handoff else None))
    assert seen == [("plan", None, "h0"), ("implement", None, "h1"), ("verify", None, "h2")]
    t.finish("done", handoff=Handoff(summary="last"))
    assert t.rec.status == "done" and t.rec.handoff is None
    assert [r.phase for r in t.rec.history] == ["research", "plan", "implement", "verify"]


def test_a_phase_that_does_not_finish_routes_like_the_stage() -> None:
    p = make_pipeline(
        (agent("implement", phases=("research", "plan"), next={"blocked": "$failed"}),)
    )
    t = Ticket(pipeline=p)
    t.finish("blocked")
    assert t.rec.status == "failed"


def test_a_question_in_a_phase_reruns_that_phase_with_its_handoff() -> None:
    p = make_pipeline((agent("implement", phases=("research", "plan", "implement")),))
    t = Ticket(pipeline=p)
    t.finish("done", handoff=Handoff(summary="found it"))
    t.finish("stuck")
    t.command("/ballet answer try harder")
    spec = t.session()
    assert (spec.phase, spec.attempt) == ("plan", 2)
    assert spec.handoff is not None and spec.handoff.summary == "found it"


def test_stage_timeout_cancels_the_session_and_asks() -> None:
    t = Ticket()
    with pytest.raises(IllegalEvent, match="within its timeout"):
        t.feed(ReconcileTick(now=at(59)))
    job = t.session().job_key
    t.feed(ReconcileTick(now=at(61)))
    assert t.one(CancelSession).job_key == job
    assert t.rec.history[-1].outcome == "timed_out" and t.rec.history[-1].end == at(61)
    assert t.rec.waiting and "ran past its 60-minute timeout" in t.rec.waiting.reason


def test_a_stale_session_result_is_illegal() -> None:
    t = Ticket()
    t.finish("done")
    from ballet.core.events import SessionFinished

    with pytest.raises(IllegalEvent, match="stale session result"):
        t.feed(
            SessionFinished(
                now=t.now(),
                job_key="octo/app#7:implement:1:1",
                stage="implement",
                iteration=1,
                attempt=1,
                report=Report(outcome="done", summary=""),
            )
        )


def test_a_pipeline_without_a_branch_ends_with_a_knowledge_report() -> None:
    p = make_pipeline((agent("explore", next={"done": "$done"}),), branch=None)
    t = Ticket(pipeline=p)
    assert not t.of(OpenBranchAndDraftPR) and t.session().branch is None
    t.finish("done", "SQLite is fine up to 10k rows")
    assert t.rec.status == "done"
    knowledge = t.one(PostComment)
    assert knowledge.number == 7 and knowledge.marker.kind == "knowledge"
    assert "SQLite is fine up to 10k rows" in knowledge.body
    assert t.one(UpsertTrackingComment).target == "issue"


def test_first_stage_human_waits_for_approval_and_names_who() -> None:
    p = make_pipeline((human("triage", next={"approve": "$done"}),), approvers=("bob",))
    t = Ticket(pipeline=p)
    assert t.rec.waiting and t.rec.waiting.kind == "approval" and t.rec.waiting.who == ("bob",)
    assert "@bob" in t.one(PostComment).body


def test_a_pipeline_routed_to_failed_at_start() -> None:
    p = make_pipeline((human("h", optional=True, next={"approve": "$failed"}),))
    t = Ticket(pipeline=p)
    assert t.rec.status == "failed" and t.rec.history == () and t.rec.stage is None
    t.command("/ballet retry")  # from no stage at all: the pipeline's start again
    assert t.rec.status == "failed" and t.rec.version == 2


def test_an_explicit_question_route() -> None:
    p = make_pipeline((agent("a", next={"unsure": "$question"}),))
    t = Ticket(pipeline=p)
    t.finish("unsure")
    assert (
        t.rec.waiting and t.rec.waiting.reason == "stage `a` routes outcome `unsure` to a question"
    )


def test_platform_checks_stage_needs_no_pr() -> None:
    p = make_pipeline((agent("a"), platform("ci", wait_for="checks", next={"pass": "$done"})))
    t = Ticket(pipeline=p)
    t.finish("done", sha="abc")
    assert t.rec.waiting and t.rec.waiting.kind == "checks" and t.rec.waiting.sha == "abc"
