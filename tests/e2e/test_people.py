"""People steer: a human approval stage, required sign-offs, and waivers."""

from __future__ import annotations

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    assert_merged_cleanly,
    ballet_checks,
    ballet_labels,
    comment,
    merged,
    new_repo,
    outcomes,
    ticket,
    wait_until,
    waiting_for,
)

pytestmark = pytest.mark.anyio

HUMAN = demo.BALLET_YML.replace(
    "next: {pass: integrate, fail: implement}}",
    "next: {pass: approval, fail: implement}}\n"
    "      - {id: approval, kind: human, optional: true,"
    " next: {approve: integrate, reject: implement}}",
).replace("pipelines:\n", "policy: {review: agent+human}\npipelines:\n")


async def test_human_stage_refuses_a_reader_and_takes_a_writer(stack: Stack) -> None:
    repo = await new_repo(stack, "human", HUMAN)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr = view.record.pr_number
    assert ballet_labels(view, number) == {"ballet:waiting", "ballet:question"}
    assert ballet_checks(view, view.record.head_sha or "")["ballet/approval"] == (
        "in_progress",
        None,
    )

    refused = await comment(stack, repo, pr, "bob", "/ballet approve")  # bob can only read

    def replied_to_bob(v: View) -> bool:
        return any("@bob" in c["body"] and c["user"] != "bob" for c in v.comments_on(pr))

    view = await wait_until(stack, repo, number, replied_to_bob, timeout=30)
    assert view.record is not None and view.record.status == "waiting"
    bob_comment = next(c for c in view.state["comments"] if c["id"] == refused["id"])
    assert bob_comment["reactions"] == []  # refused commands get a reply, not 👀

    taken = await comment(stack, repo, pr, "carol", "/ballet approve looks right")
    view = await wait_until(stack, repo, number, merged, timeout=60)

    assert ("approval", 1, "approve") in outcomes(view)
    assert view.record is not None and view.record.approval is not None
    assert view.record.approval.by == "carol"
    carol_comment = next(c for c in view.state["comments"] if c["id"] == taken["id"])
    assert [r["content"] for r in carol_comment["reactions"]] == ["eyes"]
    await assert_merged_cleanly(stack, view, repo, number)


SIGNOFF = demo.BALLET_YML.replace(
    "default_runtime: script\n",
    "default_runtime: script\n"
    "roles:\n"
    "  security: {runtime: script, skills: [reviewer], instructions: Review for security.}\n"
    "  legal: {runtime: script, instructions: Check licences.}\n",
).replace("    iteration_limit: 3\n", "    iteration_limit: 3\n    signoffs: [security, legal]\n")


async def test_signoff_asks_for_changes_then_signs_off_and_a_person_waives(
    stack: Stack,
) -> None:
    repo = await new_repo(stack, "signoff", SIGNOFF)
    number = await ticket(
        stack,
        repo,
        directives="demo:signoff-security=changes@1\ndemo:sleep-implement=2@1",
    )
    # A person waives `legal` while the first implement session runs.
    await wait_until(stack, repo, number, lambda v: v.record is not None, timeout=30)
    await comment(stack, repo, number, "carol", "/ballet signoff waive legal")

    view = await wait_until(stack, repo, number, merged, timeout=150)

    record = view.record
    assert record is not None
    security = [(r.iteration, r.outcome) for r in record.history if r.role == "security"]
    assert security == [(1, "changes"), (2, "signed_off")]
    assert not any(run.role == "legal" for run in record.history)
    assert "legal" in record.signoffs_waived
    assert [s.role for s in record.signoffs_given] == ["security"]
    assert max(run.iteration for run in record.history) == 2
    # The sign-off's changes went back to the stage that handed the ticket over.
    agents = [(r.stage, r.iteration) for r in record.history if r.role is None]
    assert ("verify", 2) in agents and ("implement", 2) not in agents
    announcements = [c["body"] for c in view.state["comments"] if "legal" in c["body"]]
    assert any("waiv" in body for body in announcements)
    await assert_merged_cleanly(stack, view, repo, number)
    assert view.pull is not None
    assert "ballet/signoff-legal" not in ballet_checks(view, view.pull["head_sha"])
