"""Every stage run shows on the PR head as a check run of its own."""

from __future__ import annotations

from ballet.core.check_runs import conclusion_of
from ballet.core.config import Policy
from ballet.core.effects import SetCheckRun
from ballet.core.events import HeadPushed, MergeResult
from core_kit import Ticket, agent, human, make_pipeline


def checks(t: Ticket) -> list[tuple[str, str, str, str | None]]:
    return [(c.name, c.head_sha, c.status, c.conclusion) for c in t.of(SetCheckRun)]


def test_each_stage_run_starts_and_completes_its_own_check_run() -> None:
    t = Ticket()
    assert not t.of(SetCheckRun)  # no PR yet: nowhere to put a check
    t.open_pr(sha="c0")
    assert not t.of(SetCheckRun)  # c0 is the empty seed commit the PR was opened on
    t.command("/ballet status")
    assert not t.of(SetCheckRun)  # nothing started or ended
    t.finish("done", summary="added the flag", sha="c1")
    assert checks(t) == [
        ("ballet/implement", "c1", "completed", "success"),
        ("ballet/review", "c1", "in_progress", None),
    ]
    assert t.of(SetCheckRun)[0].summary == "**done**: added the flag"
    assert "stage `review`, iteration 1" in t.of(SetCheckRun)[1].summary
    t.finish("approve", sha="c1")
    t.finish("pass", sha="c1")
    assert checks(t) == [
        ("ballet/verify", "c1", "completed", "success"),
        ("ballet/integrate", "c1", "in_progress", None),
    ]
    assert "Waiting for the merge" in t.of(SetCheckRun)[1].summary
    t.feed(MergeResult(now=t.now(), result="merged"))
    assert checks(t) == [("ballet/integrate", "c1", "completed", "success")]


def test_a_failing_verdict_fails_its_check_and_the_rework_runs_again() -> None:
    t = Ticket()
    t.open_pr(sha="c0")
    t.finish("done", sha="c1")
    t.finish("changes_requested", sha="c1")
    assert checks(t) == [
        ("ballet/review", "c1", "completed", "failure"),
        ("ballet/implement", "c1", "in_progress", None),  # iteration 2 on the same head
    ]
    t.command("/ballet cancel")
    assert checks(t) == [("ballet/implement", "c1", "completed", "cancelled")]


def test_a_run_whose_head_moves_leaves_no_check_running_on_the_old_head() -> None:
    t = Ticket()
    t.open_pr(sha="c0")
    t.finish("done", sha="c1")  # the session pushed c1
    assert checks(t) == [  # nothing was left running on the seed commit c0
        ("ballet/implement", "c1", "completed", "success"),
        ("ballet/review", "c1", "in_progress", None),
    ]
    t.feed(HeadPushed(now=t.now(), sha="c2", pusher="bob"))  # a person pushes mid-review
    assert checks(t) == [
        ("ballet/review", "c1", "completed", "neutral"),
        ("ballet/review", "c2", "in_progress", None),
    ]
    assert "moved to c2" in t.of(SetCheckRun)[0].summary


def test_phases_share_their_stage_check_run() -> None:
    phases = ("research", "plan", "implement")
    t = Ticket(pipeline=make_pipeline((agent("implement", phases=phases, next={"done": "$done"}),)))
    t.open_pr(sha="c0")
    assert checks(t) == []  # research started before the PR, on the seed commit
    t.finish("done", sha="c0")
    assert checks(t) == [("ballet/implement", "c0", "in_progress", None)]
    assert "phase `plan`" in t.one(SetCheckRun).summary
    t.finish("done", sha="c0")
    t.finish("done", sha="c0")
    assert checks(t) == [("ballet/implement", "c0", "completed", "success")]


def test_a_signoff_session_has_a_check_run_named_for_its_role() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",)))
    t.open_pr(sha="c0")
    t.finish("done", sha="c0")
    t.finish("approve", sha="c0")
    t.finish("pass", sha="c0")
    assert checks(t) == [
        ("ballet/verify", "c0", "completed", "success"),
        ("ballet/signoff-security", "c0", "in_progress", None),
    ]
    assert "role `security`" in t.of(SetCheckRun)[1].summary
    t.finish("changes", sha="c0")
    assert checks(t)[0] == ("ballet/signoff-security", "c0", "completed", "failure")


def test_a_human_stage_check_waits_for_its_approver_and_ends_with_the_verdict() -> None:
    stages = (
        agent("implement"),
        human("approval", next={"approve": "$done", "reject": "$failed"}),
    )
    t = Ticket(pipeline=make_pipeline(stages, approvers=("bob",), policy=Policy()))
    t.open_pr(sha="c0")
    t.finish("done", sha="c0")
    started = t.of(SetCheckRun)[1]
    assert (started.name, started.status) == ("ballet/approval", "in_progress")
    assert "Waiting for approval of stage `approval`" in started.summary
    t.command("/ballet reject not like this", author="bob")
    assert checks(t) == [("ballet/approval", "c0", "completed", "failure")]


def test_outcomes_map_to_conclusions() -> None:
    assert [conclusion_of(o) for o in ("pass", "approve", "done", "signed_off", "merged")] == [
        "success"
    ] * 5
    failing = ("failed", "fail", "changes_requested", "changes", "returned", "rejected")
    assert {conclusion_of(o) for o in (*failing, "timed_out")} == {"failure"}
    assert {conclusion_of(o) for o in ("cancelled", "retried", "paused", "superseded")} == {
        "cancelled"
    }
    assert {conclusion_of(o) for o in ("question", "waived", "skipped", "lgtm", None)} == {
        "neutral"
    }
