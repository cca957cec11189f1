"""People decide what lands, by default (issue 33, item 4): the default pipeline,
once its agents are done, marks the pull request ready and waits for a writer's
approval of the head — a review or `/ballet approve` — and lands it only then.
An outsider's or a reader's approval, or one of an older head, lands nothing;
`policy: {merge: auto}` lands with no person."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View, look
from scenarios import (
    assert_merged_cleanly,
    ballet_comments,
    ballet_labels,
    comment,
    merged,
    new_repo,
    replied_to,
    ticket,
    wait_until,
)
from test_config_pr import Clone
from test_people_heard import refused_reviews, review, until_refused

pytestmark = pytest.mark.anyio


def awaiting_approval(view: View) -> bool:
    rec = view.record
    w = rec.waiting if rec is not None else None
    return rec is not None and rec.stage == "integrate" and w is not None and w.kind == "approval"


async def at_the_landing(stack: Stack, name: str) -> tuple[str, int, View]:
    repo = await new_repo(stack, name, people_decide=True)  # demo.BALLET_YML: no policy
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, awaiting_approval, timeout=90)
    return repo, number, view


def still_waiting(view: View, pr: int) -> None:
    assert awaiting_approval(view), view.record
    assert view.pull is not None and not view.pull["merged"]
    assert view.record is not None and view.record.approval is None


async def test_the_default_pipeline_lands_on_a_writers_approval_of_the_head(
    stack: Stack,
) -> None:
    repo, number, view = await at_the_landing(stack, "people-decide")
    rec, pull = view.record, view.pull
    assert rec is not None and pull is not None and rec.pr_number is not None
    pr, head, seed = rec.pr_number, rec.head_sha, rec.seed_sha
    assert head and seed and head != seed
    # What a person sees: a pull request ready for review, the question label, and
    # who may approve and how, on the tracking comment and in a comment to them.
    assert not pull["draft"]
    assert "ballet:question" in ballet_labels(view, number)
    said = "\n".join(ballet_comments(view, pr))
    assert f"a person to approve the head {head[:12]} before it lands" in said
    assert f"@{demo.AUTHOR} the agents are done" in said
    assert "anyone with write permission" in said and "`/ballet approve`" in said

    before = refused_reviews()
    await review(stack, repo, pr, "bob", "APPROVE")  # read only
    await review(stack, repo, pr, "mallory", "APPROVE")  # no access at all
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=seed)  # an older head
    view = await until_refused(stack, repo, number, before + 3)
    still_waiting(await look(stack, repo, number), pr)

    await review(stack, repo, pr, "carol", "APPROVE")  # admin: write permission
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.record is not None and view.record.approval is not None
    assert (view.record.approval.by, view.record.approval.sha) == ("carol", head)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_ballet_approve_by_a_writer_lands_it_and_a_readers_does_not(
    stack: Stack,
) -> None:
    repo, number, view = await at_the_landing(stack, "approve-command")
    assert view.record is not None and view.record.pr_number is not None
    pr = view.record.pr_number
    refused = await comment(stack, repo, pr, "bob", "/ballet approve")
    view = await wait_until(stack, repo, number, replied_to(refused["id"]), timeout=30)
    still_waiting(view, pr)
    await comment(stack, repo, pr, demo.AUTHOR, "/ballet approve")
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.record is not None and view.record.approval is not None
    assert view.record.approval.by == demo.AUTHOR
    await assert_merged_cleanly(stack, view, repo, number)


async def test_a_push_after_the_agents_needs_an_approval_of_the_new_head(
    stack: Stack, tmp_path: Path
) -> None:
    repo, number, view = await at_the_landing(stack, "pushed-after")
    rec = view.record
    assert rec is not None and rec.pr_number is not None and rec.branch is not None
    pr, old = rec.pr_number, rec.head_sha
    # A writer adds a commit of their own to the ticket's branch while it waits.
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", demo.AUTHOR)
    clone.git("checkout", "-q", rec.branch)
    new = clone.commit_file("README.md", "# calculator\n\nNow it multiplies.\n", "Say so")
    clone.git("push", "-q", "origin", rec.branch)

    def new_head(v: View) -> bool:
        return v.record is not None and v.record.head_sha == new

    view = await wait_until(stack, repo, number, new_head, timeout=30)
    assert awaiting_approval(view)
    before = refused_reviews()
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=old)
    await until_refused(stack, repo, number, before + 1)
    still_waiting(await look(stack, repo, number), pr)
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=new)
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.pull is not None and view.pull["head_sha"] == new


async def test_merge_auto_lands_with_no_person(stack: Stack) -> None:
    repo = await new_repo(stack, "lands-alone")  # `policy: {merge: auto}` (lands_alone)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, merged, timeout=90)
    assert view.record is not None and view.record.policy.merge == "auto"
    assert view.record.approval is None
    assert not any(r.outcome == "approve" for r in view.record.history if r.stage == "integrate")
    async with stack.user(demo.AUTHOR) as user:
        reviews: list[dict[str, Any]] = (
            await user.get(f"/repos/{repo}/pulls/{view.record.pr_number}/reviews")
        ).json()
    assert reviews == []
    await assert_merged_cleanly(stack, view, repo, number)
