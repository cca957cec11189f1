"""The merge Ballet asked for is pinned to the approved head (core/merge_pins.py): the
landing's own update-branch moves the pin to the commit it made, anyone else's push
withdraws the merge and asks again; where auto-merge is the repository's way GitHub
merges the pinned head, and auto-merge turned off returns the work or asks."""

from __future__ import annotations

from typing import Any

import pytest
from ballet.core.config import Policy
from ballet.core.effects import MergePR, PostComment, WithdrawMerge
from ballet.core.events import (
    AutoMergeDisabled,
    CompanionPROpened,
    HeadPushed,
    MergeResult,
    PullRequestClosed,
    ReviewSubmitted,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.machine import advance
from ballet.core.record import decode_record, encode_record
from ballet.core.render import tracking_text
from core_kit import Ticket, make_pipeline


def approved_and_merging(policy: Policy | None = None) -> Ticket:
    """The default pipeline at its landing, h1 approved by carol: its merge asked for."""
    t = Ticket(pipeline=make_pipeline(policy=policy or Policy()))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    t.finish("pass", sha="h1")
    if t.rec.policy.merge == "approved":
        fields: dict[str, Any] = {"author": "carol", "permission": "write", "commit_id": "h1"}
        t.feed(ReviewSubmitted(now=t.now(), state="approved", review_id=40, **fields))
    return t


def test_the_merge_waits_pinned_to_the_approved_head() -> None:
    t = approved_and_merging()
    merge = t.one(MergePR)
    assert merge.sha == "h1"
    w = t.rec.waiting
    assert w is not None and (w.kind, w.sha) == ("merge_result", "h1")


def test_the_landings_own_update_moves_the_pin_and_its_push_asks_nobody() -> None:
    t = approved_and_merging()
    t.feed(MergeResult(now=t.now(), result="updated", sha="u2"))
    w = t.rec.waiting
    assert w is not None and (w.kind, w.sha) == ("merge_result", "u2")
    assert "brought up to date" in tracking_text(t.rec)
    t.feed(HeadPushed(now=t.now(), sha="u2", pusher="ballet[bot]"))
    assert t.rec.head_sha == "u2" and not t.of(WithdrawMerge)
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge_result"
    t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    assert t.rec.status == "done" and t.rec.history[-1].outcome == "merged"


def test_a_writers_push_after_the_update_withdraws_the_merge_and_asks_again() -> None:
    t = approved_and_merging()
    t.feed(MergeResult(now=t.now(), result="updated", sha="u2"))
    t.feed(HeadPushed(now=t.now(), sha="u2", pusher="ballet[bot]"))
    t.feed(HeadPushed(now=t.now(), sha="w3", pusher="bob"))
    t.one(WithdrawMerge)
    w = t.rec.waiting
    assert w is not None and w.kind == "approval" and t.rec.head_sha == "w3"
    assert t.rec.approval is None
    (asked,) = [c for c in t.of(PostComment) if "landing-approval:w3" in c.marker.extra]
    assert "`w3`" in asked.body
    # The edge's answer to the withdrawn merge finds nothing waiting for it.
    with pytest.raises(IllegalEvent):
        t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    # Redelivered, the push changes nothing.
    with pytest.raises(IllegalEvent):
        t.feed(HeadPushed(now=t.now(), sha="w3", pusher="bob"))


def test_under_merge_auto_a_new_head_is_merged_in_its_turn() -> None:
    t = approved_and_merging(Policy(merge="auto"))
    t.feed(HeadPushed(now=t.now(), sha="w3", pusher="bob"))
    t.one(WithdrawMerge)
    merge = t.one(MergePR)
    assert merge.sha == "w3"
    assert t.rec.waiting is not None and t.rec.waiting.sha == "w3"


def test_auto_merge_waits_for_github_and_the_merge_ends_it_even_after_redis_was_lost() -> None:
    t = approved_and_merging()
    t.feed(MergeResult(now=t.now(), result="auto_merge", sha="h1"))
    w = t.rec.waiting
    assert w is not None and (w.kind, w.sha) == ("auto_merge", "h1")
    assert "auto-merge" in tracking_text(t.rec) and "no one needs to act" in tracking_text(t.rec)
    # The tracking comment's state block is all a rebuilt record has.
    rebuilt = decode_record(encode_record(t.rec))
    assert rebuilt.waiting == t.rec.waiting
    record, _ = advance(rebuilt, PullRequestClosed(now=t.now(), merged=True, by="ballet[bot]"))
    assert record.status == "done" and record.history[-1].outcome == "merged"
    with pytest.raises(IllegalEvent):
        advance(record, PullRequestClosed(now=t.now(), merged=True, by="ballet[bot]"))


def test_a_push_while_auto_merge_waits_turns_it_off_and_asks_again() -> None:
    t = approved_and_merging()
    t.feed(MergeResult(now=t.now(), result="auto_merge", sha="h1"))
    t.feed(HeadPushed(now=t.now(), sha="w3", pusher="bob"))
    t.one(WithdrawMerge)
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"


def test_auto_merge_off_over_a_conflict_returns_the_work() -> None:
    t = approved_and_merging()
    t.feed(MergeResult(now=t.now(), result="auto_merge", sha="h1"))
    t.feed(AutoMergeDisabled(now=t.now(), reason="Merge conflict with the base branch"))
    assert t.rec.status == "running" and t.rec.stage == "implement"
    (why,) = t.rec.returned
    assert why.kind == "merge_conflict" and why.sha == "h1"
    assert "auto-merge off" in why.text and "conflict" in why.text


def test_auto_merge_off_by_a_person_asks() -> None:
    t = approved_and_merging()
    t.feed(MergeResult(now=t.now(), result="auto_merge", sha="h1"))
    t.feed(AutoMergeDisabled(now=t.now(), reason="Turned off", by="carol"))
    w = t.rec.waiting
    assert w is not None and w.kind == "question"
    assert "@carol" in w.reason and "`/ballet retry`" in w.reason
    with pytest.raises(IllegalEvent, match="auto-merge"):
        t.feed(AutoMergeDisabled(now=t.now(), reason="Turned off", by="carol"))


def test_after_the_companions_landed_the_tickets_own_waits_pinned_or_for_auto_merge() -> None:
    t = Ticket(make_pipeline(companions=("octo/lib",), policy=Policy(merge="auto")))
    t.open_pr(number=8)
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.finish("approve", sha="c1")
    t.finish("pass", sha="c1")
    t.feed(MergeResult(now=t.now(), result="merged", sha="m", repo="octo/lib"))
    assert [(m.repo, m.sha) for m in t.of(MergePR)] == [("octo/app", "c1")]
    t.feed(MergeResult(now=t.now(), result="updated", sha="u2", repo="octo/app"))
    assert t.rec.waiting is not None and (t.rec.waiting.kind, t.rec.waiting.sha) == (
        "merge_result",
        "u2",
    )
    t.feed(MergeResult(now=t.now(), result="auto_merge", sha="u2", repo="octo/app"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "auto_merge"
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="ballet[bot]"))
    assert t.rec.status == "done"
