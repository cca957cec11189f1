"""A companion whose base requires GitHub's merge queue lands through it, in order
(core/companion_queue.py): the ticket waits for that queue, Ballet's checks go on the
companion's group commit, the group merged lands the next; leaving the queue unmerged
returns the work before anything landed and asks a person once something did."""

from __future__ import annotations

import pytest
from ballet.core.effects import MergePR, SetCheckRun
from ballet.core.events import (
    CompanionPROpened,
    MergeGroupRequested,
    MergeQueueLeft,
    MergeResult,
    PullRequestClosed,
)
from ballet.core.machine import IllegalEvent
from core_kit import Ticket, make_pipeline

GROUP = "9" * 40
BOT = "github-merge-queue[bot]"


def _at_integrate(*companions: str) -> Ticket:
    t = Ticket(make_pipeline(companions=companions))
    t.open_pr(number=8)
    heads = {repo: f"{repo[-3:]}-h1" for repo in companions}
    t.finish("done", sha="c1", companion_heads=heads)
    for n, repo in enumerate(companions, start=34):
        t.feed(CompanionPROpened(now=t.now(), repo=repo, number=n, head_sha=heads[repo]))
    t.finish("approve", sha="c1")
    t.finish("pass", sha="c1")
    return t


def _queued_lib() -> Ticket:
    t = _at_integrate("octo/lib")
    assert t.one(MergePR).repo == "octo/lib"
    t.feed(MergeResult(now=t.now(), result="queued", sha="lib-h1", repo="octo/lib"))
    return t


def _group(t: Ticket, repo: str | None = "octo/lib", head: str = "lib-h1") -> None:
    t.feed(MergeGroupRequested(now=t.now(), group_sha=GROUP, head_sha=head, repo=repo))


def _left(t: Ticket, reason: str, repo: str | None = "octo/lib", by: str = BOT) -> None:
    t.feed(MergeQueueLeft(now=t.now(), reason=reason, by=by, repo=repo))


def test_a_queued_companion_gets_ballets_checks_on_its_group_and_lands_the_next() -> None:
    t = _queued_lib()
    w = t.rec.waiting
    assert w is not None and (w.kind, w.sha) == ("merge_queue", "lib-h1")
    assert "merge queue of octo/lib to merge octo/lib#34" in w.reason
    _group(t)
    runs = {(c.repo, c.name, c.head_sha, c.conclusion) for c in t.of(SetCheckRun)}
    assert runs == {
        ("octo/lib", "ballet/implement", GROUP, "success"),
        ("octo/lib", "ballet/review", GROUP, "success"),
        ("octo/lib", "ballet/verify", GROUP, "success"),
    }
    assert all("lib-h1" in c.summary for c in t.of(SetCheckRun))
    assert t.rec.waiting is not None and t.rec.waiting.group_sha == GROUP
    # The group merged arrives as lib's pull request closed and merged: the ticket's own next.
    t.feed(PullRequestClosed(now=t.now(), merged=True, by=BOT, repo="octo/lib"))
    assert [p.state for p in t.rec.companion_prs] == ["merged"]
    assert [(m.repo, m.number, m.companion) for m in t.of(MergePR)] == [("octo/app", 8, False)]
    t.feed(MergeResult(now=t.now(), result="merged", sha="m", repo="octo/app"))
    assert t.rec.status == "done"


def test_the_queues_events_of_another_repository_or_head_are_not_this_waits() -> None:
    t = _queued_lib()
    with pytest.raises(IllegalEvent, match="merge queue of octo/lib, not its own"):
        _group(t, repo=None, head="c1")
    with pytest.raises(IllegalEvent, match="but lib-h1 was queued"):
        _group(t, head="lib-h0")
    with pytest.raises(IllegalEvent, match="not the merge queue of octo/docs"):
        _left(t, "CI_FAILURE", repo="octo/docs")
    with pytest.raises(IllegalEvent, match="merge queue of octo/lib, not its own"):
        _left(t, "CI_FAILURE", repo=None)
    # A merge result of lib while it waits in its queue is no answer awaited.
    with pytest.raises(IllegalEvent, match="no merge of octo/lib is awaited"):
        t.feed(MergeResult(now=t.now(), result="checks_failed", repo="octo/lib"))


def test_red_checks_on_the_companions_group_before_anything_landed_return_the_work() -> None:
    t = _queued_lib()
    _group(t)
    _left(t, "CI_FAILURE")
    assert t.rec.status == "running" and t.rec.stage == "implement"
    (why,) = t.rec.returned
    # Where the red checks ran: the next session's job reads them in lib, at the group.
    assert (why.kind, why.sha, why.repo, why.pr) == ("merge_checks_failed", GROUP, "octo/lib", 34)
    assert why.text == (
        "merge of octo/lib#34 returned by red required checks: required checks failed on "
        f"GitHub's merge queue's group {GROUP[:12]}"
    )
    assert t.rec.history[-2].outcome == "returned"
    assert not t.of(MergePR)


def test_a_companions_group_failing_after_one_landed_stops_with_the_question() -> None:
    t = _at_integrate("octo/lib", "octo/docs")
    t.feed(MergeResult(now=t.now(), result="merged", sha="m", repo="octo/lib"))
    assert t.one(MergePR).repo == "octo/docs"
    t.feed(MergeResult(now=t.now(), result="queued", sha="ocs-h1", repo="octo/docs"))
    _group(t, repo="octo/docs", head="ocs-h1")
    _left(t, "CI_FAILURE", repo="octo/docs")
    assert t.rec.status == "waiting" and t.rec.waiting is not None
    assert t.rec.waiting.kind == "question"
    assert t.rec.waiting.reason == (
        "landing stopped part way: landed octo/lib#34; octo/docs#35 did not land: red "
        f"required checks (required checks failed on GitHub's merge queue's group "
        f"{GROUP[:12]}); not tried yet: octo/app#8. Fix it, then `/ballet retry` lands what "
        "is left, in the same order"
    )
    # /ballet retry lands what is left, in order: docs joins its queue again.
    t.command("/ballet retry")
    assert [(m.repo, m.number) for m in t.of(MergePR)] == [("octo/docs", 35)]


def test_a_person_taking_the_companion_out_of_its_queue_is_a_question() -> None:
    t = _queued_lib()
    _left(t, "MANUAL", by="carol")
    w = t.rec.waiting
    assert w is not None and w.kind == "question"
    assert w.reason.startswith(
        "landing stopped part way: nothing landed; octo/lib#34 did not land: it left GitHub's "
        "merge queue unmerged by @carol (reason MANUAL); not tried yet: octo/app#8."
    )


def test_the_tickets_own_group_failing_after_its_companions_landed_asks_not_returns() -> None:
    t = _at_integrate("octo/lib")
    t.feed(MergeResult(now=t.now(), result="merged", sha="m", repo="octo/lib"))
    t.feed(MergeResult(now=t.now(), result="queued", sha="c1", repo="octo/app"))
    _group(t, repo=None, head="c1")
    _left(t, "CI_FAILURE", repo=None)
    w = t.rec.waiting
    assert t.rec.status == "waiting" and w is not None and w.kind == "question"
    assert w.reason.startswith(
        "landing stopped part way: landed octo/lib#34; octo/app#8 did not land: red required "
        "checks (required checks failed on GitHub's merge queue's group"
    )
