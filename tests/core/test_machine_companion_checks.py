"""A companion's checks heard while the ticket waits to land: a red one returns the
ticket as red checks on its own head do, naming the repository; a companion merge
held for its checks is tried again when they finish; a red one heard while a session
runs is kept and returns the ticket when it comes to land."""

from __future__ import annotations

import pytest
from ballet.core.companion_text import companions_line
from ballet.core.config import Policy
from ballet.core.effects import MergePR, OpenCompanionPR
from ballet.core.events import ChecksCompleted, CompanionPROpened, MergeResult
from ballet.core.machine import IllegalEvent
from ballet.core.render import STATE_BLOCK_START, tracking_text
from core_kit import Ticket, make_pipeline


def _with_lib(policy: Policy | None = None) -> Ticket:
    """Implemented (lib's pull request open at l1), reviewed: Verify runs."""
    kw = {"policy": policy} if policy is not None else {}
    t = Ticket(make_pipeline(companions=("octo/lib",), **kw))
    t.open_pr(number=8)
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1"})
    assert [e.repo for e in t.of(OpenCompanionPR)] == ["octo/lib"]
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.finish("approve", sha="c1")
    return t


def _lib_checks(t: Ticket, conclusion: str = "failure", sha: str = "l1") -> None:
    t.feed(
        ChecksCompleted(
            now=t.now(), head_sha=sha, conclusion=conclusion, names=("ci",), partial=True,
            repo="octo/lib",
        )
    )  # fmt: skip


def test_red_checks_on_the_companion_while_awaiting_approval_return_the_work_naming_it() -> None:
    t = _with_lib(Policy())  # people decide: the landing waits for an approval
    t.finish("pass", sha="c1")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    _lib_checks(t)
    assert t.rec.status == "running" and t.rec.stage == "implement"
    (why,) = t.rec.returned
    assert why.kind == "merge_checks_failed" and why.sha == "l1"
    assert why.text == "red checks on octo/lib#34 at l1: ci: failure"
    landing = t.rec.history[-2]
    assert (landing.stage, landing.outcome) == ("integrate", "returned")
    assert "octo/lib#34" in landing.summary
    assert t.of(MergePR) == []


def test_red_checks_on_the_companion_while_the_own_merge_waits_for_checks_return_it() -> None:
    t = _with_lib()  # merge: auto
    t.finish("pass", sha="c1")
    assert t.one(MergePR).repo == "octo/lib"
    t.feed(MergeResult(now=t.now(), result="merged", repo="octo/lib"))
    t.feed(MergeResult(now=t.now(), result="checks_pending", repo="octo/app"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "checks"
    _lib_checks(t)
    assert t.rec.stage == "implement"
    assert "red checks on octo/lib#34" in t.rec.returned[0].text


def test_a_companion_merge_held_for_its_checks_is_tried_when_they_finish() -> None:
    t = _with_lib()
    t.finish("pass", sha="c1")
    t.feed(MergeResult(now=t.now(), result="checks_pending", repo="octo/lib"))
    assert t.rec.waiting is not None and t.rec.waiting.reason.startswith("checks on octo/lib#34")
    _lib_checks(t, "success")
    merge = t.one(MergePR)
    assert (merge.repo, merge.number, merge.sha, merge.companion) == ("octo/lib", 34, "l1", True)
    _lib_checks(t, "failure")  # the merge reads them all: red returns from its answer
    t.feed(MergeResult(now=t.now(), result="checks_failed", detail="ci", repo="octo/lib"))
    assert t.rec.stage == "implement"


def test_red_checks_on_the_companion_while_a_session_runs_return_the_ticket_as_it_lands() -> None:
    t = _with_lib(Policy())
    _lib_checks(t)  # Verify runs: nothing can go back now; the verdict is kept
    (held,) = t.rec.companion_prs
    assert held.checks is not None and (held.checks.sha, held.checks.outcome) == ("l1", "fail")
    assert t.rec.stage == "verify" and t.rec.status == "running"
    with pytest.raises(IllegalEvent, match="held already"):
        _lib_checks(t)  # a redelivery changes nothing
    assert "octo/lib#34 open at `l1` (red checks: ci: failure)" in companions_line(t.rec)
    t.finish("pass", sha="c1")
    # Coming to land, nobody is asked to approve red work: it goes back, naming lib.
    assert t.rec.stage == "implement" and t.rec.waiting is None
    (why,) = t.rec.returned
    assert (why.kind, why.sha, why.repo, why.pr) == ("merge_checks_failed", "l1", "octo/lib", 34)
    assert why.text == "red checks on octo/lib#34 at l1: ci: failure"
    assert t.of(MergePR) == []
    # The next session's commits there are a new head: its own checks decide.
    t.finish("done", sha="c2", companion_heads={"octo/lib": "l2"})
    t.finish("approve", sha="c2")
    t.finish("pass", sha="c2")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"


def test_a_green_rerun_clears_a_red_verdict_held_on_the_companion() -> None:
    t = _with_lib(Policy())
    _lib_checks(t)
    t.feed(ChecksCompleted(now=t.now(), head_sha="l1", conclusion="success", repo="octo/lib"))
    t.finish("pass", sha="c1")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"


def test_a_companions_checks_are_refused_when_they_are_not_news() -> None:
    t = _with_lib(Policy())
    t.finish("pass", sha="c1")
    with pytest.raises(IllegalEvent, match="green checks on octo/lib#34"):
        _lib_checks(t, "success")
    with pytest.raises(IllegalEvent, match="the head of octo/lib#34 is l1"):
        _lib_checks(t, sha="old")
    with pytest.raises(IllegalEvent, match="octo/docs has no pull request"):
        t.feed(ChecksCompleted(now=t.now(), head_sha="d1", conclusion="failure", repo="octo/docs"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"


def test_a_red_checks_name_cannot_hide_the_tracking_comment() -> None:
    """A check's name is whatever the app or workflow that ran it says: in the tracking
    comment it must not open an HTML comment (hiding all after it) or break the line."""
    t = _with_lib(Policy())
    t.feed(
        ChecksCompleted(
            now=t.now(), head_sha="l1", conclusion="failure", names=("ci <!-- hidden\n\nnext",),
            partial=True, repo="octo/lib",
        )
    )  # fmt: skip
    shown = tracking_text(t.rec)
    assert "<!--" not in shown.split(STATE_BLOCK_START)[0]
    assert "(red checks: ci &lt;!-- hidden next: failure)" in shown
