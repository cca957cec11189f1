"""Where people decide (policy merge=approved), a ticket with companions lands only
once each pull request's head is approved: its own by a writer of its repository
(a review or `/ballet approve`), each companion's by an approving review of its head
by a writer of THAT repository. A new head there asks again."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ballet.core.config import Policy
from ballet.core.effects import MergePR, PostComment
from ballet.core.events import CompanionPROpened, ReviewSubmitted
from ballet.core.machine import IllegalEvent
from core_kit import Ticket, make_pipeline


def _at_the_landing(**kw: Any) -> Ticket:
    t = Ticket(make_pipeline(companions=("octo/lib",), policy=Policy(), **kw))
    t.open_pr(number=8)
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.finish("approve", sha="c1")
    t.finish("pass", sha="c1")
    return t


def _review(t: Ticket, repo: str | None, commit: str, **kw: Any) -> None:
    fields: dict[str, Any] = {"author": "carol", "permission": "write", "state": "approved"}
    fields.update(kw)
    t.feed(ReviewSubmitted(now=t.now(), commit_id=commit, review_id=9, repo=repo, **fields))


def test_the_tickets_own_approval_lands_nothing_until_the_companions_is_approved_there() -> None:
    t = _at_the_landing()
    w = t.rec.waiting
    assert w is not None and w.kind == "approval"
    assert "and octo/lib#34 at l1, each by an approving review of a writer there" in w.reason
    (asked,) = [c for c in t.of(PostComment) if "landing-approval" in c.marker.extra]
    assert "octo/lib#34 at l1" in asked.body
    _review(t, None, "c1")  # the ticket's own head, by a writer of octo/app
    assert t.of(MergePR) == []
    w = t.rec.waiting
    assert w is not None and w.kind == "approval"
    assert w.reason.startswith("a person to approve the companions' pull requests")
    _review(t, "octo/lib", "l1", author="dave")  # a writer of octo/lib
    (lib,) = t.of(MergePR)
    assert (lib.repo, lib.number, lib.sha) == ("octo/lib", 34, "l1")
    pr = t.rec.companion_prs[0]
    assert pr.approval is not None and (pr.approval.by, pr.approval.sha) == ("dave", "l1")


def test_a_companions_approval_first_then_the_tickets_own_lands_both_in_order() -> None:
    t = _at_the_landing()
    _review(t, "octo/lib", "l1")
    assert t.of(MergePR) == []  # the ticket's own head is not approved yet
    t.command("/ballet approve")
    assert [m.repo for m in t.of(MergePR)] == ["octo/lib"]


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"permission": "read"}, "write permission on octo/lib (they have read)"),
        ({"author_is_bot": True}, "a bot's approval"),
        ({"commit_id": "old"}, "the head of octo/lib#34 is l1"),
    ],
)
def test_a_readers_a_bots_or_an_older_heads_approval_there_does_not_count(
    fields: dict[str, Any], said: str
) -> None:
    t = _at_the_landing()
    _review(t, None, "c1")
    commit = fields.pop("commit_id", "l1")
    with pytest.raises(IllegalEvent, match=re.escape(said)):
        _review(t, "octo/lib", commit, **fields)
    assert t.of(MergePR) == [] and t.rec.companion_prs[0].approval is None


def test_only_the_pipelines_approvers_approve_a_companion_where_it_names_them() -> None:
    t = _at_the_landing(approvers=("erin",))
    with pytest.raises(IllegalEvent, match="not among the pipeline's approvers"):
        _review(t, "octo/lib", "l1")
    _review(t, "octo/lib", "l1", author="erin")
    assert t.rec.companion_prs[0].approval is not None


def test_a_new_head_in_the_companion_asks_for_its_approval_again() -> None:
    t = _at_the_landing()
    _review(t, "octo/lib", "l1")
    t.command("/ballet reject rename it in lib too")
    t.finish("done", sha="c2", companion_heads={"octo/lib": "l2"})
    t.finish("approve", sha="c2")
    t.finish("pass", sha="c2")
    w = t.rec.waiting
    assert w is not None and w.kind == "approval" and "octo/lib#34 at l2" in w.reason
    t.command("/ballet approve")
    assert t.of(MergePR) == []
    _review(t, "octo/lib", "l2")
    assert [m.repo for m in t.of(MergePR)] == ["octo/lib"]
