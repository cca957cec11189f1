"""A check finishing tells one check's conclusion; the head's verdict is read
(`ReadChecks`) only when a wait needs it, so CI finishing while sessions run
costs GitHub no request."""

from __future__ import annotations

import pytest
from ballet.core.effects import MergePR, ReadChecks
from ballet.core.events import ChecksCompleted, ChecksStarted, HeadPushed, MergeResult
from ballet.core.machine import IllegalEvent
from core_kit import Ticket, agent, make_pipeline, platform


def one_check(t: Ticket, sha: str, conclusion: str = "success", name: str = "ci") -> None:
    t.feed(
        ChecksCompleted(
            now=t.now(),
            head_sha=sha,
            conclusion=conclusion,  # type: ignore[arg-type]
            names=(name,),
            partial=True,
        )
    )


def checks_pipeline() -> Ticket:
    return Ticket(
        pipeline=make_pipeline(
            (agent("a"), platform("ci", wait_for="checks", next={"pass": "$done", "fail": "a"}))
        )
    )


def test_a_green_check_while_a_session_runs_is_remembered_and_read_when_the_wait_begins() -> None:
    t = checks_pipeline()
    t.feed(HeadPushed(now=t.now(), sha="s1", pusher="alice"))
    one_check(t, "s1")
    assert t.effects == [] and t.rec.checks and t.rec.checks.outcome == "finished"
    t.finish("done", sha="s1")
    assert t.one(ReadChecks).sha == "s1"
    assert t.rec.waiting and t.rec.waiting.kind == "checks" and t.rec.waiting.checks_started
    # The edge's answer: every check on the head, read.
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success", names=("ci", "e2e")))
    assert t.rec.status == "done"


def test_while_waiting_a_green_check_asks_for_the_verdict_and_a_red_one_is_the_verdict() -> None:
    t = checks_pipeline()
    t.finish("done", sha="s1")
    # Nothing heard of yet: one read finds completions never heard of (a lost delivery).
    assert t.one(ReadChecks).sha == "s1"
    assert t.rec.waiting and t.rec.waiting.kind == "checks" and not t.rec.waiting.checks_started
    one_check(t, "s1")
    assert t.one(ReadChecks).sha == "s1" and t.rec.status == "waiting"
    one_check(t, "s1", "failure", "lint")
    assert t.session().stage == "a" and "lint: failure" in t.session().note


def test_a_read_that_finds_checks_running_marks_the_wait_started() -> None:
    t = checks_pipeline()
    t.finish("done", sha="s1")
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))  # the edge's answer to ReadChecks
    assert t.rec.waiting and t.rec.waiting.checks_started


def test_a_red_check_is_not_undone_by_a_green_one_on_the_same_head() -> None:
    t = checks_pipeline()
    t.feed(HeadPushed(now=t.now(), sha="s0", pusher="alice"))
    one_check(t, "s0", "failure", "lint")
    with pytest.raises(IllegalEvent, match="already red"):
        one_check(t, "s0")
    assert t.rec.checks and t.rec.checks.outcome == "fail"


def test_a_merge_reads_the_checks_itself() -> None:
    t = Ticket()
    t.open_pr()
    one_check(t, t.rec.head_sha or "")
    t.finish("done", sha="s1")
    one_check(t, "s1")
    t.finish("approve", sha="s1")
    t.finish("pass", sha="s1")
    assert t.rec.stage == "integrate" and t.of(ReadChecks) == []
    assert t.one(MergePR).sha == "s1"


def test_a_merge_waiting_for_running_checks_reads_them_once() -> None:
    # Checks started on the head, and their end was never heard (its delivery went
    # with Redis): the wait reads them, or it waits for an event that is gone.
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="s1")
    t.feed(ChecksStarted(now=t.now(), head_sha="s1"))
    t.finish("approve", sha="s1")
    t.finish("pass", sha="s1")
    assert t.rec.waiting and t.rec.waiting.kind == "checks"
    assert t.one(ReadChecks).sha == "s1" and t.of(MergePR) == []
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success", names=("ci",)))
    assert t.one(MergePR).sha == "s1"


def test_checks_ending_while_github_held_the_merge_are_read_not_waited_for() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done", sha="s1")
    t.finish("approve", sha="s1")
    t.finish("pass", sha="s1")
    assert t.one(MergePR).sha == "s1"
    # The checks finish while the merge request is in flight; GitHub then answers
    # that it holds the merge for them: their end was already applied.
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success", names=("ci",)))
    t.feed(MergeResult(now=t.now(), result="checks_pending"))
    assert t.one(ReadChecks).sha == "s1"
    t.feed(ChecksCompleted(now=t.now(), head_sha="s1", conclusion="success", names=("ci",)))
    assert t.one(MergePR).sha == "s1"
