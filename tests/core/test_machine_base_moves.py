"""The base moves into a conflict while the ticket waits (issue 33, item 3): to the
integrator with a `merge_conflict` cause and the files, else to rework; from a gate
before the integrator, the resolved head goes back to the gate's people."""

from __future__ import annotations

import pytest
from ballet.core.config import Policy
from ballet.core.effects import MergePR, StartSession
from ballet.core.events import BaseConflict, ReviewSubmitted
from ballet.core.handlers import IllegalEvent
from core_kit import Ticket, agent, make_pipeline, platform

GATED = (
    agent("implement", skills=("implementer",)),
    platform("people", wait_for="review", next={"approve": "integrate"}),
    agent("integrate", skills=("integrator",), next={"merged": "$done", "returned": "implement"}),
)


def _conflict(t: Ticket, head: str | None = "impl") -> None:
    t.feed(
        BaseConflict(now=t.now(), base="main", base_sha="b" * 40, head_sha=head, files=("calc.py",))
    )


def _at_the_gate() -> Ticket:
    t = Ticket(make_pipeline(GATED))
    t.open_pr()
    t.finish("done", sha="impl")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "review"
    return t


def test_a_conflict_at_a_review_gate_goes_to_the_integrator_with_the_files() -> None:
    t = _at_the_gate()
    _conflict(t)

    assert (t.rec.status, t.rec.stage, t.rec.iteration) == ("running", "integrate", 2)
    (why,) = t.rec.returned
    assert why.kind == "merge_conflict" and why.stage == "people" and why.by == "base:main"
    assert "`calc.py`" in why.text and "both intents" in why.text
    assert t.one(StartSession).spec.returned == (why,)
    assert t.rec.history[-2].outcome == "returned"


def test_the_resolved_head_goes_back_to_the_gate_and_lands_after_the_approval() -> None:
    t = _at_the_gate()
    _conflict(t)
    t.finish("done", "merged main, kept both", sha="resolved")

    assert not t.of(MergePR)
    assert t.rec.stage == "people" and t.rec.waiting is not None
    assert t.rec.waiting.kind == "review" and t.rec.resume_at is None
    approve = ReviewSubmitted(
        now=t.now(), state="approved", author="carol", permission="write", commit_id="resolved"
    )
    t.feed(approve)
    assert t.rec.stage == "integrate" and t.rec.status == "running"
    t.finish("done", "already up to date", sha="resolved")
    assert t.one(MergePR).sha == "resolved"


def test_without_an_integrator_a_conflict_goes_to_implement() -> None:
    t = Ticket(make_pipeline(policy=Policy(merge="manual")))
    t.open_pr()
    t.finish("done", sha="impl")
    t.finish("approve", sha="impl")
    t.finish("pass", sha="impl")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge"
    _conflict(t)
    assert (t.rec.stage, t.rec.iteration, t.rec.resume_at) == ("implement", 2, None)
    assert [c.kind for c in t.rec.returned] == ["merge_conflict"]


def test_a_conflict_at_the_integrators_own_landing_runs_it_again() -> None:
    seed = (GATED[0], GATED[2])
    t = Ticket(make_pipeline(seed, policy=Policy(merge="manual")))
    t.open_pr()
    t.finish("done", sha="impl")
    t.finish("done", sha="merged-base")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge"
    _conflict(t, head="merged-base")
    assert (t.rec.stage, t.rec.iteration, t.rec.resume_at) == ("integrate", 2, None)
    t.finish("done", sha="resolved")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge"


def test_a_conflict_means_nothing_to_a_running_ticket_or_an_older_head() -> None:
    t = Ticket(make_pipeline(GATED))
    t.open_pr()
    with pytest.raises(IllegalEvent, match="does not apply: the ticket is running"):
        _conflict(t)
    t.finish("done", sha="impl")
    with pytest.raises(IllegalEvent, match="the head is impl"):
        _conflict(t, head="older")
    t.feed(
        ReviewSubmitted(
            now=t.now(), state="approved", author="c", permission="write", commit_id="impl"
        )
    )
    assert t.rec.status == "running"
    t.finish(
        "done", sha="merged-base", report_fields={"questions": [{"text": "?", "blocking": True}]}
    )
    assert t.rec.waiting is not None and t.rec.waiting.kind == "question"
    with pytest.raises(IllegalEvent, match="waiting for people or a merge"):
        _conflict(t, head="merged-base")
