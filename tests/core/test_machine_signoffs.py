"""Role sign-offs: sessions of their own before "in review" and "done"."""

from __future__ import annotations

from ballet.core.effects import (
    CancelSession,
    ConvertToDraft,
    MarkReadyForReview,
    MergePR,
    PostComment,
    PostReply,
    React,
    RequestReviewers,
)
from ballet.core.report import Report
from core_kit import Ticket, make_pipeline


def gated(**kw: object) -> Ticket:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",), **kw))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    return t


def test_each_missing_role_gets_its_own_session_before_in_review() -> None:
    t = gated()
    spec = t.session()
    assert (spec.kind, spec.role, spec.runtime, spec.skills) == (
        "signoff",
        "security",
        "codex",
        ("reviewer",),
    )
    assert spec.instructions == "Review for security." and spec.job_key.endswith(
        "signoff-security:1:1"
    )
    assert not t.of(MarkReadyForReview) and not t.of(MergePR)
    assert t.rec.gate_target == "integrate"
    t.finish("signed_off")
    assert t.rec.signoffs_given[0].by == "role:security"
    # Ballet's check runs go ahead of the merge (a base's rules may require them).
    kinds = [e.kind for e in t.effects if e.kind != "set_check_run"]
    assert kinds[:3] == ["post_comment", "mark_ready_for_review", "merge_pr"]
    assert t.rec.stage == "integrate" and t.rec.gate_target is None


def test_changes_from_a_role_go_back_to_the_stage_that_handed_it_over() -> None:
    t = gated()  # `verify` passed and handed the ticket to the sign-off gate
    t.finish("changes", "hard-coded token in config.py")
    spec = t.session()
    assert (spec.stage, spec.iteration, spec.kind) == ("verify", 2, "agent")
    assert "sign-off `security` asked for changes: hard-coded token" in spec.note
    (why,) = spec.returned
    assert (why.kind, why.by, why.stage) == ("signoff_changes", "role:security", "verify")
    assert why.text == "hard-coded token in config.py"


def test_an_unreadable_signoff_verdict_is_a_question() -> None:
    t = gated()
    t.finish("lgtm")
    assert (
        t.rec.waiting and "reported `lgtm`, not `signed_off` or `changes`" in t.rec.waiting.reason
    )
    assert t.rec.questions[-1].role == "security"
    t.command("/ballet answer please decide")
    assert t.session().role == "security" and t.session().attempt == 2


def test_signoffs_do_not_go_stale_and_reviewers_are_requested() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",), approvers=("bob",)))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    t.finish("signed_off")
    assert t.one(RequestReviewers).reviewers == ("bob",)
    from ballet.core.events import MergeResult

    t.feed(MergeResult(now=t.now(), result="conflict"))
    # Back in the agents' hands: the pull request is a draft again until the gate.
    assert t.one(ConvertToDraft).number == 8 and not t.rec.ready_for_review
    t.finish("done", sha="c2")
    t.finish("approve")
    t.finish("pass")
    # Signed off before the return, not stale: ready for review again and merged.
    assert [e.kind for e in t.effects if e.kind not in ("post_comment", "set_check_run")][:3] == [
        "mark_ready_for_review",
        "request_reviewers",
        "merge_pr",
    ]


def test_a_report_can_require_another_role() -> None:
    t = Ticket()
    t.finish("done", report=Report(outcome="done", summary="s", require_signoffs=("docs", "nope")))
    assert t.rec.signoffs_required == ("docs",)
    bodies = [c.body for c in t.of(PostComment)]
    assert any("requires sign-off from: docs" in b for b in bodies)
    assert any("unknown roles nope; ignored" in b for b in bodies)


def test_people_require_and_waive_but_bots_can_neither() -> None:
    t = Ticket()
    t.command("/ballet signoff require security", author="dependabot[bot]", bot=True)
    assert "is a bot" in t.one(PostReply).body and t.rec.signoffs_required == ()
    t.command("/ballet signoff require security")
    assert t.rec.signoffs_required == ("security",) and t.of(React)
    t.command("/ballet signoff require security")
    assert "already required" in t.one(PostReply).body
    t.command("/ballet signoff require ghost")
    assert "`ghost` is not a role of this pipeline (roles: security, docs)" in t.one(PostReply).body
    t.command("/ballet signoff waive security", author="dependabot[bot]", bot=True)
    assert "is a bot" in t.one(PostReply).body
    t.command("/ballet signoff waive security")
    assert t.rec.signoffs_required == () and t.rec.signoffs_waived == ("security",)
    assert "waived the sign-off from `security`" in t.one(PostComment).body
    t.command("/ballet signoff waive security")
    assert "is not a required sign-off (required: none)" in t.one(PostReply).body
    t.command("/ballet signoff require security")
    assert t.rec.signoffs_waived == ()


def test_waiving_the_role_whose_session_runs_moves_on() -> None:
    t = gated()
    job = t.session().job_key
    t.command("/ballet signoff waive security")
    assert t.one(CancelSession).job_key == job
    assert t.of(MergePR) and t.rec.history[-2].outcome == "waived"


def test_waiving_while_paused_does_not_start_anything() -> None:
    t = gated()
    t.command("/ballet pause")
    t.command("/ballet signoff waive security")
    assert t.rec.status == "paused" and not t.of(MergePR)


def test_done_without_a_merge_still_waits_for_signoffs() -> None:
    from core_kit import agent

    t = Ticket(pipeline=make_pipeline((agent("a"),), signoffs=("docs",), branch=None))
    t.finish("done")
    assert t.rec.status == "running" and t.session().role == "docs"
    t.finish("signed_off")
    assert t.rec.status == "done"
