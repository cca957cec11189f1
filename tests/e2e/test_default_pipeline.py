"""A labelled issue goes through Implement → Review → Verify → Integrate to a merge."""

from __future__ import annotations

import pytest
from ballet.demo.stack import Stack
from scenarios import (
    assert_merged_cleanly,
    ballet_checks,
    ballet_comments,
    merged,
    new_repo,
    outcomes,
    ticket,
    wait_until,
)

pytestmark = pytest.mark.anyio


async def test_default_pipeline_to_merged(stack: Stack) -> None:
    repo = await new_repo(stack, "default-flow")
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=90)

    record = view.record
    assert record is not None and record.pr_number is not None
    assert outcomes(view) == [
        ("implement", 1, "done"),
        ("review", 1, "approve"),
        ("verify", 1, "pass"),
        ("integrate", 1, "merged"),
    ]
    await assert_merged_cleanly(stack, view, repo, number)
    pr = record.pr_number
    # The tracking comment lives on the PR; the issue gets no comment of Ballet's
    # (GitHub links the PR from it: its body says "Closes #N", issue 24).
    assert ballet_comments(view, number) == []
    assert f"Closes #{number}" in view.issue(pr)["body"]
    # One report per stage run, on the PR, each saying its outcome.
    on_pr = ballet_comments(view, pr)
    for stage, outcome in (("review", "approve"), ("verify", "pass"), ("integrate", "merged")):
        report = next(b for b in on_pr if f"{repo}#{number}:report:{stage}:1:1 " in b)
        assert f"`{outcome}`" in report, report
    assert ballet_checks(view, record.head_sha or "") == {
        "ballet/implement": ("completed", "success"),
        "ballet/review": ("completed", "success"),
        "ballet/verify": ("completed", "success"),
        "ballet/integrate": ("completed", "success"),
    }
    # The draft PR opened on an empty seed commit while implement ran: its check went
    # straight to the head implement left, and nothing was left running on the seed.
    earlier = [
        (r["name"], r["status"], r["conclusion"])
        for r in view.state["check_runs"]
        if r["name"].startswith("ballet/") and r["head_sha"] != record.head_sha
    ]
    assert earlier == []
