"""Human and platform stages: approvals bound to a SHA, checks, reviews, merges."""

from __future__ import annotations

import pytest
from ballet.core.config import Policy
from ballet.core.effects import (
    CancelSession,
    MergePR,
    PostComment,
    PostReply,
    React,
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
)
from ballet.core.machine import IllegalEvent
from ballet.core.outbox import superseded
from core_kit import Ticket, agent, at, make_pipeline, platform


def at_approval(**kw: object) -> Ticket:
    t = Ticket(pipeline=make_pipeline(policy=Policy(review="agent+human"), **kw))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass", sha="aaa1111")
    assert t.rec.waiting and t.rec.waiting.kind == "approval"
    return t


def test_an_approver_approves_the_head_and_the_ticket_merges() -> None:
    t = at_approval(approvers=("Bob",))
    t.command("/ballet approve", author="carol")
    assert "only the pipeline's approvers may (Bob)" in t.one(PostReply).body
    t.command("/ballet approve", author="bob", bot=True)
    assert "`bob` is a bot, and only people steer Ballet" in t.one(PostReply).body
    t.command("/ballet approve aaa1111 ship it", author="bob")
    assert t.rec.approval and (t.rec.approval.by, t.rec.approval.sha) == ("bob", "aaa1111")
    assert t.one(React).content == "eyes" and t.one(MergePR).sha == "aaa1111"
    assert "approved by @bob at aaa1111: ship it" in t.rec.history[-2].summary


def test_without_approvers_anyone_with_write_approves() -> None:
    t = at_approval()
    t.command("/ballet approve", author="dave", permission="read")
    assert "needs write permission on the repository (you have read)" in t.one(PostReply).body
    t.command("/ballet approve", author="dave", permission="maintain")
    assert t.rec.stage == "integrate"


def test_an_approval_naming_an_old_sha_is_refused() -> None:
    t = at_approval()
    t.command("/ballet approve bbb2222")
    assert "names bbb2222, but the head is aaa1111" in t.one(PostReply).body
    assert t.rec.waiting and t.rec.waiting.kind == "approval"


def test_approve_with_an_unknown_head_counts_for_the_comment_time_head() -> None:
    p = make_pipeline((platform("h", action=None, next={"approve": "$done"}),))
    from core_kit import human

    t = Ticket(pipeline=make_pipeline((human("h", next={"approve": "$done"}),), branch=None))
    t.command("/ballet approve abc1234")
    assert "the head is unknown" in t.one(PostReply).body
    t.command("/ballet approve", head_sha="abc1234")
    assert t.rec.approval and t.rec.approval.sha == "abc1234" and t.rec.status == "done"
    assert p.stages[0].id == "h"


def test_reject_goes_back_with_the_reason() -> None:
    t = at_approval()
    t.command("/ballet reject the UI copy is wrong")
    assert t.session().stage == "implement" and "the UI copy is wrong" in t.session().note


def test_approve_when_nothing_waits_for_it_is_refused() -> None:
    t = Ticket()
    t.command("/ballet approve")
    assert "does nothing while the ticket is running" in t.one(PostReply).body
    t.finish("odd")
    t.command("/ballet approve")
    assert "nothing waits for an approval now" in t.one(PostReply).body
    t.command("/ballet reject no")
    assert "nothing waits for an approval now" in t.one(PostReply).body


def test_a_push_after_the_approval_asks_again() -> None:
    t = at_approval()
    t.command("/ballet policy merge=manual")
    t.command("/ballet approve")
    assert t.rec.waiting and t.rec.waiting.kind == "merge"
    with pytest.raises(IllegalEvent, match="already the known head"):
        t.feed(HeadPushed(now=t.now(), sha="aaa1111", pusher="bob"))
    first_request = t.rec.history[-4]  # the approval run whose request was posted
    t.feed(HeadPushed(now=t.now(), sha="h2", pusher="bob"))
    assert t.rec.approval is None and t.rec.stage == "approval"
    again = t.one(PostComment)
    assert "approve again for the new head" in again.body and first_request.attempt == 1
    assert again.marker.render() == "octo/app#7:question:approval:1:2:approval"
    assert t.rec.waiting and t.rec.waiting.kind == "approval"
    assert t.rec.history[-2].outcome == "superseded"
    t.command("/ballet approve")
    assert t.rec.approval and t.rec.approval.sha == "h2"


def test_a_session_that_moves_the_head_lapses_the_approval() -> None:
    t = at_approval()
    t.command("/ballet approve")
    t.feed(MergeResult(now=t.now(), result="conflict"))
    t.finish("done", sha="aaa1111")  # nothing pushed: the approval still holds
    assert t.rec.approval is not None
    t.finish("changes_requested", sha="ccc3333")
    assert t.rec.approval is None


def test_a_push_while_a_session_runs_only_clears_the_approval() -> None:
    t = at_approval()
    t.command("/ballet approve")
    t.feed(MergeResult(now=t.now(), result="checks_failed", detail="lint"))
    t.feed(HeadPushed(now=t.now(), sha="h9", pusher="alice"))
    assert t.rec.status == "running" and t.rec.approval is None and t.rec.head_sha == "h9"


def test_merge_returns_go_back_to_implement_with_a_report_saying_which() -> None:
    for result, words in [
        ("conflict", "a merge conflict"),
        ("checks_failed", "red required checks"),
        ("closed", "the pull request was closed"),
    ]:
        t = Ticket()
        t.open_pr()
        t.finish("done")
        t.finish("approve")
        t.finish("pass")
        t.feed(MergeResult(now=t.now(), result=result, detail="x"))  # type: ignore[arg-type]
        assert t.session().stage == "implement" and t.session().iteration == 2
        assert f"merge returned by {words}: x" in t.session().note
        assert t.rec.history[-2].outcome == "returned"


def test_merge_without_a_pull_request_is_a_question() -> None:
    t = Ticket()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    assert t.rec.waiting and "needs a pull request" in t.rec.waiting.reason


def test_manual_merge_waits_for_a_person_to_merge() -> None:
    t = Ticket(pipeline=make_pipeline(policy=Policy(merge="manual")))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    assert t.rec.waiting and t.rec.waiting.kind == "merge" and not t.of(MergePR)
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="bob"))
    assert t.rec.status == "done" and t.rec.ended_by is None
    assert t.rec.history[-1].summary == "merged by @bob"


def test_a_person_merging_early_decides() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",)))
    t.open_pr()
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="bob"))
    assert t.rec.status == "done" and t.rec.ended_by == "bob"
    assert t.one(CancelSession) and t.rec.history[-1].outcome == "done"


def test_a_person_closing_the_pr_cancels_the_ticket() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("weird")
    t.feed(PullRequestClosed(now=t.now(), merged=False))
    assert t.rec.status == "cancelled" and t.rec.ended_by == "a person" and not t.of(CancelSession)
    with pytest.raises(IllegalEvent):
        t.feed(MergeResult(now=t.now(), result="closed"))


def test_pr_opened_moves_the_tracking_comment_once() -> None:
    t = Ticket()
    started = t.of(UpsertTrackingComment)
    t.open_pr(number=8, sha="c0")
    # Opened at the start: the record goes to the PR, the issue gets no pointer (the
    # start's comment, not yet written, gives way to the PR's: test_outbox.py).
    targets = [(e.target, e.number) for e in t.of(UpsertTrackingComment)]
    assert targets == [("pr", 8)]
    assert superseded(started[-1], t.of(UpsertTrackingComment))
    assert t.rec.head_sha == "c0"
    with pytest.raises(IllegalEvent, match="already has pull request #8"):
        t.feed(PullRequestOpened(now=t.now(), number=9, head_sha="c9"))


def test_a_pr_opened_after_the_start_leaves_a_pointer_on_the_issue() -> None:
    # The issue's tracking comment was written by then: it must not go stale.
    t = Ticket()
    t.command("/ballet status")  # a transition, and its tracking edit, before the PR
    t.open_pr(number=8, sha="c0")
    targets = [(e.target, e.number) for e in t.of(UpsertTrackingComment)]
    assert targets == [("issue", 7), ("pr", 8)]
    assert "Ballet tracks this ticket on #8." in t.of(UpsertTrackingComment)[0].body


def checks_ticket() -> Ticket:
    p = make_pipeline(
        (
            agent("a"),
            platform(
                "ci", wait_for="checks", timeout_minutes=120, next={"pass": "$done", "fail": "a"}
            ),
        )
    )
    t = Ticket(pipeline=p)
    t.finish("done", sha="s1")
    return t


def test_checks_decide_pass_or_fail_for_the_waited_sha() -> None:
    t = checks_ticket()
    with pytest.raises(IllegalEvent, match="checks for s0, but the head is s1"):
        t.feed(ChecksCompleted(now=t.now(), head_sha="s0", conclusion="success"))
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="failure", names=("lint",)))
    assert t.session().stage == "a" and "lint: failure" in t.session().note
    t.finish("done", sha="s2")
    t.feed(ChecksCompleted(now=t.now(), head_sha="s2", conclusion="success"))
    assert t.rec.status == "done"


def test_checks_that_never_start_time_out_sooner() -> None:
    t = checks_ticket()
    since = t.rec.waiting.since if t.rec.waiting else at(0)
    with pytest.raises(IllegalEvent, match="within its timeout"):
        t.feed(ReconcileTick(now=since + (at(14) - at(0))))
    t.feed(ReconcileTick(now=since + (at(16) - at(0))))
    assert t.rec.waiting and "no checks started for s1 within 15 minutes" in t.rec.waiting.reason


def test_started_checks_get_the_stage_timeout() -> None:
    t = checks_ticket()
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    with pytest.raises(IllegalEvent, match="not news"):
        t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    since = t.rec.waiting.since if t.rec.waiting else at(0)
    with pytest.raises(IllegalEvent):
        t.feed(ReconcileTick(now=since + (at(100) - at(0))))
    t.feed(ReconcileTick(now=since + (at(121) - at(0))))
    assert t.rec.waiting and "past its 120-minute timeout" in t.rec.waiting.reason


def test_a_push_moves_a_checks_wait_to_the_new_head() -> None:
    t = checks_ticket()
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.feed(HeadPushed(now=t.now(), sha="s5", pusher="alice"))
    assert t.rec.waiting and (t.rec.waiting.sha, t.rec.waiting.checks_started) == ("s5", False)


def test_reviews_decide_a_review_wait() -> None:
    p = make_pipeline(
        (
            agent("a"),
            platform("r", wait_for="review", next={"approve": "$done", "changes_requested": "a"}),
        )
    )
    t = Ticket(pipeline=p)
    t.open_pr()
    t.finish("done")
    assert t.rec.waiting and t.rec.waiting.kind == "review"

    def review(state: str, **kw: object) -> None:
        fields: dict[str, object] = {"author": "bob", "permission": "write", "commit_id": "c1"}
        fields.update(kw)
        t.feed(ReviewSubmitted(now=t.now(), state=state, **fields))  # type: ignore[arg-type]

    with pytest.raises(IllegalEvent, match="not a verdict"):
        review("commented")
    review("approved", author="ci[bot]", author_is_bot=True)
    assert "`ci[bot]` (approved) does not count" in t.one(PostComment).body
    assert t.rec.waiting and t.rec.waiting.kind == "review"
    review("changes_requested", review_id=5, body="rename it")
    assert t.session().stage == "a"
    (why,) = t.session().returned
    assert (why.kind, why.by, why.text, why.review_id) == (
        "changes_requested",
        "bob",
        "rename it",
        5,
    )
    t.finish("done", sha="c2")
    review("approved", commit_id="c2")
    assert t.rec.status == "done"


def test_forge_events_for_another_wait_are_illegal() -> None:
    t = checks_ticket()
    with pytest.raises(IllegalEvent, match="it must review the head"):
        t.feed(ReviewSubmitted(now=t.now(), state="approved", author="bob", permission="write"))
    with pytest.raises(IllegalEvent, match="merge_result"):
        t.feed(MergeResult(now=t.now(), result="merged"))


def test_checks_that_finished_before_the_wait_settle_it_at_once() -> None:
    p = make_pipeline(
        (
            agent("a"),
            platform("ci", wait_for="checks", next={"pass": "$done", "fail": "a"}),
        )
    )
    t = Ticket(pipeline=p)
    t.feed(HeadPushed(now=t.now(), sha="s1", pusher="alice"))
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    with pytest.raises(IllegalEvent, match="not news"):
        t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success", names=("ci",)))
    assert t.rec.status == "running" and t.rec.checks and t.rec.checks.outcome == "pass"
    t.finish("done", sha="s1")
    assert t.rec.status == "done"
    assert t.rec.history[-1].summary == "ci: success (finished before the wait)"


def test_checks_started_before_the_wait_get_the_stage_timeout() -> None:
    p = make_pipeline((agent("a"), platform("ci", wait_for="checks", next={"pass": "$done"})))
    t = Ticket(pipeline=p)
    t.feed(HeadPushed(now=t.now(), sha="s1", pusher="alice"))
    t.command("/ballet pause")
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.command("/ballet resume")
    t.finish("done", sha="s1")
    assert t.rec.waiting and t.rec.waiting.checks_started


def test_questions_and_approvals_never_time_out() -> None:
    t = at_approval()
    with pytest.raises(IllegalEvent, match="no timeout"):
        t.feed(ReconcileTick(now=at(10_000)))


def test_merge_wait_times_out_into_a_question() -> None:
    t = Ticket(pipeline=make_pipeline(policy=Policy(merge="manual")))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    t.feed(ReconcileTick(now=at(1000)))
    assert t.rec.waiting and "waited for a person to merge" in t.rec.waiting.reason


def merge_ticket() -> Ticket:
    """An agent stage, then a merge: the head's CI decides whether Ballet merges."""
    p = make_pipeline(
        (
            agent("a"),
            platform("integrate", action="merge", next={"merged": "$done", "returned": "a"}),
        )
    )
    t = Ticket(pipeline=p)
    t.open_pr()
    return t


def test_red_checks_on_the_head_return_the_work_without_merging() -> None:
    t = merge_ticket()
    t.feed(HeadPushed(now=t.now(), sha="s1", pusher="ballet"))
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="failure", names=("ci",)))
    t.finish("done", sha="s1")
    assert not t.of(MergePR)
    assert t.rec.history[-2].outcome == "returned"
    assert "red checks on the head: ci: failure" in t.rec.history[-2].summary
    assert t.session().stage == "a" and t.rec.iteration == 2


def test_running_checks_hold_the_merge_until_they_pass() -> None:
    t = merge_ticket()
    t.feed(HeadPushed(now=t.now(), sha="s1", pusher="ballet"))
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.finish("done", sha="s1")
    assert not t.of(MergePR)
    assert t.rec.waiting and (t.rec.waiting.kind, t.rec.waiting.sha) == ("checks", "s1")
    assert "to pass before merging" in t.rec.waiting.reason
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success", names=("ci",)))
    assert t.one(MergePR).sha == "s1"
    assert t.rec.waiting and t.rec.waiting.kind == "merge_result"
    t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    assert t.rec.status == "done"


def test_running_checks_that_fail_return_the_work() -> None:
    t = merge_ticket()
    t.feed(HeadPushed(now=t.now(), sha="s1", pusher="ballet"))
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.finish("done", sha="s1")
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="failure", names=("ci",)))
    assert not t.of(MergePR)
    assert t.rec.history[-2].outcome == "returned" and t.session().stage == "a"


def test_a_merge_held_by_github_for_pending_checks_waits_for_them() -> None:
    t = merge_ticket()
    t.finish("done", sha="s1")
    assert t.one(MergePR).sha == "s1"
    t.feed(MergeResult(now=t.now(), result="checks_pending", detail="ci is in progress"))
    assert t.rec.waiting and (t.rec.waiting.kind, t.rec.waiting.sha) == ("checks", "s1")
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success"))
    assert t.one(MergePR).sha == "s1"
