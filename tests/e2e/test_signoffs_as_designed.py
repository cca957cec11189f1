"""The sign-off rules as people meet them on GitHub (issue 34): a person's merge
decides, a waived role is not asked again, a role deleted from `.ballet.yml` on
the default branch is no longer required, and a ticket sent back for rework is a
draft again while roles sign off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    comment,
    merged,
    new_repo,
    pull_request_actions,
    status_is,
    ticket,
    wait_until,
    waiting_for,
)
from test_config_pr import Clone
from witnessed import WITNESSED, witnessed, witnessed_repo

pytestmark = pytest.mark.anyio

ROLES = (
    "roles:\n"
    "  security: {runtime: script, skills: [reviewer], instructions: Review for security.}\n"
    "  legal: {runtime: script, instructions: Check licences.}\n"
)
# The demo's pipeline with an approval between verify and integrate.
HUMAN = demo.BALLET_YML.replace(
    "next: {pass: integrate, fail: implement}}",
    "next: {pass: approval, fail: implement}}\n"
    "      - {id: approval, kind: human, next: {approve: integrate, reject: implement}}",
)


def with_roles(yml: str, signoffs: str = "") -> str:
    yml = yml.replace("default_runtime: script\n", "default_runtime: script\n" + ROLES)
    if signoffs:
        yml = yml.replace("    iteration_limit: 3\n", f"    iteration_limit: 3\n{signoffs}")
    return yml


def announced(words: str) -> object:
    def done(view: View) -> bool:
        return any(words in c["body"] for c in view.state["comments"])

    return done


def role_runs(view: View, role: str) -> list[tuple[int, str | None]]:
    assert view.record is not None
    return [(r.iteration, r.outcome) for r in view.record.history if r.role == role]


async def test_a_persons_merge_ends_the_ticket_with_a_role_required_meanwhile(
    stack: Stack,
) -> None:
    yml = with_roles(demo.BALLET_YML).replace(
        "pipelines:\n", "policy: {merge: manual}\npipelines:\n"
    )
    repo = await new_repo(stack, "merged-by-hand", yml)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("merge"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr = view.record.pr_number
    await comment(stack, repo, pr, "carol", "/ballet signoff require security")
    await wait_until(
        stack, repo, number, announced("requires sign-off from `security`"), timeout=30
    )

    async with stack.user("carol") as carol:
        response = await carol.put(f"/repos/{repo}/pulls/{pr}/merge", json={})
        response.raise_for_status()

    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.record is not None and view.record.status == "done"
    assert role_runs(view, "security") == []  # no sign-off session after the merge
    assert view.record.history[-1].outcome == "merged"


async def test_waiving_a_role_whose_question_is_open_merges_without_asking_it_again(
    stack: Stack,
) -> None:
    repo = await new_repo(
        stack, "waived-question", with_roles(demo.BALLET_YML, "    signoffs: [security]\n")
    )
    # The security session's verdict is not one a sign-off gives: a question.
    number = await ticket(stack, repo, directives="demo:signoff-security=lgtm@1")
    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=90)
    assert role_runs(view, "security") == [(1, "lgtm")]

    await comment(stack, repo, number, "carol", "/ballet signoff waive security")
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert role_runs(view, "security") == [(1, "lgtm")]  # never started again
    assert view.record is not None and view.record.open_question is None
    waived = [c["body"] for c in view.state["comments"] if "waived the sign-off" in c["body"]]
    assert waived and "@carol" in waived[0]


async def test_a_role_deleted_on_the_default_branch_is_not_required(
    stack: Stack, tmp_path: Path
) -> None:
    yml = with_roles(demo.BALLET_YML, "    signoffs: [security, legal]\n")
    repo = await new_repo(stack, "role-deleted", yml)
    number = await ticket(stack, repo, directives="demo:sleep-implement=4@1")
    await wait_until(stack, repo, number, status_is("running"), timeout=30)

    # A maintainer deletes `security` (role and pipeline entry) on main meanwhile.
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", "carol")
    without = yml.replace("    signoffs: [security, legal]\n", "    signoffs: [legal]\n").replace(
        "  security: {runtime: script, skills: [reviewer], instructions: Review for security.}\n",
        "",
    )
    clone.commit_file(".ballet.yml", without, "No security sign-off any more")
    clone.git("push", "-q", "origin", "main")

    view = await wait_until(stack, repo, number, merged, timeout=150)
    assert role_runs(view, "security") == []
    assert role_runs(view, "legal") == [(1, "signed_off")]
    record = view.record
    assert record is not None and record.signoffs_required == ("legal",)
    deleted = [c for c in record.signoff_changes if c.action == "deleted"]
    assert [(c.role, c.by.startswith("config:")) for c in deleted] == [("security", True)]
    assert any("no longer has the roles `security`" in c["body"] for c in view.state["comments"])


def requires(role: str) -> Callable[[View], bool]:
    """The ticket requires `role`'s sign-off: a command is heard before the next is sent."""

    def done(view: View) -> bool:
        return view.record is not None and role in view.record.signoffs_required

    return done


async def test_after_a_reject_the_pull_request_is_a_draft_while_a_new_role_signs_off(
    stack: Stack,
) -> None:
    repo = await new_repo(stack, "draft-again", with_roles(HUMAN))
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr = view.record.pr_number
    await comment(stack, repo, pr, "carol", "/ballet signoff require security")
    await wait_until(stack, repo, number, requires("security"), timeout=60)
    await comment(stack, repo, pr, "carol", "/ballet reject name the test after multiply")

    def approval_again(v: View) -> bool:
        return waiting_for("approval")(v) and v.record is not None and v.record.iteration == 2

    view = await wait_until(stack, repo, number, approval_again, timeout=120)
    # The gate before approval asked security in iteration 2, on the draft.
    assert role_runs(view, "security") == [(2, "signed_off")]
    seen = await pull_request_actions(stack, repo, pr)
    actions = [(a, draft) for a, draft, _ in seen if a != "synchronize"]
    assert actions == [
        ("opened", True),
        ("ready_for_review", False),
        ("converted_to_draft", True),
        ("ready_for_review", False),
    ]
    assert view.pull is not None and not view.pull["draft"]


async def test_role_news_said_during_a_stage_reaches_its_next_session_past_a_sign_off(
    stack: Stack,
) -> None:
    verify = "- {id: verify, kind: agent, skills: [verifier],"
    yml = with_roles(WITNESSED, "    signoffs: [security]\n").replace(
        verify, verify.replace("kind: agent,", "kind: agent, runtime: witness,")
    )
    repo = await witnessed_repo(stack, "role-news", yml)
    directives = "demo:sleep-verify=4@1\ndemo:signoff-security=changes@1"
    number = await ticket(stack, repo, directives=directives)

    def verifying(v: View) -> bool:
        run = v.record.open_run if v.record is not None else None
        return run is not None and run.stage == "verify"

    await wait_until(stack, repo, number, verifying, timeout=90)
    await comment(stack, repo, number, "carol", "/ballet signoff require legal")
    view = await wait_until(stack, repo, number, merged, timeout=150)
    # Security's sign-off session ran between, and asked for changes: back to verify.
    assert role_runs(view, "security") == [(1, "changes"), (2, "signed_off")]
    assert view.pull is not None
    seen = await witnessed(stack, repo, view.pull["head_sha"], "verify", 2)
    changes = seen["context"]["signoffs"]["changes"]
    assert [(c["role"], c["action"], c["by"]) for c in changes] == [("legal", "required", "carol")]
    assert "- @carol required the sign-off of `legal`" in seen["prompt"]


async def test_changes_after_an_approval_go_back_to_the_approvers(stack: Stack) -> None:
    repo = await new_repo(stack, "changes-to-people", with_roles(HUMAN))
    number = await ticket(stack, repo, directives="demo:signoff-security=changes@1")
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr = view.record.pr_number
    await comment(stack, repo, pr, "carol", "/ballet signoff require security")
    # GitHub delivers two comments in no promised order: approve once the role is in.
    await wait_until(stack, repo, number, requires("security"), timeout=60)
    await comment(stack, repo, pr, "carol", "/ballet approve")

    def asked_again(v: View) -> bool:
        return waiting_for("approval")(v) and role_runs(v, "security") == [(1, "changes")]

    view = await wait_until(stack, repo, number, asked_again, timeout=60)
    asking = [c["body"] for c in view.comments_on(pr) if "asked for changes" in c["body"]]
    assert any("sign-off `security` asked for changes" in body for body in asking)
    # The approvers decide: carol waives the role and approves again.
    await comment(stack, repo, pr, "carol", "/ballet signoff waive security")
    await wait_until(stack, repo, number, lambda v: not requires("security")(v), timeout=60)
    await comment(stack, repo, pr, "carol", "/ballet approve")
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert role_runs(view, "security") == [(1, "changes")]
    assert view.record is not None
    assert max(r.iteration for r in view.record.history) == 1  # never sent to rework
