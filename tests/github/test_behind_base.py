"""A pull request behind its base, as Ballet tells it through the production adapter on
the sandbox: GitHub's `behind`, or its `blocked` where the base's rules want branches
up to date and the base has commits the head has not (tickets/mergeability.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from ballet.github.app import GitHubApp
from ballet.sandbox.server import BackgroundSandbox
from ballet.tickets.mergeability import behind_base
from test_against_sandbox import REPO, installation_id, sandbox, sandbox_forges

pytestmark = pytest.mark.anyio
__all__ = ["installation_id", "sandbox", "sandbox_forges"]  # the fixtures, used here


def ruleset(name: str, rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "enforcement": "active",
        "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
        "rules": [rule],
    }


def checks(strict: bool) -> dict[str, Any]:
    parameters = {
        "required_status_checks": [{"context": "ci"}],
        "strict_required_status_checks_policy": strict,
    }
    return {"type": "required_status_checks", "parameters": parameters}


REVIEW = {
    "type": "pull_request",
    "parameters": {
        "dismiss_stale_reviews_on_push": False,
        "require_code_owner_review": False,
        "require_last_push_approval": False,
        "required_approving_review_count": 1,
        "required_review_thread_resolution": False,
    },
}


async def commit_on(owner: httpx.AsyncClient, branch: str, message: str) -> str:
    """A commit on `branch` (made from main where it does not exist yet); its sha."""
    ref = f"/repos/{REPO}/git/ref/heads/{branch}"
    found = await owner.get(ref)
    start = found if found.status_code == 200 else await owner.get(ref.replace(branch, "main"))
    parent = start.json()["object"]["sha"]
    tree = (await owner.get(f"/repos/{REPO}/git/commits/{parent}")).json()["tree"]["sha"]
    made = await owner.post(
        f"/repos/{REPO}/git/commits", json={"message": message, "tree": tree, "parents": [parent]}
    )
    sha: str = made.json()["sha"]
    if found.status_code == 200:
        moved = await owner.patch(f"/repos/{REPO}/git/refs/heads/{branch}", json={"sha": sha})
    else:
        moved = await owner.post(
            f"/repos/{REPO}/git/refs", json={"ref": f"refs/heads/{branch}", "sha": sha}
        )
    assert moved.status_code in (200, 201), moved.text
    return sha


async def test_a_blocked_head_is_behind_only_where_the_rules_want_it_up_to_date(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = sandbox_forges.for_installation(installation_id)
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:octo"}
    ) as owner:
        await commit_on(owner, "topic", "the work")
        opened = await owner.post(
            f"/repos/{REPO}/pulls", json={"title": "t", "head": "topic", "base": "main"}
        )
        number = opened.json()["number"]
        made = await owner.post(f"/repos/{REPO}/rulesets", json=ruleset("review", REVIEW))
        assert made.status_code == 201, made.text
        await owner.post(f"/repos/{REPO}/rulesets", json=ruleset("ci", checks(strict=False)))
        await commit_on(owner, "main", "the base moves")

        # Behind, but nothing wants it up to date: `blocked` is the review and `ci`.
        pr = await forge.get_pr(REPO, number)
        assert pr.mergeable_state == "blocked"
        assert await forge.behind_by(REPO, "main", pr.head_sha) == 1
        assert not await forge.wants_up_to_date(REPO, "main")
        assert not await behind_base(forge, REPO, pr)

        # A strict rule too: GitHub still says `blocked`, and the branch is behind.
        await owner.post(f"/repos/{REPO}/rulesets", json=ruleset("strict", checks(strict=True)))
        pr = await forge.get_pr(REPO, number)
        assert pr.mergeable_state == "blocked"
        assert await forge.wants_up_to_date(REPO, "main")
        assert await behind_base(forge, REPO, pr)

        # Brought up to date: still `blocked` (the review), no longer behind.
        assert await forge.update_branch(REPO, number, expected_head_sha=pr.head_sha)
        pr = await forge.get_pr(REPO, number)
        assert pr.mergeable_state == "blocked"
        assert await forge.behind_by(REPO, "main", pr.head_sha) == 0
        assert not await behind_base(forge, REPO, pr)
