"""The landing's own update-branch pins its waiting merge to the commit GitHub made
(issue 33): where the base's rules want branches up to date, an approved head that
fell behind is brought up to date and merged once its checks pass, with nobody asked
again; a writer's push while those checks run is not merged: a person is asked to
approve it, and it lands on their approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View, look
from scenarios import STRICT_CI, add_ruleset, merged, ticket, wait_until
from test_config_pr import Clone
from test_people_decide import awaiting_approval
from test_people_heard import review

pytestmark = pytest.mark.anyio

# The demo's CI, slow on the merge commits update-branch makes: a window to push in.
SLOW_ON_MERGES = [
    "sh",
    "-c",
    "if git log -1 --format=%s | grep -q '^Merge branch'; then sleep 6; fi; exec python3 ci.py",
]
STRICT = STRICT_CI  # (test_landing_auto_merge_behind.py reads it here)


def head_is(sha: str) -> Any:
    def done(view: View) -> bool:
        return view.record is not None and view.record.head_sha == sha

    return done


def not_head(sha: str | None) -> Any:
    def done(view: View) -> bool:
        return view.record is not None and view.record.head_sha not in (sha, None)

    return done


def pull_head_off(sha: str) -> Any:
    def done(view: View) -> bool:
        return view.pull is not None and view.pull["head_sha"] not in (sha, None)

    return done


def waiting_to_merge(view: View) -> bool:
    """Approved: the landing waits for the head's checks, then merges."""
    rec = view.record
    w = rec.waiting if rec is not None else None
    return w is not None and w.kind in ("checks", "merge_result")


def ci_done_on(*shas: str) -> Any:
    def done(view: View) -> bool:
        finished = {
            r["head_sha"]
            for r in view.state["check_runs"]
            if r["name"] == "ci" and r["status"] == "completed"
        }
        return set(shas) <= finished

    return done


async def test_a_writers_push_after_the_landings_update_is_not_merged_without_approval(
    stack: Stack, tmp_path: Path
) -> None:
    request = demo.new_repo_request("pinned", ballet_yml=demo.BALLET_YML)  # people decide
    request["ci"] = {"command": SLOW_ON_MERGES}
    repo: str = (await stack.create_repo(request))["full_name"]
    await add_ruleset(stack, repo, STRICT)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, awaiting_approval, timeout=90)
    rec = view.record
    assert rec is not None and rec.pr_number is not None and rec.branch is not None
    pr, branch, h1 = rec.pr_number, rec.branch, rec.head_sha
    main = Clone(tmp_path / "main", f"{stack.api_url}/{repo}.git", "carol")

    # main moves while people decide: GitHub merges it in (no person), CI runs slowly.
    main.commit_file("README.md", "# calculator\n\nNow with more.\n", "README")
    main.git("push", "-q", "origin", "main")
    view = await wait_until(stack, repo, number, not_head(h1), timeout=60)
    h2 = view.record.head_sha if view.record else None
    assert h2 is not None and awaiting_approval(view)
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=h2)
    # Approved: the landing waits for h2's checks. Meanwhile main moves again.
    await wait_until(stack, repo, number, waiting_to_merge, timeout=30)
    (main.path / "NOTES.md").write_text("notes\n")
    main.git("add", "NOTES.md")
    main.git("commit", "-q", "-m", "Notes")
    main.git("push", "-q", "origin", "main")

    # h2's checks pass; the landing brings the branch up to date itself (h3), and its
    # merge waits for h3's checks.
    view = await wait_until(stack, repo, number, pull_head_off(h2), timeout=60)
    assert view.pull is not None
    h3 = view.pull["head_sha"]

    # A writer pushes while h3's checks run.
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", demo.AUTHOR)
    clone.git("checkout", "-q", branch)
    h4 = clone.commit_file("README.md", "# calculator\n\nAnd a writer's line.\n", "Say so")
    clone.git("push", "-q", "origin", branch)
    view = await wait_until(stack, repo, number, head_is(h4), timeout=30)
    # Every check finished, and what landed is nothing: a person is asked about h4.
    await wait_until(stack, repo, number, ci_done_on(h3, h4), timeout=60)
    await wait_until(stack, repo, number, awaiting_approval, timeout=30)
    view = await look(stack, repo, number)
    assert view.pull is not None and not view.pull["merged"], view.pull
    rec = view.record
    assert rec is not None and rec.approval is None and rec.head_sha == h4
    asked = [c["body"] for c in view.comments_on(pr) if "landing-approval" in c["body"]]
    assert any(f"`{h4}`" in body for body in asked), asked

    # The landing's own update (h3) asked nobody.
    assert not any(f"`{h3}`" in body for body in asked), asked
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=h4)
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.pull is not None and view.pull["head_sha"] == h4
