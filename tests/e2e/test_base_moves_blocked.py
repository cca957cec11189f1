"""The base moves while the ticket waits for people, in a repository whose main wants a
writer's review AND an up-to-date branch with green `ci` (issue 33, item 3): GitHub then
says `blocked`, not `behind` (the review is missing too), and Ballet still sees the
branch fell behind — by the base's strict rule and the commits' ancestry — and has it
brought up to date by nobody; the writer's review of the new head lands it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import add_ruleset, merged, new_repo, outcomes, ticket, wait_until
from test_base_moves import GATED, waiting_at
from test_config_pr import Clone
from test_landing_auto_merge_behind import REVIEW_AND_STRICT_CI
from test_landing_by_auto_merge import pull
from test_landing_pinned import ci_done_on
from test_people_heard import review

pytestmark = pytest.mark.anyio


async def test_a_blocked_branch_behind_its_moved_base_is_brought_up_to_date_by_nobody(
    stack: Stack, tmp_path: Path
) -> None:
    repo = await new_repo(stack, "base-blocked", GATED)
    await add_ruleset(stack, repo, REVIEW_AND_STRICT_CI)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_at("people", 1), timeout=90)
    rec = view.record
    assert rec is not None and rec.pr_number is not None and rec.head_sha is not None
    pr, h1 = rec.pr_number, rec.head_sha
    await wait_until(stack, repo, number, ci_done_on(h1), timeout=60)
    assert (await pull(stack, repo, pr))["mergeable_state"] == "blocked"  # the review

    # A writer lands a change elsewhere on main: behind, but GitHub still says `blocked`.
    main = Clone(tmp_path / "main", f"{stack.api_url}/{repo}.git", "carol")
    base = main.commit_file("README.md", "# calculator\n\nNow with more.\n", "README")
    main.git("push", "-q", "origin", "main")

    def updated(view: View) -> bool:
        return view.pull is not None and view.pull["head_sha"] != h1

    view = await wait_until(stack, repo, number, updated, timeout=60)
    assert view.pull is not None
    h2 = view.pull["head_sha"]
    rec = view.record
    # Still the people's, in the same iteration: no work was sent back, nobody was asked.
    assert rec is not None and (rec.status, rec.stage, rec.iteration) == ("waiting", "people", 1)
    assert rec.branch is not None
    main.git("fetch", "-q", "origin", rec.branch)
    main.git("merge-base", "--is-ancestor", base, h2)  # raises unless main is in the head
    people = {c["user"] for c in view.state["comments"] if c["issue"] in (number, pr)}
    assert people and all(u.endswith("[bot]") for u in people), people

    # The writer's review of the new head: the gate approves, and main's rules let it land.
    await wait_until(stack, repo, number, ci_done_on(h2), timeout=60)
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=h2)
    view = await wait_until(stack, repo, number, merged, timeout=90)
    assert outcomes(view)[-2:] == [("integrate", 1, "done"), ("integrate", 1, "merged")]
    landed = await pull(stack, repo, pr)
    assert landed["merged"] and landed["head"]["sha"] == h2, landed
