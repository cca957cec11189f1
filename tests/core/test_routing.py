"""Routing defaults, optional stages, model routing per phase."""

from __future__ import annotations

from ballet.core import routing
from ballet.core.config import Policy
from core_kit import agent, human, make_pipeline, platform


def test_outcomes_follow_next_then_defaults() -> None:
    p = make_pipeline()
    assert routing.next_target(p, "review", "changes_requested") == ("implement", "")
    assert routing.next_target(p, "verify", "done") == ("approval", "")
    target, why = routing.next_target(p, "verify", "weird")
    assert target == "$question" and "`weird`, which has no target" in why
    assert routing.next_target(p, "integrate", "done") == ("$done", "")


def test_an_explicit_question_target_says_so() -> None:
    p = make_pipeline((agent("a", next={"stuck": "$question"}),))
    assert routing.next_target(p, "a", "stuck") == (
        "$question",
        "stage `a` routes outcome `stuck` to a question",
    )


def test_optional_stages_are_skipped_unless_human_review_is_on() -> None:
    p = make_pipeline()
    assert routing.skip_off_stages(p, Policy(), "approval") == ("integrate", "")
    assert routing.skip_off_stages(p, Policy(review="agent+human"), "approval") == ("approval", "")
    assert routing.skip_off_stages(p, Policy(), "$done") == ("$done", "")


def test_skipped_stage_without_next_goes_to_the_following_stage() -> None:
    p = make_pipeline((agent("a"), human("h", optional=True), agent("b")))
    assert routing.skip_off_stages(p, Policy(), "h") == ("b", "")


def test_a_loop_of_skipped_stages_is_a_question() -> None:
    p = make_pipeline(
        (
            human("h1", optional=True, next={"approve": "h2"}),
            human("h2", optional=True, next={"approve": "h1"}),
        )
    )
    target, why = routing.skip_off_stages(p, Policy(), "h1")
    assert target == "$question" and "loop" in why


def test_backwards_and_rework() -> None:
    p = make_pipeline()
    assert routing.is_backwards(p, "review", "implement")
    assert routing.is_backwards(p, "review", "review")
    assert not routing.is_backwards(p, "review", "verify")
    assert not routing.is_backwards(p, None, "implement")
    assert not routing.is_backwards(p, "review", "$done")
    assert routing.rework_stage(p) == "implement"
    assert routing.rework_stage(make_pipeline((human("h"), agent("code")))) == "code"
    assert routing.rework_stage(make_pipeline((human("h"),))) == "h"


def test_which_targets_wait_for_signoffs() -> None:
    p = make_pipeline(
        (
            agent("a"),
            human("h"),
            platform("m", action="merge"),
            platform("c", wait_for="checks"),
            platform("r", wait_for="review"),
        )
    )
    assert [
        routing.needs_signoffs(p, t) for t in ("a", "h", "m", "c", "r", "$done", "$failed")
    ] == [
        False,
        True,
        True,
        False,
        True,
        True,
        False,
    ]


def test_job_keys() -> None:
    assert routing.job_key("o/r#1", "implement", 2, 1, None) == "o/r#1:implement:2:1"
    assert routing.job_key("o/r#1", "implement", 2, 1, "plan") == "o/r#1:implement:2:1:plan"


def test_a_job_key_names_one_session() -> None:
    """It is the arq job id and the workspace's name: every field tells sessions apart."""
    keys = {
        routing.job_key("o/r#1", "implement", 1, 1, "plan"),
        routing.job_key("o/r#1", "implement", 1, 1, "research"),
        routing.job_key("o/r#1", "implement", 1, 2, "plan"),
        routing.job_key("o/r#1", "implement", 2, 1, "plan"),
        routing.job_key("o/r#1", "implement", 1, 1, None),
        routing.job_key("o/r#2", "implement", 1, 1, None),
        routing.job_key("o/r#1", "review", 1, 1, None),
    }
    assert len(keys) == 7
