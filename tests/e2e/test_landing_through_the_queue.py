"""A repository whose main requires GitHub's merge queue (a ruleset's `merge_queue` rule):
Ballet joins the queue instead of merging, reports its own checks on the queue's group,
and the group merges; a group whose CI fails returns the ticket, and the next session
is given the failing check and its annotation from the group's commit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    add_ruleset,
    ballet_checks,
    main_ruleset,
    merged,
    new_repo,
    outcomes,
    ticket,
    wait_until,
)
from test_config_pr import Clone
from witnessed import WITNESSED, repo_request, witnessed

pytestmark = pytest.mark.anyio

QUEUE_RULE = {
    "type": "merge_queue",
    "parameters": {
        "check_response_timeout_minutes": 60,
        "grouping_strategy": "ALLGREEN",
        "max_entries_to_build": 5,
        "max_entries_to_merge": 5,
        "merge_method": "MERGE",
        "min_entries_to_merge": 1,
        "min_entries_to_merge_wait_minutes": 5,
    },
}
# Ballet's verify check is required: the queue waits for Ballet to report it on the group.
CHECKS_RULE = {
    "type": "required_status_checks",
    "parameters": {
        "required_status_checks": [{"context": "ci"}, {"context": "ballet/verify"}],
        "strict_required_status_checks_policy": False,
    },
}
# The demo's CI, red with a workflow annotation where breaks.txt is present.
BREAKABLE_CI = [
    "sh",
    "-c",
    "if [ -f breaks.txt ]; then echo '::error file=breaks.txt,line=1::main broke it'; exit 1;"
    " fi; exec python3 ci.py",
]


async def require_the_queue(stack: Stack, repo: str) -> None:
    await add_ruleset(stack, repo, main_ruleset(QUEUE_RULE, CHECKS_RULE))


async def test_a_ticket_lands_through_the_merge_queue_with_ballets_checks_on_the_group(
    stack: Stack,
) -> None:
    repo = await new_repo(stack, "queued")
    await require_the_queue(stack, repo)
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=180)

    record, pull = view.record, view.pull
    assert record is not None and pull is not None
    assert ("integrate", 1, "merged") in outcomes(view)
    integrate = [r for r in record.history if r.stage == "integrate"][-1]
    assert integrate.summary == "merged by @github-merge-queue[bot]"
    group = pull["merge_commit_sha"]
    assert view.state["branches"]["main"] == group
    assert group != pull["head_sha"]  # the queue's own commit, on the base's tip
    # Ballet's checks, as they passed on the head, reported on the group's commit.
    on_group = ballet_checks(view, group)
    for name in ("ballet/implement", "ballet/review", "ballet/verify"):
        assert on_group[name] == ("completed", "success"), on_group
    ci = [r for r in view.state["check_runs"] if r["head_sha"] == group and r["name"] == "ci"]
    # CI passed on the group's ref before it merged (and runs again once main moved there).
    assert ci[0]["conclusion"] == "success", ci
    assert not [b for b in view.state["branches"] if b.startswith("gh-readonly-queue/")]


async def test_a_group_whose_ci_fails_returns_the_ticket_with_the_check_and_annotation(
    stack: Stack, tmp_path: Path
) -> None:
    request = repo_request("queue-red", WITNESSED)
    request["ci"] = {"command": BREAKABLE_CI}
    created = await stack.create_repo(request)
    repo: str = created["full_name"]
    await require_the_queue(stack, repo)
    # Implement takes its time, so main moves after the ticket's branch was made.
    number = await ticket(stack, repo, directives="demo:sleep-implement=3@1")

    def has_pr(view: View) -> bool:
        return view.record is not None and view.record.pr_number is not None

    await wait_until(stack, repo, number, has_pr, timeout=30)
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", "carol")
    (clone.path / "breaks.txt").write_text("x\n")
    clone.git("add", "breaks.txt")
    clone.git("commit", "-q", "-m", "Something on main the ticket's branch does not have")
    clone.git("push", "-q", "origin", "main")

    def implement_again(view: View) -> bool:
        return view.record is not None and any(
            r.stage == "implement" and r.iteration == 2 and r.end is not None
            for r in view.record.history
        )

    view = await wait_until(stack, repo, number, implement_again, timeout=180)
    record = view.record
    assert record is not None
    assert ("integrate", 1, "returned") in outcomes(view)
    (why,) = [c for c in record.returned if c.kind == "merge_checks_failed"]
    assert "merge queue" in why.text
    group = why.sha
    assert group is not None and group != record.head_sha
    assert view.pull is not None and not view.pull["merged"]
    # The group's commit is where CI ran red; the head's CI was green.
    assert any(
        r["head_sha"] == group and r["name"] == "ci" and r["conclusion"] == "failure"
        for r in view.state["check_runs"]
    )
    seen = await witnessed(stack, repo, record.branch or "", "implement", 2)
    (returned,) = [r for r in seen["context"]["returned"] if r["kind"] == "merge_checks_failed"]
    assert returned["sha"] == group
    (check,) = [c for c in returned["checks"] if c["name"] == "ci"]
    assert check["conclusion"] == "failure"
    assert [(a["path"], a["message"]) for a in check["annotations"]] == [
        ("breaks.txt", "main broke it")
    ]
