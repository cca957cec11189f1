"""A ticket with companions lands their pull requests first, in `companions:` order,
its own last; a failure before anything landed returns the work naming the repository,
one after asks a person, and `/ballet retry` lands what is left."""

from __future__ import annotations

import pytest
from ballet.core.effects import MergePR, OpenCompanionPR
from ballet.core.events import (
    CompanionPROpened,
    MergeResult,
    PullRequestClosed,
    ReconcileTick,
    ReviewSubmitted,
)
from ballet.core.machine import IllegalEvent
from core_kit import Ticket, make_pipeline


def _at_integrate() -> Ticket:
    t = Ticket(make_pipeline(companions=("octo/lib", "octo/docs")))
    t.open_pr(number=8)
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1", "octo/docs": "d1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.feed(CompanionPROpened(now=t.now(), repo="octo/docs", number=5, head_sha="d1"))
    t.finish("approve", sha="c1")
    t.finish("pass", sha="c1")
    return t


def _merged(t: Ticket, repo: str | None) -> None:
    t.feed(MergeResult(now=t.now(), result="merged", sha="m", repo=repo))


def test_companions_land_first_in_order_then_the_tickets_own() -> None:
    t = _at_integrate()
    assert [(m.repo, m.number, m.sha, m.companion) for m in t.of(MergePR)] == [
        ("octo/lib", 34, "l1", True)
    ]
    assert t.rec.waiting is not None and "octo/lib#34" in t.rec.waiting.reason
    _merged(t, "octo/lib")
    assert [(m.repo, m.number) for m in t.of(MergePR)] == [("octo/docs", 5)]
    # A redelivered result of a merge no longer awaited changes nothing.
    with pytest.raises(IllegalEvent, match="no merge of octo/lib is awaited"):
        _merged(t, "octo/lib")
    _merged(t, "octo/docs")
    assert [(m.repo, m.number, m.companion) for m in t.of(MergePR)] == [("octo/app", 8, False)]
    _merged(t, "octo/app")
    assert t.rec.status == "done"
    assert [p.state for p in t.rec.companion_prs] == ["merged", "merged"]


def test_red_checks_on_a_companion_before_anything_landed_return_the_work_naming_it() -> None:
    t = _at_integrate()
    t.feed(
        MergeResult(
            now=t.now(), result="checks_failed", detail="checks failed on l1: ci", repo="octo/lib"
        )
    )
    assert t.rec.status == "running" and t.rec.stage == "implement"
    (why,) = t.rec.returned
    assert why.kind == "merge_checks_failed" and why.sha == "l1"
    assert "octo/lib#34" in why.text and "red required checks" in why.text
    assert t.of(MergePR) == []


def test_a_failure_after_a_companion_landed_asks_and_retry_lands_the_rest() -> None:
    t = _at_integrate()
    _merged(t, "octo/lib")
    t.feed(MergeResult(now=t.now(), result="conflict", detail="not mergeable", repo="octo/docs"))
    assert t.rec.status == "waiting" and t.rec.waiting is not None
    question = t.rec.waiting.reason
    assert "landed octo/lib#34" in question
    assert "octo/docs#5 did not land: a merge conflict (not mergeable)" in question
    assert "not tried yet: octo/app#8" in question and "/ballet retry" in question
    t.command("/ballet retry")
    assert [(m.repo, m.number) for m in t.of(MergePR)] == [("octo/docs", 5)]
    _merged(t, "octo/docs")
    _merged(t, "octo/app")
    assert t.rec.status == "done"


def test_the_tickets_own_pr_failing_after_its_companions_landed_asks_too() -> None:
    t = _at_integrate()
    _merged(t, "octo/lib")
    _merged(t, "octo/docs")
    t.feed(MergeResult(now=t.now(), result="checks_failed", detail="red", repo="octo/app"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "question"
    assert "landed octo/lib#34, octo/docs#5; octo/app#8 did not land" in t.rec.waiting.reason


def test_a_companion_whose_checks_still_run_is_tried_again_at_each_tick() -> None:
    t = _at_integrate()
    t.feed(MergeResult(now=t.now(), result="checks_pending", repo="octo/lib"))
    assert t.rec.waiting is not None and t.rec.waiting.reason.startswith("checks on octo/lib#34")
    t.feed(ReconcileTick(now=t.now()))
    assert [(m.repo, m.number) for m in t.of(MergePR)] == [("octo/lib", 34)]
    # A result for a repository whose merge is not awaited changes nothing.
    _merged(t, "octo/lib")
    assert t.of(MergePR)[0].repo == "octo/docs"


def test_a_writers_review_asking_changes_on_a_companion_returns_the_work_naming_it() -> None:
    t = _at_integrate()
    t.feed(MergeResult(now=t.now(), result="checks_pending", repo="octo/lib"))
    review = ReviewSubmitted(
        now=t.now(), state="changes_requested", author="carol", permission="write",
        commit_id="l1", review_id=77, body="Keep the old name.", repo="octo/docs",
    )  # fmt: skip
    t.feed(review)  # while a merge is under way: it acts when that merge ends
    _merged(t, "octo/lib")
    assert t.rec.status == "running" and t.rec.stage == "implement"
    (why,) = t.rec.returned
    # Its inline comments are read on docs' pull request, where the review was given.
    assert (why.kind, why.by, why.review_id) == ("changes_requested", "carol", 77)
    assert (why.repo, why.pr) == ("octo/docs", 5)
    assert why.text == "(a review of octo/docs#5, at d1) Keep the old name."
    approve = review.model_copy(update={"state": "approved"})
    with pytest.raises(IllegalEvent, match="decides nothing"):
        t.feed(approve)


def test_a_companion_pr_closed_by_a_person_is_marked_and_opened_again_on_new_commits() -> None:
    t = Ticket(make_pipeline(companions=("octo/lib",)))
    t.open_pr(number=8)
    t.finish("done", companion_heads={"octo/lib": "l1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.feed(PullRequestClosed(now=t.now(), merged=False, by="carol", repo="octo/lib"))
    assert t.rec.status == "running" and t.rec.companion_prs[0].state == "closed"
    t.finish("approve", companion_heads={"octo/lib": "l2"})
    assert [(e.repo, e.branch) for e in t.of(OpenCompanionPR)] == [("octo/lib", t.rec.branch)]
    assert (t.rec.companion_prs[0].number, t.rec.companion_prs[0].state) == (None, "open")


def test_the_companions_merge_heard_as_closed_before_its_answer_goes_on_landing() -> None:
    t = _at_integrate()
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="ballet[bot]", repo="octo/lib"))
    assert [(m.repo, m.number) for m in t.of(MergePR)] == [("octo/docs", 5)]
    with pytest.raises(IllegalEvent, match="no merge of octo/lib is awaited"):
        _merged(t, "octo/lib")
    _merged(t, "octo/docs")
    _merged(t, "octo/app")
    assert t.rec.status == "done"
