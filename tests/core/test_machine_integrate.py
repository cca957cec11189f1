"""The seeds' Integrate: an agent stage with the integrator skill, after which Ballet
lands the pull request; the landing's result is the stage's outcome (issue 33)."""

from __future__ import annotations

from ballet.core.config import MergeStrategy, Policy
from ballet.core.effects import MarkReadyForReview, MergePR, PostReportComment, StartSession
from ballet.core.events import MergeResult
from ballet.core.outcomes import stage_outcomes
from core_kit import Ticket, agent, make_pipeline

SEED = (
    agent("implement", skills=("implementer",)),
    agent("integrate", skills=("integrator",), next={"merged": "$done", "returned": "implement"}),
)


def _integrating(**kw: object) -> Ticket:
    t = Ticket(make_pipeline(SEED, **kw))
    t.open_pr()
    t.finish("done", sha="impl")
    assert t.rec.stage == "integrate" and t.one(StartSession).spec.stage == "integrate"
    return t


def test_an_integrators_done_lands_the_pull_request_and_merged_ends_the_ticket() -> None:
    t = _integrating()
    t.finish("done", "merged main into the branch", sha="merged-base")

    merge = t.one(MergePR)
    assert merge.sha == "merged-base" and merge.number == t.rec.pr_number
    assert t.rec.status == "waiting" and t.rec.waiting is not None
    assert t.rec.waiting.kind == "merge_result"
    # The session's run ended `done`; the landing is a run of its own at the same stage.
    assert [(r.stage, r.outcome) for r in t.rec.history][-2:] == [
        ("integrate", "done"),
        ("integrate", None),
    ]
    session_report = t.one(PostReportComment).marker.render()

    t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    assert t.rec.status == "done"
    assert t.rec.history[-1].outcome == "merged"
    # The landing's report is a comment of its own, not the session's edited.
    assert t.one(PostReportComment).marker.render() != session_report


def test_a_landing_refused_by_a_conflict_returns_to_implement_with_the_cause() -> None:
    t = _integrating()
    t.finish("done", sha="merged-base")
    t.feed(MergeResult(now=t.now(), result="conflict", detail="calc.py conflicts"))
    assert (t.rec.status, t.rec.stage, t.rec.iteration) == ("running", "implement", 2)
    assert [c.kind for c in t.rec.returned] == ["merge_conflict"]
    assert "calc.py conflicts" in t.rec.returned[0].text


def test_an_integrator_that_cannot_resolve_returns_to_implement_with_its_report() -> None:
    t = _integrating()
    words = "calc.py: the base renamed add(); the ticket changed its signature"
    t.finish("returned", words, sha="impl")
    assert not t.of(MergePR)
    assert (t.rec.stage, t.rec.iteration) == ("implement", 2)
    assert words in t.rec.returned[0].text


def test_with_merge_manual_the_landing_waits_for_a_person() -> None:
    t = _integrating(policy=Policy(merge="manual"))
    t.finish("done", sha="merged-base")
    assert not t.of(MergePR)
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge"


def test_sign_offs_come_before_the_integrator_and_the_pull_request_is_ready() -> None:
    t = Ticket(make_pipeline(SEED, signoffs=("security",)))
    t.open_pr()
    t.finish("done", sha="impl")
    assert t.rec.signoff_role == "security" and t.rec.stage == "implement"
    t.finish("signed_off", sha="impl")
    assert t.rec.stage == "integrate" and t.one(MarkReadyForReview)
    t.finish("done", sha="merged-base")
    assert t.one(MergePR).sha == "merged-base"


def test_the_integrators_session_is_told_how_the_project_updates_branches() -> None:
    t = _integrating()
    assert t.one(StartSession).spec.update_with == "merge"
    rebasing = Ticket(make_pipeline(SEED, merge=MergeStrategy(update="rebase")))
    assert rebasing.one(StartSession).spec.update_with is None  # implement: not its business
    rebasing.open_pr()
    rebasing.finish("done", sha="impl")
    assert rebasing.one(StartSession).spec.update_with == "rebase"


def test_the_integrator_is_told_done_lands_and_is_not_offered_merged() -> None:
    told = _integrating().one(StartSession).spec
    outcomes = stage_outcomes(make_pipeline(SEED), told.stage)
    assert set(outcomes) == {"done", "returned"}
    assert "Ballet lands the pull request" in outcomes["done"]
    assert outcomes["returned"] == "the ticket goes to stage `implement`."


def test_an_integrator_session_saying_merged_asks_a_person_instead_of_ending() -> None:
    t = _integrating()
    t.finish("merged", "I merged it", sha="merged-base")
    assert not t.of(MergePR)
    assert t.rec.status == "waiting" and t.rec.waiting is not None
    assert t.rec.waiting.kind == "question"
    assert "only Ballet's landing says" in t.rec.waiting.reason
