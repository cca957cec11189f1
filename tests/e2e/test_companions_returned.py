"""A companion's red CI returns the ticket, and the next session is told why in full
(issue 37): heard while people decide, it returns the ticket at once; heard while the
agents work, it is kept and returns the ticket when it comes to land, before anyone
is asked to approve red work; the failing checks' output and annotations are read in
the companion's repository, which the next Implement session is told by name."""

from __future__ import annotations

from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import comment, merged, ticket, wait_until
from test_companions import merges_in_order, waiting_in
from test_people_heard import review, review_thread
from witnessed import HUMAN, WITNESS, WITNESSED, witnessed, witnessed_repo

pytestmark = pytest.mark.anyio

LINT = {
    "name": "lint",
    "status": "completed",
    "conclusion": "failure",
    "output": {
        "title": "2 problems",
        "summary": "lint found 2 problems",
        "annotations": [
            {"path": "from_1.py", "start_line": 3, "end_line": 3, "annotation_level": "failure",
             "message": "name `add` shadows lib.add", "title": "shadowing"},
        ],
    },
}  # fmt: skip


async def witnessed_pair(stack: Stack, lib: str, app: str) -> tuple[str, str]:
    """acme/<lib> (the demo) and acme/<app> naming it a companion, people deciding what
    lands, its implement sessions run by the witness agent."""
    lib_made = await stack.create_repo(demo.new_repo_request(lib))
    request: dict[str, Any] = demo.new_repo_request(
        app, ballet_yml=f"companions: [{lib_made['full_name']}]\n" + WITNESSED
    )
    request["files"][".ballet/witness_agent.py"] = WITNESS
    app_made = await stack.create_repo(request)
    return app_made["full_name"], lib_made["full_name"]


def returned_in(stage: str, iteration: int, view_record: Any) -> Any:
    return next(r for r in view_record.history if (r.stage, r.iteration) == (stage, iteration))


async def test_red_companion_ci_returns_the_ticket_and_the_next_session_reads_it_there(
    stack: Stack,
) -> None:
    app, lib = await witnessed_pair(stack, "lib-told", "app-told")
    number = await ticket(
        stack, app, directives="demo:companion=lib-told\ndemo:break-companion-ci=yes@2"
    )
    view = await wait_until(stack, app, number, waiting_in("approval", 1), timeout=120)
    assert view.record is not None
    (pr,) = view.record.companion_prs
    assert pr.number is not None
    # While people decide, lib's lint fails on its head (another App's check run):
    # the ticket goes back at once, naming lib's pull request.
    async with stack.admin() as admin:
        made = await admin.post(
            f"/_sandbox/repos/{lib}/check-runs", json={**LINT, "head_sha": pr.head_sha}
        )
    assert made.status_code == 201, made.text

    # The next Implement session is told the cause with what lib holds of it: the
    # lint's output and annotation, read in lib, not looked for in app.
    view = await wait_until(stack, app, number, waiting_in("approval", 3), timeout=240)
    record = view.record
    assert record is not None and record.branch is not None
    seen = await witnessed(stack, app, record.branch, "implement", 2)
    (told,) = seen["context"]["returned"]
    assert (told["repo"], told["pr"], told["sha"]) == (lib, pr.number, pr.head_sha)
    assert told["unread"] == ""
    (lint,) = [c for c in told["checks"] if c["name"] == "lint"]
    assert lint["summary"] == "lint found 2 problems"
    assert lint["annotations"][0]["message"] == "name `add` shadows lib.add"
    assert f"of {lib}#{pr.number}" in seen["prompt"]
    assert "from_1.py:3 [failure] shadowing: name `add` shadows lib.add" in seen["prompt"]

    # Iteration 2 turned lib's CI red while review and verify ran: kept, it returned
    # the ticket as it came to land, nobody asked to approve red work.
    first = returned_in("integrate", 1, record)
    assert first.outcome == "returned"
    assert f"red checks on {lib}#{pr.number} at {pr.head_sha[:12]}: " in first.summary
    second = returned_in("integrate", 2, record)
    assert second.outcome == "returned"
    assert f"red checks on {lib}#{pr.number} at " in second.summary
    assert second.summary.endswith("failure")
    asked = [c for c in view.comments_on(record.pr_number or 0) if "landing-approval:" in c["body"]]
    assert len(asked) == 2, [c["body"][:80] for c in asked]  # iterations 1 and 3 only
    # Implement 3 read lib's own CI output there, in full.
    seen = await witnessed(stack, app, record.branch, "implement", 3)
    (told,) = seen["context"]["returned"]
    assert told["repo"] == lib and told["unread"] == ""
    (ci,) = told["checks"]
    assert ci["name"] == "ci" and "CI is red: .ci-red is present" in ci["summary"]

    # Its next head, green, is approved in both repositories by a writer of each.
    (again,) = record.companion_prs
    assert again.number == pr.number and again.head_sha != pr.head_sha
    await comment(stack, app, record.pr_number or 0, "carol", "/ballet approve")
    await review(stack, lib, pr.number, "carol", "APPROVE", commit_id=again.head_sha)
    view = await wait_until(stack, app, number, merged, timeout=120)
    assert await merges_in_order(stack, app, lib) == [lib, app]


async def test_a_writers_inline_review_of_the_companion_is_read_there_and_answered_there(
    stack: Stack,
) -> None:
    lib = (await stack.create_repo(demo.new_repo_request("lib-reviewed-inline")))["full_name"]
    app = await witnessed_repo(stack, "app-reviewed-inline", f"companions: [{lib}]\n" + HUMAN)
    number = await ticket(stack, app, directives="demo:companion=lib-reviewed-inline")
    view = await wait_until(stack, app, number, waiting_in("approval", 1), timeout=120)
    assert view.record is not None
    (pr,) = view.record.companion_prs
    assert pr.number is not None
    made = await review(
        stack, lib, pr.number, demo.AUTHOR, "REQUEST_CHANGES", body="One thing in lib.",
        comments=[{"path": f"from_{number}.py", "line": 1, "body": "Name it for lib."}],
    )  # fmt: skip

    view = await wait_until(stack, app, number, waiting_in("approval", 2), timeout=120)
    record = view.record
    assert record is not None and record.branch is not None
    # The next Implement session reads the review on lib's pull request, inline comment
    # and all, told which repository it is about.
    seen = await witnessed(stack, app, record.branch, "implement", 2)
    (told,) = seen["context"]["returned"]
    assert (told["kind"], told["repo"], told["pr"]) == ("changes_requested", lib, pr.number)
    assert told["unread"] == "" and told["review"] is not None
    (inline,) = told["review"]["comments"]
    assert (inline["path"], inline["line"], inline["body"]) == (
        f"from_{number}.py", 1, "Name it for lib."
    )  # fmt: skip
    assert f"of {lib}#{pr.number}" in seen["prompt"]
    assert f"`from_{number}.py` line 1:" in seen["prompt"]
    # Ballet answers on lib's review thread, where the reviewer looks.
    thread, replies = await review_thread(stack, lib, pr.number)
    assert len(replies) == 1, thread
    assert "addressed this review in " in replies[0]["body"]
    assert replies[0]["pull_request_review_id"] != made["id"]
