"""A companion's base moves while the ticket waits for people: a conflict goes to the
integrator naming the repository and files (core/base_moves.py); a new head GitHub gave
the companion's branch (its update-branch) is the companion's head from then on, and
asks its writers again (core/companion_heads.py)."""

from __future__ import annotations

import pytest
from ballet.core.config import Policy
from ballet.core.effects import ConvertToDraft, MarkReadyForReview, MergePR, StartSession
from ballet.core.events import BaseConflict, CompanionPROpened, HeadPushed, ReviewSubmitted
from ballet.core.handlers import IllegalEvent
from core_kit import Ticket, agent, make_pipeline

STAGES = (
    agent("implement", skills=("implementer",), next={"done": "integrate"}),
    agent("integrate", skills=("integrator",), next={"merged": "$done", "returned": "implement"}),
)


def _waiting_for_people() -> Ticket:
    """Integrated: the landing waits for a person's approval of both pull requests."""
    t = Ticket(make_pipeline(STAGES, companions=("octo/lib",), policy=Policy()))
    t.open_pr(number=8)
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.finish("done", sha="c1")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    return t


def _lib_approved(t: Ticket, sha: str) -> None:
    t.feed(
        ReviewSubmitted(now=t.now(), state="approved", author="carol", permission="write",
                        commit_id=sha, repo="octo/lib")
    )  # fmt: skip


def test_a_companions_base_moving_into_a_conflict_goes_to_the_integrator_naming_it() -> None:
    t = _waiting_for_people()
    t.feed(
        BaseConflict(now=t.now(), base="main", base_sha="b" * 40, head_sha="l1",
                     files=("from_7.py",), repo="octo/lib")
    )  # fmt: skip
    assert (t.rec.status, t.rec.stage, t.rec.iteration) == ("running", "integrate", 2)
    (why,) = t.rec.returned
    assert (why.kind, why.by, why.sha) == ("merge_conflict", "base:octo/lib:main", "l1")
    assert (why.repo, why.pr) == ("octo/lib", 34)
    assert why.text == (
        f"`main` of octo/lib moved to {'b' * 12} while the ticket waited at `integrate`, and "
        "octo/lib#34 now conflicts with it; both changed `from_7.py`. Merge `main` into the "
        "branch of octo/lib keeping both intents: the base's change and the ticket's."
    )
    assert t.one(StartSession).spec.returned == (why,)
    # The integrator's session brings lib's branch up to date too: the landing waits for
    # lib's new head to be approved.
    t.finish("done", "merged main into both", sha="c1", companion_heads={"octo/lib": "l2"})
    w = t.rec.waiting
    assert w is not None and w.kind == "approval" and "octo/lib#34 at l2" in w.reason


def test_a_companions_conflict_found_on_another_head_or_repository_is_refused() -> None:
    t = _waiting_for_people()
    with pytest.raises(IllegalEvent, match="found on l0, but the head is l1"):
        t.feed(BaseConflict(now=t.now(), base="main", base_sha="b" * 40, head_sha="l0",
                            repo="octo/lib"))  # fmt: skip
    with pytest.raises(IllegalEvent, match="octo/docs has no open pull request"):
        t.feed(BaseConflict(now=t.now(), base="main", base_sha="b" * 40, repo="octo/docs"))


def test_a_new_head_of_the_companion_lapses_its_approval_and_is_named() -> None:
    t = _waiting_for_people()
    _lib_approved(t, "l1")
    # GitHub merged lib's moved base into its branch (the edge's update-branch).
    t.feed(HeadPushed(now=t.now(), sha="l2", pusher="ballet[bot]", repo="octo/lib"))
    (pr,) = t.rec.companion_prs
    assert pr.head_sha == "l2" and t.rec.head_sha == "c1"
    w = t.rec.waiting
    assert w is not None and w.kind == "approval" and "octo/lib#34 at l2" in w.reason
    t.command("/ballet approve", author="carol")
    assert not t.of(MergePR)  # lib's new head is not approved yet
    with pytest.raises(IllegalEvent, match="already the known head of octo/lib#34"):
        t.feed(HeadPushed(now=t.now(), sha="l2", pusher="ballet[bot]", repo="octo/lib"))
    _lib_approved(t, "l2")
    merge = t.one(MergePR)
    assert (merge.repo, merge.sha) == ("octo/lib", "l2")


def test_a_head_pushed_where_the_ticket_has_no_open_pull_request_is_refused() -> None:
    t = _waiting_for_people()
    with pytest.raises(IllegalEvent, match="octo/docs has no pull request"):
        t.feed(HeadPushed(now=t.now(), sha="d1", pusher="carol", repo="octo/docs"))


def test_companions_pull_requests_follow_the_tickets_own_into_review_and_back() -> None:
    t = Ticket(make_pipeline(STAGES, companions=("octo/lib",), policy=Policy()))
    t.open_pr(number=8)
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1"})
    assert t.rec.ready_for_review  # the integrator's stage lands: the ticket is in review
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    # Opened as a draft after the ticket's own went into review: lib's follows, so
    # GitHub says when its branch is behind its base, and people read the whole change.
    assert [(e.repo, e.number) for e in t.of(MarkReadyForReview)] == [("octo/lib", 34)]
    t.finish("done", sha="c1")
    t.feed(
        BaseConflict(now=t.now(), base="main", base_sha="b" * 40, head_sha="l1", repo="octo/lib")
    )
    assert [(e.repo, e.number) for e in t.of(ConvertToDraft)] == [("octo/app", 8), ("octo/lib", 34)]
