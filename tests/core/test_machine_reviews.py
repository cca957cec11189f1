"""What people say reaches the next session: returns carry their causes, reviews
steer from anywhere, and only the right people pass a review gate."""

from __future__ import annotations

from typing import Any

import pytest
from ballet.core.config import Policy
from ballet.core.effects import PostComment, ReplyToReview, StartSession
from ballet.core.events import (
    ChecksCompleted,
    ChecksStarted,
    HeadPushed,
    MergeResult,
    ReviewSubmitted,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.record import decode_record
from core_kit import Ticket, agent, make_pipeline, platform


def review(t: Ticket, state: str = "changes_requested", **kw: Any) -> None:
    fields: dict[str, Any] = {
        "author": "carol",
        "permission": "write",
        "commit_id": t.rec.head_sha,
        "review_id": 31,
        "body": "Please handle the empty list.",
    }
    fields.update(kw)
    t.feed(ReviewSubmitted(now=t.now(), state=state, **fields))


def gate_ticket(**kw: Any) -> Ticket:
    p = make_pipeline(
        (
            agent("implement"),
            platform("review", wait_for="review", next={"approve": "$done"}),
        ),
        **kw,
    )
    t = Ticket(pipeline=p)
    t.open_pr()
    t.finish("done", sha="h1")
    assert t.rec.waiting and t.rec.waiting.kind == "review"
    return t


def test_a_reject_carries_who_why_and_the_head_to_the_next_session() -> None:
    t = Ticket(pipeline=make_pipeline(policy=Policy(review="agent+human")))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    t.finish("pass", sha="h1")
    t.command("/ballet reject the flag must be --verbose, not -v", author="dana")
    spec = t.session()
    assert (spec.stage, spec.iteration) == ("implement", 2)
    (why,) = spec.returned
    assert (why.kind, why.by, why.sha) == ("rejected", "dana", "h1")
    assert why.text == "the flag must be --verbose, not -v"
    # Durable: the tracking comment's record holds the cause.
    assert decode_record(t.one_tracking().body).returned == (why,)


def test_red_checks_at_the_merge_and_a_conflict_name_their_cause() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    t.feed(ChecksCompleted(now=t.now(), head_sha="h1", conclusion="failure", names=("lint",)))
    t.finish("pass", sha="h1")
    (why,) = t.session().returned
    assert (why.kind, why.sha, why.stage) == ("merge_checks_failed", "h1", "integrate")
    assert "lint: failure" in why.text
    t.finish("done", sha="h2")
    t.finish("approve", sha="h2")
    t.finish("pass", sha="h2")
    t.feed(MergeResult(now=t.now(), result="conflict", detail="Merge conflict"))
    (why,) = t.session().returned
    assert (why.kind, why.sha) == ("merge_conflict", "h2")
    assert "Merge conflict" in why.text


def test_a_review_gate_counts_only_a_writer_among_approvers_on_the_head() -> None:
    t = gate_ticket(approvers=("erin",))
    with pytest.raises(IllegalEvent, match="write permission"):
        review(t, "approved", author="mallory", permission="read")
    with pytest.raises(IllegalEvent, match="write permission"):
        review(t, "approved", author="passerby", permission="none")
    with pytest.raises(IllegalEvent, match="not among the pipeline's approvers"):
        review(t, "approved", author="frank", permission="admin")
    with pytest.raises(IllegalEvent, match="must review the head"):
        review(t, "approved", author="erin", commit_id="h0")
    review(t, "approved", author="erin", author_is_bot=True)  # a bot (BALLET_TRUSTED_BOTS)
    assert t.rec.status == "waiting" and t.rec.waiting and t.rec.waiting.kind == "review"
    review(t, "approved", author="Erin")
    assert t.rec.status == "done"
    assert t.rec.approval and (t.rec.approval.by, t.rec.approval.sha) == ("Erin", "h1")


def test_a_new_head_lapses_a_review_approval() -> None:
    p = make_pipeline(
        (
            agent("implement"),
            platform("review", wait_for="review", next={"approve": "ci"}),
            platform("ci", wait_for="checks"),
        )
    )
    t = Ticket(pipeline=p)
    t.open_pr()
    t.finish("done", sha="h1")
    review(t, "approved")
    assert t.rec.waiting and t.rec.waiting.kind == "checks"
    t.feed(HeadPushed(now=t.now(), sha="h9", pusher="mallory"))
    assert t.rec.approval is None
    assert t.rec.stage == "review" and t.rec.waiting and t.rec.waiting.kind == "review"


@pytest.mark.parametrize("wait", ["approval", "checks", "merge", "question"])
def test_a_changes_request_sends_a_waiting_ticket_back_with_the_review(wait: str) -> None:
    t = Ticket(
        pipeline=make_pipeline(
            policy=Policy(review="agent+human", merge="manual" if wait == "merge" else "auto")
        )
    )
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    if wait == "question":
        t.finish("stuck", sha="h1")  # an outcome with no target asks a person
    else:
        t.finish("pass", sha="h1")
    if wait == "checks":
        t.feed(ChecksStarted(now=t.now(), head_sha="h1"))  # the merge waits for them
    if wait in ("checks", "merge"):
        t.command("/ballet approve")
    assert t.rec.waiting is not None
    if wait == "checks":
        assert t.rec.waiting.kind == "checks"
    else:
        assert t.rec.waiting.kind == wait
    review(t)
    spec = t.session()
    assert (spec.stage, spec.iteration) == ("implement", 2)
    (why,) = spec.returned
    assert (why.kind, why.by, why.review_id, why.text) == (
        "changes_requested",
        "carol",
        31,
        "Please handle the empty list.",
    )
    assert t.rec.open_question is None


def test_a_changes_request_during_a_session_acts_when_it_ends() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="h1")  # implement → review (an agent stage) runs now
    review(t)
    assert t.rec.status == "running" and len(t.rec.pending_reviews) == 1
    assert not t.of(StartSession)
    # People see it is heard: the tracking comment says what will happen.
    assert "**Changes requested** by @carol" in t.one_tracking().body
    t.finish("approve", sha="h1")  # the review stage approved; the person's review wins
    spec = t.session()
    assert (spec.stage, spec.iteration) == ("implement", 2)
    assert spec.returned[0].kind == "changes_requested" and not t.rec.pending_reviews
    assert "**Came back in iteration 2:** changes requested in a review by @carol" in (
        t.one_tracking().body
    )
    # The rework's commit is named on the review's thread, once.
    t.finish("done", sha="h2")
    reply = t.one(ReplyToReview)
    assert reply.review_id == 31 and "h2" in reply.body
    assert t.rec.returned[0].addressed_in == "h2"
    t.finish("approve", sha="h2")
    assert not t.of(ReplyToReview)


def test_a_rework_pushed_before_its_result_still_tells_the_review() -> None:
    # The push's webhook can be applied before the session's result: the record's
    # head is then the rework's already, and the review must still be told.
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="h1")
    review(t)  # heard while the review stage runs; acts when it ends
    t.finish("approve", sha="h1")
    assert t.session().iteration == 2
    t.feed(HeadPushed(now=t.now(), sha="h2", pusher="ballet[bot]"))
    assert t.rec.head_sha == "h2"
    t.finish("done", sha="h2")
    reply = t.one(ReplyToReview)
    assert reply.review_id == 31 and "h2" in reply.body
    assert t.rec.returned[0].addressed_in == "h2"


def test_a_rework_that_left_the_reviewed_head_tells_no_review() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="h1")
    review(t)
    t.finish("approve", sha="h1")
    t.finish("done", sha="h1")  # no new commit: nothing addressed the review
    assert not t.of(ReplyToReview)
    assert t.rec.returned[0].addressed_in is None


def test_reviews_that_do_not_count_change_nothing() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="h1")
    before = t.rec
    for kw in (
        {"author": "passerby", "permission": "none"},
        {"author": "reader", "permission": "read"},
    ):
        with pytest.raises(IllegalEvent):
            review(t, **kw)
    with pytest.raises(IllegalEvent, match="not a verdict"):
        review(t, "commented")
    assert t.rec == before


def test_a_bots_verdict_changes_nothing_and_the_bot_is_told_once_per_bot() -> None:
    t = gate_ticket()
    before = t.rec
    review(t, "approved", author="acme-ci[bot]", author_is_bot=True, permission="admin")
    told = t.one(PostComment)
    assert told.number == before.pr_number and told.marker.kind == "notice"
    assert "The review by `acme-ci[bot]` (approved) does not count" in told.body
    assert "BALLET_TRUSTED_BOTS" in told.body
    review(t, "changes_requested", author="acme-ci[bot]", author_is_bot=True)
    again = t.one(PostComment)
    assert again.marker == told.marker  # the same comment, edited: not one per review
    assert "(changes requested) does not count" in again.body
    review(t, "approved", author="renovate[bot]", author_is_bot=True)
    assert t.one(PostComment).marker != told.marker
    unchanged = {"version": before.version, "updated_at": before.updated_at}
    assert t.rec.model_copy(update=unchanged) == before
    assert not t.of(StartSession)
    with pytest.raises(IllegalEvent, match="not a verdict"):
        review(t, "commented", author="acme-ci[bot]", author_is_bot=True)


def test_reviews_ignore_leaves_steering_to_review_stages() -> None:
    t = Ticket(pipeline=make_pipeline(reviews="ignore"))
    t.open_pr()
    t.finish("done", sha="h1")
    with pytest.raises(IllegalEvent, match="reviews: ignore"):
        review(t)


def test_a_paused_ticket_resumes_into_the_review() -> None:
    t = Ticket()
    t.open_pr()
    t.command("/ballet pause")
    review(t)
    assert t.rec.status == "paused"
    t.command("/ballet resume")
    spec = t.session()
    assert spec.stage == "implement" and spec.returned[0].kind == "changes_requested"


def test_the_rework_loop_of_reviews_is_bounded_by_the_iteration_limit() -> None:
    t = Ticket(pipeline=make_pipeline(iteration_limit=2))
    t.open_pr()
    t.finish("done", sha="h1")
    review(t)
    t.finish("approve", sha="h1")
    assert t.rec.iteration == 2 and t.rec.status == "running"
    review(t, review_id=32)
    t.finish("done", sha="h2")
    assert t.rec.status == "waiting" and t.rec.waiting and t.rec.waiting.kind == "question"
    assert "iteration limit" in t.rec.waiting.reason


def test_waiving_drops_a_signoff_and_sessions_hear_of_signoff_changes() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",)))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    t.finish("pass", sha="h1")
    assert t.session().role == "security"
    t.finish("signed_off", sha="h1")
    assert [s.role for s in t.rec.signoffs_given] == ["security"]
    t.command("/ballet signoff waive security", author="dana")
    assert t.rec.signoffs_given == ()
    t.command("/ballet signoff require security", author="erin")
    assert t.rec.missing_signoffs() == ("security",)
    t.command("/ballet retry", author="erin")
    spec = t.session()
    assert spec.role == "security"  # required again: asked again before the merge
    assert spec.signoffs_required == ("security",) and spec.signoffs_given == ()
    assert [(c.role, c.action, c.by) for c in spec.signoff_changes] == [
        ("security", "waived", "dana"),
        ("security", "required", "erin"),
    ]
