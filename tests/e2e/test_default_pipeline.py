"""A labelled issue goes through Implement → Review → Verify → Integrate to a merge."""

from __future__ import annotations

import pytest
from ballet.core.render import find_marker
from ballet.demo.stack import Stack
from scenarios import ballet_comments, merged, new_repo, outcomes, ticket, wait_until

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
    pr = record.pr_number
    # One report comment per agent stage run, on the PR, plus the tracking comment.
    on_pr = ballet_comments(view, pr)
    assert sum("ballet:state" in body for body in on_pr) == 1
    markers = [find_marker(body) for body in on_pr]
    for stage in ("implement", "review", "verify"):
        assert markers.count(f"{repo}#{number}:report:{stage}:1:1") == 1, stage
    # The work is on the default branch now, and the issue is labelled done.
    assert view.state["branches"]["main"] == view.pull["merge_commit_sha"]  # type: ignore[index]
    assert "ballet:done" in view.issue(number)["labels"]
    # Every agent stage left a completed check run on the PR's head.
    names = {run["name"] for run in view.state["check_runs"] if run["status"] == "completed"}
    assert {"ballet/implement", "ballet/review", "ballet/verify"} <= names
