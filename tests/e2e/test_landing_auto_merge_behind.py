"""The base moves while GitHub's auto-merge waits (issue 33, item 3): where main's rules
want branches up to date (a strict required check), GitHub's auto-merge never merges a
branch that fell behind, so Ballet brings it up to date itself, pinned to the approved
head, with nobody asked again; auto-merge stays on, and GitHub merges the new head once
its checks pass and its rules let it. A base moving into a conflict instead turns
GitHub's auto-merge off, and the ticket returns to rework once, as base conflicts do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import comment, merged, new_repo, outcomes, ticket, wait_until, waiting_for
from test_base_moves import SUBTRACT
from test_config_pr import Clone
from test_landing_by_auto_merge import ONE_REVIEW, approved_with_auto_merge, pull
from test_landing_pinned import STRICT, ci_done_on
from test_people_decide import awaiting_approval
from test_people_heard import review

pytestmark = pytest.mark.anyio

# A review and an up-to-date branch whose `ci` passed: what main's rules want.
REVIEW_AND_STRICT_CI = {**ONE_REVIEW, "rules": [*ONE_REVIEW["rules"], *STRICT["rules"]]}


def pinned_past(sha: str) -> Any:
    """Auto-merge still waits, its pin moved off `sha` onto the pull request's head."""

    def done(view: View) -> bool:
        rec, pull = view.record, view.pull
        w = rec.waiting if rec is not None else None
        return (
            w is not None
            and w.kind == "auto_merge"
            and w.sha not in (sha, None)
            and pull is not None
            and pull["head_sha"] == w.sha
        )

    return done


async def test_a_branch_behind_its_moved_base_is_brought_up_to_date_and_auto_merged(
    stack: Stack, tmp_path: Path
) -> None:
    repo = await new_repo(stack, "auto-behind", people_decide=True)
    async with stack.user("carol") as admin:  # a repository admin
        allowed = await admin.patch(f"/repos/{repo}", json={"allow_auto_merge": True})
        made = await admin.post(f"/repos/{repo}/rulesets", json=REVIEW_AND_STRICT_CI)
    assert allowed.status_code == 200 and made.status_code == 201, made.text
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, awaiting_approval, timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr, h1 = view.record.pr_number, view.record.head_sha
    assert h1 is not None
    await comment(stack, repo, pr, demo.AUTHOR, "/ballet approve")
    await wait_until(stack, repo, number, waiting_for("auto_merge"), timeout=60)

    # A writer pushes to main: the branch is behind, and GitHub's auto-merge holds it.
    main = Clone(tmp_path / "main", f"{stack.api_url}/{repo}.git", "carol")
    (main.path / "NOTES.md").write_text("notes\n")
    main.git("add", "NOTES.md")
    main.git("commit", "-q", "-m", "Notes")
    main.git("push", "-q", "origin", "main")

    # Ballet brings it up to date itself; the pin moves to the update, asking nobody.
    view = await wait_until(stack, repo, number, pinned_past(h1), timeout=60)
    assert view.record is not None and view.record.waiting is not None
    h2 = view.record.waiting.sha
    assert h2 is not None and view.record.approval is not None
    held = await pull(stack, repo, pr)
    assert held["auto_merge"]["enabled_by"]["login"] == "ballet[bot]", held["auto_merge"]
    assert held["mergeable_state"] != "behind" and not held["merged"], held
    await wait_until(stack, repo, number, ci_done_on(h2), timeout=60)

    # The review main's rules want, of the new head: GitHub merges it, as auto-merge said.
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=h2)
    view = await wait_until(stack, repo, number, merged, timeout=60)
    landed = await pull(stack, repo, pr)
    assert landed["merged_by"]["login"] == "ballet[bot]" and landed["head"]["sha"] == h2
    assert view.record is not None
    integrate = [r for r in view.record.history if r.stage == "integrate"][-1]
    assert (integrate.outcome, integrate.summary) == ("merged", "merged by @ballet[bot]")
    asked = [c["body"] for c in view.comments_on(pr) if "landing-approval" in c["body"]]
    assert not any(h2 in body for body in asked), asked  # the update asked no one


def reworking(view: View) -> bool:
    rec = view.record
    return rec is not None and rec.stage == "implement" and rec.iteration == 2


async def test_a_base_moved_into_a_conflict_returns_the_work_once(
    stack: Stack, tmp_path: Path
) -> None:
    repo, number, pr, head = await approved_with_auto_merge(stack, "auto-conflict")
    # A writer lands a change to the same spot of calc.py on main: GitHub turns auto-merge
    # off over the conflict, and Ballet hears the push to main too.
    main = Clone(tmp_path / "main", f"{stack.api_url}/{repo}.git", "carol")
    main.commit_file("calc.py", demo.CALC + SUBTRACT, "Add subtract")
    main.git("push", "-q", "origin", "main")

    view = await wait_until(stack, repo, number, reworking, timeout=60)
    off = await pull(stack, repo, pr)
    assert off["auto_merge"] is None and not off["merged"], off
    assert view.record is not None
    (why,) = view.record.returned
    assert why.kind == "merge_conflict" and why.sha == head and why.stage == "integrate"
    # Whichever GitHub's two words came first, the other found the work returned already.
    assert [o for o in outcomes(view) if o[0] == "integrate"] == [("integrate", 1, "returned")]
