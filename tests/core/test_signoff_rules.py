"""The sign-off rules people would trip over (issue 34): a person's merge decides,
a waived or deleted role is not asked again, role news reaches the stage agent,
and a signer's `changes` goes to whoever handed the ticket over."""

from __future__ import annotations

import pytest
from ballet.core.config import Policy
from ballet.core.effects import (
    CancelSession,
    ConvertToDraft,
    MarkReadyForReview,
    MergePR,
    PostComment,
    StartSession,
)
from ballet.core.events import MergeResult, PullRequestClosed, RolesInConfig
from ballet.core.machine import IllegalEvent
from ballet.core.report import Report
from ballet.core.returns import describe_change
from ballet.core.routing import handed_over_by
from core_kit import Ticket, agent, human, make_pipeline, platform


def at_the_gate(*roles: str, **kw: object) -> Ticket:
    """implement, review and verify done: the first role's sign-off session runs."""
    t = Ticket(pipeline=make_pipeline(signoffs=roles, **kw))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    return t


# -- 1. a person's merge decides ---------------------------------------------------


def test_a_persons_merge_ends_the_ticket_even_with_a_role_required_meanwhile() -> None:
    t = at_the_gate(policy=Policy(merge="manual"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "merge"
    t.command("/ballet signoff require security")
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="bob"))
    assert t.rec.status == "done" and not t.of(StartSession)
    assert t.rec.history[-1].outcome == "merged" and t.rec.signoff_role is None


# -- 2. a waived role is not asked again -----------------------------------------------


def test_waiving_the_role_whose_question_is_open_moves_on() -> None:
    t = at_the_gate("security")
    t.finish("lgtm")  # an unreadable verdict: a question about `security`
    assert t.rec.open_question is not None and t.rec.open_question.role == "security"
    t.command("/ballet signoff waive security")
    assert not t.of(StartSession) and t.of(MergePR)
    assert t.rec.open_question is None and t.rec.questions[-1].answer is not None
    assert "waived" in t.rec.questions[-1].answer
    t.command("/ballet answer go on")
    assert not t.of(StartSession)  # nothing to answer: no session for the waived role


@pytest.mark.parametrize("question", [False, True])
def test_a_role_waived_while_paused_is_not_asked_on_resume(question: bool) -> None:
    t = at_the_gate("security")
    if question:
        t.finish("lgtm")
    t.command("/ballet pause")
    t.command("/ballet signoff waive security")
    assert t.rec.status == "paused" and not t.of(StartSession)
    t.command("/ballet resume")
    assert not t.of(StartSession) and t.of(MergePR)
    assert t.rec.signoff_role is None and t.rec.open_question is None


def test_retry_of_a_role_waived_since_goes_through_the_gate() -> None:
    t = at_the_gate("security", "docs")
    t.command("/ballet pause")
    t.command("/ballet signoff waive security")
    t.command("/ballet resume")
    assert t.session().role == "docs"  # the next role, not the waived one
    t.finish("signed_off")
    assert t.of(MergePR)


# -- 3. a role deleted from .ballet.yml --------------------------------------------------


def roles_now(t: Ticket, *roles: str) -> None:
    t.feed(RolesInConfig(now=t.now(), roles=roles, sha="d0c5a1e5ba11e7d0c5"))


def test_a_role_deleted_while_its_sign_off_runs_is_let_go() -> None:
    t = at_the_gate("security", "docs")
    job = t.session().job_key
    roles_now(t, "docs")  # the push to the default branch deleted `security`
    assert t.one(CancelSession).job_key == job
    assert "no longer has the roles `security`" in t.of(PostComment)[0].body
    assert t.rec.signoffs_required == ("docs",) and t.rec.history[-2].outcome == "deleted"
    assert t.session().role == "docs"
    t.finish("signed_off")
    assert t.of(MergePR)


def test_a_role_deleted_before_the_gate_is_never_asked_and_the_agent_hears_it() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",)))
    t.open_pr()
    roles_now(t, "docs")  # while implement runs: that session goes on
    assert not t.of(CancelSession) and t.rec.signoffs_required == ()
    t.finish("done")
    (news,) = t.session().signoff_changes
    assert (news.role, news.action, news.by) == ("security", "deleted", "config:d0c5a1e5ba11")
    assert "no longer has the role `security`" in describe_change(news)
    t.finish("approve")
    t.finish("pass")
    assert t.of(MergePR) and not t.of(StartSession)


def test_a_config_that_keeps_every_required_role_changes_nothing() -> None:
    t = at_the_gate("security")
    with pytest.raises(IllegalEvent):
        roles_now(t, "security", "docs")


# -- 5. role news reaches the stage agent --------------------------------------------


def test_role_news_reaches_the_agent_past_other_roles_sessions() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("docs",)))
    t.open_pr()
    asks = Report(outcome="done", summary="s", require_signoffs=("security",))
    t.finish("done", report=asks)
    (added,) = t.session().signoff_changes  # review, the next stage agent
    assert (added.role, added.action, added.by) == ("security", "required", "stage:implement")
    assert (
        describe_change(added) == "stage `implement`'s report required the sign-off of `security`"
    )
    t.finish("approve")
    t.command("/ballet signoff waive docs")  # while verify runs
    t.finish("pass")
    assert t.session().role == "security"
    t.finish("changes", "rotate the key")
    back = t.session()
    assert (back.stage, back.kind) == ("verify", "agent")
    # Said while verify ran, and a sign-off session came between: verify hears it now.
    assert [(c.role, c.action, c.by) for c in back.signoff_changes] == [("docs", "waived", "alice")]


# -- 7. returns and who a signer's changes go to -----------------------------------------


def test_a_role_required_after_a_return_signs_off_on_a_draft() -> None:
    t = at_the_gate("security")
    t.finish("signed_off")
    t.feed(MergeResult(now=t.now(), result="conflict"))
    assert t.one(ConvertToDraft).number == 8
    t.command("/ballet signoff require docs")
    t.finish("done", sha="c2")
    t.finish("approve")
    t.finish("pass")
    assert t.session().role == "docs" and not t.rec.ready_for_review
    assert not t.of(MarkReadyForReview)
    t.finish("signed_off")
    assert t.of(MarkReadyForReview) and t.of(MergePR)


def test_changes_after_a_human_stage_go_back_to_its_approvers() -> None:
    t = at_the_gate(policy=Policy(review="agent+human"))
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    t.command("/ballet signoff require security")
    t.command("/ballet approve")
    assert t.session().role == "security" and t.rec.stage == "approval"
    t.finish("changes", "the token is logged")
    assert t.rec.waiting is not None and t.rec.waiting.kind == "approval"
    assert t.rec.stage == "approval" and not t.of(StartSession)
    asked = t.of(PostComment)[-1].body
    assert "sign-off `security` asked for changes: the token is logged" in asked
    t.command("/ballet reject fix what security said")
    assert (t.session().stage, t.rec.iteration) == ("implement", 2)


def test_changes_after_a_platform_stage_go_to_the_agent_before_it() -> None:
    p = make_pipeline(
        (
            agent("implement"),
            agent("verify", next={"pass": "checks"}),
            platform("checks", wait_for="checks"),
            human("approval"),
            platform("integrate", action="merge"),
        )
    )
    assert handed_over_by(p, "checks") == "verify"
    assert handed_over_by(p, "verify") == "verify"
    assert handed_over_by(p, "integrate") == "verify"
    assert handed_over_by(p, None) == "implement"
