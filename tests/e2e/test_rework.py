"""Failures return the ticket to Implement; the iteration limit asks a person."""

from __future__ import annotations

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import (
    assert_merged_cleanly,
    assert_tracking,
    ballet_comments,
    ballet_labels,
    comment,
    merged,
    new_repo,
    outcomes,
    ticket,
    wait_until,
    waiting_for,
)

pytestmark = pytest.mark.anyio


async def test_review_requesting_changes_once_gives_two_iterations(stack: Stack) -> None:
    repo = await new_repo(stack, "rework")
    number = await ticket(stack, repo, directives="demo:review=changes_requested@1")

    view = await wait_until(stack, repo, number, merged, timeout=120)

    assert outcomes(view) == [
        ("implement", 1, "done"),
        ("review", 1, "changes_requested"),
        ("implement", 2, "done"),
        ("review", 2, "approve"),
        ("verify", 2, "pass"),
        ("integrate", 2, "merged"),
    ]
    assert view.record is not None and view.record.pr_number is not None
    on_pr = ballet_comments(view, view.record.pr_number)
    assert any(":report:review:1:1" in body and "changes_requested" in body for body in on_pr)
    assert any(":report:review:2:1" in body and "approve" in body for body in on_pr)
    await assert_merged_cleanly(stack, view, repo, number)
    # The first review's verdict stays red on the head it judged.
    first_head = {
        r["head_sha"]
        for r in view.state["check_runs"]
        if r["name"] == "ballet/review" and r["conclusion"] == "failure"
    }
    assert len(first_head) == 1 and first_head != {view.record.head_sha}


LIMIT_2 = demo.BALLET_YML.replace("iteration_limit: 3", "iteration_limit: 2")


async def test_iteration_limit_raises_a_question_answered_then_merged(stack: Stack) -> None:
    repo = await new_repo(stack, "limit", LIMIT_2)
    number = await ticket(
        stack,
        repo,
        directives="demo:review=changes_requested@1\ndemo:review=changes_requested@2",
    )

    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=120)

    record = view.record
    assert record is not None and record.iteration == 2
    assert ballet_labels(view, number) == {"ballet:waiting", "ballet:question"}
    assert_tracking(view, number)
    assert record.waiting is not None and demo.AUTHOR in record.waiting.who
    asks = [c for c in view.state["comments"] if f"@{demo.AUTHOR}" in c["body"]]
    assert asks, "the question mentions the person who started the ticket"

    await comment(stack, repo, number, demo.AUTHOR, "/ballet answer Ship it as it is.")
    view = await wait_until(stack, repo, number, merged, timeout=120)

    assert view.record is not None
    assert [qa.answer for qa in view.record.questions] == ["Ship it as it is."]
    assert max(run.iteration for run in view.record.history) == 2
    await assert_merged_cleanly(stack, view, repo, number)
