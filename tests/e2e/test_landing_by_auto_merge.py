"""Where auto-merge is the repository's way (issue 33): the repository allows it and its
rules hold the approved pull request back (here, a required approving review that a
`/ballet approve` is not), so Ballet turns GitHub's auto-merge on, pinned to the
approved head, and GitHub merges it once a reviewer approves, with Redis lost in
between. A writer's push while auto-merge waits turns it off and asks a person again;
a person turning it off makes Ballet ask what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import comment, flush, merged, new_repo, ticket, wait_until, waiting_for
from test_config_pr import Clone
from test_people_decide import awaiting_approval
from test_people_heard import review

pytestmark = pytest.mark.anyio

ONE_REVIEW = {
    "name": "main",
    "enforcement": "active",
    "target": "branch",
    "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
    "rules": [
        {
            "type": "pull_request",
            "parameters": {
                "dismiss_stale_reviews_on_push": True,
                "require_code_owner_review": False,
                "require_last_push_approval": False,
                "required_approving_review_count": 1,
                "required_review_thread_resolution": False,
            },
        }
    ],
}
DISABLE = (
    "mutation($id: ID!) { disablePullRequestAutoMerge(input: {pullRequestId: $id})"
    " { clientMutationId } }"
)


async def approved_with_auto_merge(stack: Stack, name: str) -> tuple[str, int, int, str]:
    """A repository allowing auto-merge whose main needs a review; its ticket approved by
    `/ballet approve` and waiting for GitHub's auto-merge: repo, issue, pull, head."""
    repo = await new_repo(stack, name, people_decide=True)
    async with stack.user("carol") as admin:  # a repository admin
        allowed = await admin.patch(f"/repos/{repo}", json={"allow_auto_merge": True})
        made = await admin.post(f"/repos/{repo}/rulesets", json=ONE_REVIEW)
    assert allowed.status_code == 200 and made.status_code == 201, made.text
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, awaiting_approval, timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr, head = view.record.pr_number, view.record.head_sha
    assert head is not None
    await comment(stack, repo, pr, demo.AUTHOR, "/ballet approve")
    view = await wait_until(stack, repo, number, waiting_for("auto_merge"), timeout=60)
    assert view.record is not None and view.record.waiting is not None
    assert view.record.waiting.sha == head
    return repo, number, pr, head


async def pull(stack: Stack, repo: str, pr: int) -> dict[str, Any]:
    async with stack.user("carol") as user:
        got: dict[str, Any] = (await user.get(f"/repos/{repo}/pulls/{pr}")).json()
    return got


async def test_github_merges_the_approved_head_by_auto_merge_across_a_lost_redis(
    stack: Stack,
) -> None:
    repo, number, pr, head = await approved_with_auto_merge(stack, "auto-merged")
    held = await pull(stack, repo, pr)
    assert held["auto_merge"]["enabled_by"]["login"] == "ballet[bot]", held["auto_merge"]
    assert held["auto_merge"]["merge_method"] == "squash" and not held["merged"]

    await flush(stack)  # the wait is in the record on GitHub; the merge is GitHub's
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=head)
    view = await wait_until(stack, repo, number, merged, timeout=60)
    record, landed = view.record, await pull(stack, repo, pr)
    assert record is not None
    integrate = [r for r in record.history if r.stage == "integrate"][-1]
    assert (integrate.outcome, integrate.summary) == ("merged", "merged by @ballet[bot]")
    assert landed["merged_by"]["login"] == "ballet[bot]" and landed["head"]["sha"] == head


async def test_a_push_while_auto_merge_waits_turns_it_off_and_asks_again(
    stack: Stack, tmp_path: Path
) -> None:
    repo, number, pr, _ = await approved_with_auto_merge(stack, "auto-pushed")
    view = await wait_until(stack, repo, number, waiting_for("auto_merge"), timeout=10)
    assert view.record is not None and view.record.branch is not None
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", demo.AUTHOR)
    clone.git("checkout", "-q", view.record.branch)
    pushed = clone.commit_file("README.md", "# calculator\n\nA writer's line.\n", "Say so")
    clone.git("push", "-q", "origin", view.record.branch)

    def asked_again(v: View) -> bool:
        return awaiting_approval(v) and v.record is not None and v.record.head_sha == pushed

    await wait_until(stack, repo, number, asked_again, timeout=30)
    off = await pull(stack, repo, pr)
    assert off["auto_merge"] is None and not off["merged"]  # GitHub would merge it
    # A review of the new head satisfies GitHub's rule and Ballet's approval alike.
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=pushed)
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.pull is not None and view.pull["head_sha"] == pushed


async def test_a_person_turning_auto_merge_off_is_asked_what_to_do(stack: Stack) -> None:
    repo, number, pr, _ = await approved_with_auto_merge(stack, "auto-off")
    node_id = (await pull(stack, repo, pr))["node_id"]
    async with stack.user("carol") as admin:
        answer = await admin.post("/graphql", json={"query": DISABLE, "variables": {"id": node_id}})
    assert "errors" not in answer.json(), answer.text
    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=30)
    assert view.record is not None and view.record.waiting is not None
    reason = view.record.waiting.reason
    assert "GitHub turned auto-merge off by @carol" in reason and "`/ballet retry`" in reason
