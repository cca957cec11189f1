"""People decide what lands (policy merge=approved, the default): the landing waits
for a writer's approval of the head — a review or `/ballet approve` — and only then
asks GitHub to merge. `merge: auto` lands with no person."""

from __future__ import annotations

from typing import Any

import pytest
from ballet.core.config import Policy
from ballet.core.effects import MarkReadyForReview, MergePR, PostComment, StartSession
from ballet.core.events import (
    ChecksCompleted,
    ChecksStarted,
    HeadPushed,
    MergeResult,
    ReconcileTick,
    ReviewSubmitted,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.machine import labels_for
from ballet.core.render import tracking_text
from core_kit import Ticket, agent, make_pipeline, platform

DEFAULT = Policy()


def at_the_landing(**kw: Any) -> Ticket:
    """The default pipeline run to its landing under the default policy, head h1."""
    t = Ticket(pipeline=make_pipeline(**({"policy": DEFAULT} | kw)))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    t.finish("pass", sha="h1")
    return t


def review(t: Ticket, state: str = "approved", **kw: Any) -> None:
    fields: dict[str, Any] = {"author": "carol", "permission": "write", "commit_id": "h1"}
    fields.update(kw)
    t.feed(ReviewSubmitted(now=t.now(), state=state, review_id=40, **fields))


def test_the_default_policy_is_that_people_decide() -> None:
    assert DEFAULT.merge == "approved"


def test_the_landing_waits_for_a_person_and_says_who_and_how() -> None:
    t = at_the_landing()
    assert t.rec.status == "waiting" and t.rec.stage == "integrate"
    w = t.rec.waiting
    assert w is not None and w.kind == "approval" and w.who == ()
    assert not t.of(MergePR)
    t.one(MarkReadyForReview)  # ready for review: people are asked to read it now
    (asked,) = [c for c in t.of(PostComment) if "landing-approval" in c.marker.extra]
    assert "@alice" in asked.body and "`h1`" in asked.body
    assert "approve" in asked.body.lower() and "`/ballet approve`" in asked.body
    assert "anyone with write permission" in asked.body
    text = tracking_text(t.rec)
    assert "a person to approve the head h1 before it lands" in text
    assert "`/ballet approve`" in text
    assert "ballet:question" in labels_for(t.rec)
    # A person's decision has no timeout: the reconciler leaves it be.
    with pytest.raises(IllegalEvent, match="has no timeout"):
        t.feed(ReconcileTick(now=t.now(60 * 24 * 30)))


def test_a_writers_approving_review_of_the_head_lands_it() -> None:
    t = at_the_landing()
    review(t)
    merge = t.one(MergePR)
    assert (merge.number, merge.sha) == (8, "h1")
    assert t.rec.approval is not None and t.rec.approval.by == "carol"
    t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    assert t.rec.status == "done"
    assert t.rec.history[-1].outcome == "merged"


@pytest.mark.parametrize("permission", ["read", "triage", "none"])
def test_a_readers_or_an_outsiders_approval_does_not_land_it(permission: str) -> None:
    t = at_the_landing()
    with pytest.raises(IllegalEvent, match="counts only with write permission"):
        review(t, author="mallory", permission=permission)
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    assert t.rec.approval is None


def test_an_approval_of_an_older_head_does_not_land_it() -> None:
    t = at_the_landing()
    t.feed(HeadPushed(now=t.now(), sha="h2", pusher="bob"))
    assert t.rec.waiting is not None and "approve the head h2 " in t.rec.waiting.reason
    assert not t.of(PostComment)  # the tracking comment says so; no second request
    with pytest.raises(IllegalEvent, match="but the head is h2: it must review the head"):
        review(t, commit_id="h1")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    review(t, commit_id="h2")
    assert t.one(MergePR).sha == "h2"


def test_ballet_approve_by_a_writer_lands_it_and_a_readers_is_refused() -> None:
    t = at_the_landing()
    t.command("/ballet approve", author="bob", permission="read")
    assert not t.of(MergePR) and t.rec.waiting is not None
    t.command("/ballet approve h1", author="dana", permission="write")
    assert t.one(MergePR).sha == "h1"
    assert t.rec.approval is not None and t.rec.approval.by == "dana"


def test_only_the_pipelines_approvers_may_approve_where_it_names_them() -> None:
    t = at_the_landing(approvers=("erin",))
    assert t.rec.waiting is not None and t.rec.waiting.who == ("erin",)
    with pytest.raises(IllegalEvent, match="not among the pipeline's approvers"):
        review(t, author="carol")
    t.command("/ballet approve", author="carol")
    assert not t.of(MergePR)
    review(t, author="erin")
    t.one(MergePR)


def test_an_approval_given_before_the_landing_holds_for_the_same_head() -> None:
    t = Ticket(pipeline=make_pipeline(policy=DEFAULT))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    review(t)  # while verify runs: kept for h1
    assert t.rec.status == "running" and t.rec.approval is not None
    t.finish("pass", sha="h1")
    assert t.one(MergePR).sha == "h1"


def test_an_approval_lapses_when_a_session_leaves_a_new_head() -> None:
    t = Ticket(pipeline=make_pipeline(policy=DEFAULT))
    t.open_pr()
    t.finish("done", sha="h1")
    review(t)  # of h1, while review runs
    t.finish("approve", sha="h1")
    t.finish("pass", sha="h2")  # verify pushed a fix
    assert not t.of(MergePR)
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"


def test_a_push_while_the_approved_head_waits_for_its_checks_asks_again() -> None:
    t = at_the_landing()
    t.feed(ChecksStarted(now=t.now(), head_sha="h1"))
    review(t)
    assert not t.of(MergePR)  # its checks still run: the landing waits for them
    assert t.rec.waiting is not None and t.rec.waiting.kind == "checks"
    t.feed(HeadPushed(now=t.now(), sha="h2", pusher="mallory"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    assert t.rec.approval is None
    t.feed(ChecksCompleted(now=t.now(), head_sha="h2", conclusion="success", names=("ci",)))
    assert not t.of(MergePR)  # green checks do not land an unapproved head


def test_red_checks_while_awaiting_the_approval_return_the_work() -> None:
    t = at_the_landing()
    t.feed(ChecksCompleted(now=t.now(), head_sha="h1", conclusion="failure", names=("ci",)))
    spec = t.session()
    assert (spec.stage, spec.iteration) == ("implement", 2)
    (why,) = spec.returned
    assert (why.kind, why.sha) == ("merge_checks_failed", "h1")


def test_a_reject_at_the_landing_returns_the_work_with_who_and_why() -> None:
    t = at_the_landing()
    t.command("/ballet reject the flag must be documented", author="dana")
    spec = t.session()
    assert (spec.stage, spec.iteration) == ("implement", 2)
    (why,) = spec.returned
    assert (why.kind, why.by, why.text) == ("rejected", "dana", "the flag must be documented")
    assert t.rec.history[-2].outcome == "returned"


def test_changes_requested_at_the_landing_follow_the_review_rules() -> None:
    t = at_the_landing()
    review(t, state="changes_requested", body="Name it --verbose.")
    spec = t.session()
    assert spec.stage == "implement"
    assert spec.returned[0].kind == "changes_requested"


def test_the_policy_changed_at_the_landing_goes_on_as_it_says() -> None:
    t = at_the_landing()
    t.command("/ballet policy merge=manual")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge"
    t.command("/ballet policy merge=approved")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    t.command("/ballet policy merge=auto")
    assert t.one(MergePR).sha == "h1"


def test_merge_auto_lands_with_no_person() -> None:
    t = at_the_landing(policy=Policy(merge="auto"))
    assert t.one(MergePR).sha == "h1"
    assert t.rec.approval is None


def test_an_integrators_done_waits_for_the_approval_too() -> None:
    p = make_pipeline(
        (
            agent("implement", next={"done": "integrate"}),
            agent("integrate", skills=("integrator",), next={"returned": "implement"}),
        ),
        policy=DEFAULT,
    )
    t = Ticket(pipeline=p)
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("done", sha="h2")  # the integrator merged the base in
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    review(t, commit_id="h2")
    assert t.one(MergePR).sha == "h2"
    assert not t.of(StartSession)


def test_a_platform_merge_after_a_review_gate_lands_on_the_gates_approval() -> None:
    p = make_pipeline(
        (
            agent("implement"),
            platform("review", wait_for="review", next={"approve": "integrate"}),
            platform("integrate", action="merge", next={"merged": "$done"}),
        ),
        policy=DEFAULT,
    )
    t = Ticket(pipeline=p)
    t.open_pr()
    t.finish("done", sha="h1")
    review(t)  # the gate's approval of h1 is the person's decision on h1
    assert t.one(MergePR).sha == "h1"
