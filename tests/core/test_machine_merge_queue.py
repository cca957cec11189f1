"""A ticket that lands through GitHub's merge queue (core/merge_queue.py): it waits for
the queue, reports Ballet's checks on the group's commit, ends done when the group
merges, and returns with the group's red checks, or asks, when it leaves unmerged."""

from __future__ import annotations

import pytest
from ballet.core.config import Policy
from ballet.core.effects import MergePR, SetCheckRun, StartSession
from ballet.core.events import (
    MergeGroupRequested,
    MergeQueueLeft,
    MergeResult,
    PullRequestClosed,
)
from ballet.core.handlers import IllegalEvent
from ballet.core.render import waiting_line
from core_kit import Ticket, agent, make_pipeline, platform

GROUP = "9" * 40


def _queued() -> Ticket:
    stages = (
        agent("implement", next={"done": "review"}),
        agent("review", next={"approve": "integrate", "changes_requested": "implement"}),
        platform("integrate", action="merge", next={"merged": "$done", "returned": "implement"}),
    )
    t = Ticket(make_pipeline(stages, policy=Policy(merge="auto")))
    t.open_pr()
    t.finish("done", sha="h1")
    t.finish("approve", sha="h1")
    assert t.one(MergePR).sha == "h1"
    # Review's verdict is on the head before the merge is asked for: a base whose
    # rules require Ballet's checks would refuse the merge (or the queue) otherwise.
    kinds = [(e.kind, getattr(e, "name", "")) for e in t.effects]
    assert kinds.index(("set_check_run", "ballet/review")) < kinds.index(("merge_pr", ""))
    t.feed(MergeResult(now=t.now(), result="queued", sha="h1"))
    return t


def test_a_queued_pull_request_waits_for_the_queue_and_says_so() -> None:
    t = _queued()
    w = t.rec.waiting
    assert t.rec.status == "waiting" and w is not None
    assert (w.kind, w.sha) == ("merge_queue", "h1")
    assert "merge queue" in waiting_line(t.rec) and "no one needs to act" in waiting_line(t.rec)


def test_the_group_gets_ballets_checks_as_they_passed_on_the_head() -> None:
    t = _queued()
    t.feed(MergeGroupRequested(now=t.now(), group_sha=GROUP, head_sha="h1"))
    runs = {(c.name, c.head_sha, c.status, c.conclusion) for c in t.of(SetCheckRun)}
    assert runs == {
        ("ballet/implement", GROUP, "completed", "success"),
        ("ballet/review", GROUP, "completed", "success"),
    }
    assert all("h1" in c.summary for c in t.of(SetCheckRun))
    assert t.rec.waiting is not None and t.rec.waiting.group_sha == GROUP
    # A group built from another head is not this ticket's news.
    with pytest.raises(IllegalEvent):
        t.feed(MergeGroupRequested(now=t.now(), group_sha="8" * 40, head_sha="h0"))


def test_the_group_merged_ends_the_ticket_merged() -> None:
    t = _queued()
    t.feed(MergeGroupRequested(now=t.now(), group_sha=GROUP, head_sha="h1"))
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="github-merge-queue[bot]"))
    assert t.rec.status == "done"
    assert t.rec.history[-1].outcome == "merged"


def test_a_group_with_red_checks_returns_the_work_with_the_groups_commit() -> None:
    t = _queued()
    t.feed(MergeGroupRequested(now=t.now(), group_sha=GROUP, head_sha="h1"))
    t.feed(MergeQueueLeft(now=t.now(), reason="CI_FAILURE", by="github-merge-queue[bot]"))
    assert t.rec.status == "running" and t.rec.stage == "implement"
    (why,) = t.rec.returned
    assert (why.kind, why.sha) == ("merge_checks_failed", GROUP)
    assert "merge queue" in why.text
    # The next session is told, and reads the red checks on the group's commit.
    assert [c.sha for c in t.one(StartSession).spec.returned] == [GROUP]


def test_a_conflict_in_the_queue_returns_the_work_as_a_merge_conflict() -> None:
    t = _queued()
    t.feed(MergeQueueLeft(now=t.now(), reason="MERGE_CONFLICT", by="github-merge-queue[bot]"))
    assert t.rec.stage == "implement"
    assert [c.kind for c in t.rec.returned] == ["merge_conflict"]


def test_a_person_taking_it_out_of_the_queue_is_asked_about() -> None:
    t = _queued()
    t.feed(MergeQueueLeft(now=t.now(), reason="MANUAL", by="carol"))
    w = t.rec.waiting
    assert w is not None and w.kind == "question"
    assert "@carol" in w.reason and "MANUAL" in w.reason


def test_queue_events_do_not_apply_outside_the_queue() -> None:
    t = Ticket(make_pipeline(policy=Policy(merge="auto")))
    t.open_pr()
    t.finish("done", sha="h1")
    with pytest.raises(IllegalEvent):
        t.feed(MergeQueueLeft(now=t.now(), reason="CI_FAILURE"))
