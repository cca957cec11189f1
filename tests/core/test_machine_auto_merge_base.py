"""The base moves while GitHub's auto-merge waits (issue 33, item 3): behind where the
rules want branches up to date, the pinned head is brought up to date (`UpdateBranch`)
and the pin moves to the update, whose push asks nobody; into a conflict, the work goes
where base conflicts go, once, whichever of GitHub's two words comes first."""

from __future__ import annotations

from typing import Any

import pytest
from ballet.core.config import Policy
from ballet.core.effects import StartSession, UpdateBranch, WithdrawMerge
from ballet.core.events import (
    AutoMergeDisabled,
    BaseBehind,
    BaseConflict,
    HeadPushed,
    MergeResult,
    PullRequestClosed,
    ReviewSubmitted,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.render import tracking_text
from core_kit import Ticket, agent, make_pipeline, platform

CONFLICT = "Merge conflict with the base branch"
APPROVED: dict[str, Any] = {"state": "approved", "author": "carol", "permission": "write"}


def auto_merging(stages: Any = None) -> Ticket:
    """The default pipeline (or `stages`), people deciding, landing h1 by GitHub's
    auto-merge on carol's approval."""
    t = Ticket(pipeline=make_pipeline(stages, policy=Policy()))
    t.open_pr()
    t.finish("done", sha="h1")
    for outcome in ("approve", "pass") if stages is None else ():
        t.finish(outcome, sha="h1")
    if stages is not None:  # the people's gate, then the integrator
        t.feed(ReviewSubmitted(now=t.now(), review_id=40, commit_id="h1", **APPROVED))
        t.finish("done", sha="h1")
    if t.rec.waiting is not None and t.rec.waiting.kind == "approval":
        t.feed(ReviewSubmitted(now=t.now(), review_id=41, commit_id="h1", **APPROVED))
    t.feed(MergeResult(now=t.now(), result="auto_merge", sha="h1"))
    w = t.rec.waiting
    assert w is not None and (w.kind, w.sha) == ("auto_merge", "h1"), w
    return t


def behind(t: Ticket, head: str = "h1") -> None:
    t.feed(BaseBehind(now=t.now(), base="main", base_sha="b" * 40, head_sha=head))


def test_behind_while_auto_merge_waits_is_brought_up_to_date_pinned_and_asks_nobody() -> None:
    t = auto_merging()
    behind(t)
    update = t.one(UpdateBranch)
    assert (update.repo, update.number, update.sha) == (t.rec.ticket.repo, t.rec.pr_number, "h1")
    assert t.rec.waiting is not None and t.rec.waiting.sha == "h1"  # moved only by the update

    t.feed(MergeResult(now=t.now(), result="updated", sha="u2"))
    w = t.rec.waiting
    assert w is not None and (w.kind, w.sha) == ("auto_merge", "u2")
    assert "brought up to date" in tracking_text(t.rec)
    t.feed(HeadPushed(now=t.now(), sha="u2", pusher="ballet[bot]"))
    assert t.rec.head_sha == "u2" and not t.of(WithdrawMerge)
    assert t.rec.approval is not None and t.rec.waiting is not None
    assert t.rec.waiting.kind == "auto_merge"
    # Redelivered, the old move and the update's push change nothing.
    with pytest.raises(IllegalEvent, match="pinned"):
        behind(t)
    with pytest.raises(IllegalEvent):
        t.feed(HeadPushed(now=t.now(), sha="u2", pusher="ballet[bot]"))
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="ballet[bot]"))
    assert t.rec.status == "done" and t.rec.history[-1].outcome == "merged"


def test_a_head_moved_from_the_pin_is_not_updated_and_its_push_asks_again() -> None:
    t = auto_merging()
    t.feed(HeadPushed(now=t.now(), sha="w3", pusher="bob"))
    t.one(WithdrawMerge)
    with pytest.raises(IllegalEvent, match="auto-merge"):
        behind(t, "w3")  # waiting for a person now: no update without them
    t2 = auto_merging()
    with pytest.raises(IllegalEvent, match="not the pinned h1"):
        behind(t2, "w3")  # heard before the push: the push asks


def test_an_update_is_heard_only_while_auto_merge_or_the_landing_waits() -> None:
    t = Ticket(pipeline=make_pipeline(policy=Policy()))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    t.finish("pass", sha="h1")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    with pytest.raises(IllegalEvent):
        behind(t)
    with pytest.raises(IllegalEvent):
        t.feed(MergeResult(now=t.now(), result="updated", sha="u2"))


GATED = (
    agent("implement", skills=("implementer",)),
    platform("people", wait_for="review", next={"approve": "integrate"}),
    agent("integrate", skills=("integrator",), next={"merged": "$done", "returned": "implement"}),
)


def conflict(t: Ticket) -> None:
    t.feed(BaseConflict(now=t.now(), base="main", base_sha="b" * 40, head_sha="h1", files=("a",)))


def test_a_base_conflict_then_auto_merge_off_goes_to_the_integrator_once() -> None:
    t = auto_merging(GATED)
    conflict(t)
    t.one(WithdrawMerge)  # GitHub turns it off; Ballet makes sure
    assert (t.rec.status, t.rec.stage) == ("running", "integrate")
    assert [c.kind for c in t.rec.returned] == ["merge_conflict"]
    sessions = len(t.of(StartSession))
    with pytest.raises(IllegalEvent):
        t.feed(AutoMergeDisabled(now=t.now(), reason=CONFLICT))
    assert len(t.of(StartSession)) == sessions


def test_auto_merge_off_over_a_conflict_then_the_base_push_goes_to_the_integrator_once() -> None:
    t = auto_merging(GATED)
    t.feed(AutoMergeDisabled(now=t.now(), reason=CONFLICT))
    assert (t.rec.status, t.rec.stage) == ("running", "integrate")
    assert [c.kind for c in t.rec.returned] == ["merge_conflict"]
    with pytest.raises(IllegalEvent):
        conflict(t)
