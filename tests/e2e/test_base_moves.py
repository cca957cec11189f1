"""The base moves while the ticket waits for people (issue 33, item 3): a conflict goes
to the integrator, which resolves it, and the ticket lands after a writer's review; a
branch behind but clean is brought up to date where the rules want it, by nobody."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import STRICT_CI, add_ruleset, merged, new_repo, outcomes, ticket, wait_until
from test_config_pr import Clone

pytestmark = pytest.mark.anyio

GATED = (
    demo.SCRIPT_RUNTIME_YML
    + """\
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, skills: [implementer], next: {done: people}}
      - {id: people, kind: platform, wait_for: review,
         next: {approve: integrate, changes_requested: implement}}
      - {id: integrate, kind: agent, skills: [integrator],
         next: {merged: $done, returned: implement}}
"""
)
SUBTRACT = "\n\ndef subtract(a: int, b: int) -> int:\n    return a - b\n"


def waiting_at(stage: str, iteration: int) -> Any:
    def done(view: View) -> bool:
        rec = view.record
        return (
            rec is not None
            and rec.status == "waiting"
            and rec.stage == stage
            and rec.iteration == iteration
            and rec.waiting is not None
            and rec.waiting.kind == "review"
        )

    return done


async def approve(stack: Stack, repo: str, view: View, login: str = "carol") -> None:
    pull = view.pull
    assert pull is not None
    async with stack.user(login) as user:
        made = await user.post(
            f"/repos/{repo}/pulls/{pull['number']}/reviews",
            json={"event": "APPROVE", "commit_id": pull["head_sha"]},
        )
    assert made.status_code == 200, made.text


async def main_file(stack: Stack, repo: str, path: str) -> str:
    async with stack.admin() as admin:
        got = await admin.get(f"/repos/{repo}/contents/{path}", params={"ref": "main"})
    got.raise_for_status()
    return base64.b64decode(got.json()["content"]).decode()


async def test_a_conflict_while_waiting_for_review_is_resolved_and_lands(
    stack: Stack, tmp_path: Path
) -> None:
    repo = await new_repo(stack, "base-conflict", GATED)
    number = await ticket(stack, repo)
    await wait_until(stack, repo, number, waiting_at("people", 1), timeout=90)

    # Someone lands a change to the same spot of calc.py on main meanwhile.
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", "carol")
    clone.commit_file("calc.py", demo.CALC + SUBTRACT, "Add subtract")
    clone.git("push", "-q", "origin", "main")

    # The integrator merges main keeping both, and the resolved head is the people's again.
    view = await wait_until(stack, repo, number, waiting_at("people", 2), timeout=90)
    rec = view.record
    assert rec is not None
    assert outcomes(view)[-3:] == [
        ("people", 1, "returned"),
        ("integrate", 2, "done"),
        ("people", 2, None),
    ]
    (why,) = rec.returned
    assert why.kind == "merge_conflict" and "`calc.py`" in why.text
    session = next(r for r in rec.history if r.stage == "integrate")
    report = next(c["body"] for c in view.state["comments"] if session.report_ref in c["body"])
    assert "up to date with `main` by merge" in report

    await approve(stack, repo, view)
    view = await wait_until(stack, repo, number, merged, timeout=90)
    assert outcomes(view)[-2:] == [("integrate", 2, "done"), ("integrate", 2, "merged")]
    calc = await main_file(stack, repo, "calc.py")
    assert "def subtract" in calc and "def multiply" in calc


async def test_a_branch_behind_but_clean_is_brought_up_to_date_by_nobody(
    stack: Stack, tmp_path: Path
) -> None:
    repo = await new_repo(stack, "base-behind", GATED)
    await add_ruleset(stack, repo, STRICT_CI)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_at("people", 1), timeout=90)
    before = view.record.head_sha if view.record else None

    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", "carol")
    base = clone.commit_file("README.md", "# calculator\n\nNow with more.\n", "README")
    clone.git("push", "-q", "origin", "main")

    def updated(view: View) -> bool:
        return view.pull is not None and view.pull["head_sha"] != before

    view = await wait_until(stack, repo, number, updated, timeout=60)
    head = view.pull["head_sha"] if view.pull else None
    rec = view.record
    # Still the people's to review, in the same iteration: no work was sent back.
    assert rec is not None and (rec.status, rec.stage, rec.iteration) == ("waiting", "people", 1)
    assert head is not None
    assert rec.branch is not None
    clone.git("fetch", "-q", "origin", rec.branch)
    clone.git("merge-base", "--is-ancestor", base, head)  # raises unless base is in head
    # GitHub merged the base in (update-branch): nobody wrote on the ticket meanwhile.
    people = {c["user"] for c in view.state["comments"] if c["issue"] in (number, rec.pr_number)}
    assert people and all(u.endswith("[bot]") for u in people), people

    await approve(stack, repo, view)
    view = await wait_until(stack, repo, number, merged, timeout=90)
    assert outcomes(view)[-2:] == [("integrate", 1, "done"), ("integrate", 1, "merged")]


async def test_an_integrator_told_to_rebase_rewrites_the_branch_and_it_lands(
    stack: Stack, tmp_path: Path
) -> None:
    yml = GATED.replace("pipelines:\n", "merge: {update: rebase}\npipelines:\n")
    repo = await new_repo(stack, "base-rebase", yml)
    number = await ticket(stack, repo)
    await wait_until(stack, repo, number, waiting_at("people", 1), timeout=90)

    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", "carol")
    base = clone.commit_file("calc.py", demo.CALC + SUBTRACT, "Add subtract")
    clone.git("push", "-q", "origin", "main")

    view = await wait_until(stack, repo, number, waiting_at("people", 2), timeout=90)
    rec = view.record
    assert rec is not None and rec.branch is not None and view.pull is not None
    head = view.pull["head_sha"]
    # Replayed on the base: the base is in the branch, with no merge commit.
    clone.git("fetch", "-q", "origin", rec.branch)
    clone.git("merge-base", "--is-ancestor", base, head)
    assert clone.git("rev-list", "--merges", f"{base}..{head}") == ""
    assert outcomes(view)[-2:] == [("integrate", 2, "done"), ("people", 2, None)]

    await approve(stack, repo, view)
    view = await wait_until(stack, repo, number, merged, timeout=90)
    calc = await main_file(stack, repo, "calc.py")
    assert "def subtract" in calc and "def multiply" in calc
