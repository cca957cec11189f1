"""What people say reaches the agent, proven on what the session process received.

Each scenario's implement stage runs `witness_agent.py` in a confined session:
it keeps its prompt file and `$BALLET_CONTEXT` as they reached it in the
ticket's branch (`.witness/<stage>-<iteration>.json`), where these tests read
them. A reject's reason, red CI at the merge and a review's inline comment must
be there in the next implement session; a review gate passes only on the named
approver's review of the head.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ballet import metrics
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View, look
from scenarios import (
    assert_merged_cleanly,
    comment,
    flush,
    merged,
    outcomes,
    ticket,
    wait_until,
    waiting_for,
)
from witnessed import HUMAN, RUNTIMES, WITNESSED, witnessed, witnessed_repo

pytestmark = pytest.mark.anyio

GATE = (
    "trigger_label: ballet\n" + RUNTIMES + "default_runtime: script\n"
    "approvers: [carol]\n"
    "pipelines:\n"
    "  default:\n"
    "    stages:\n"
    "      - {id: implement, kind: agent, runtime: witness, timeout_minutes: 5}\n"
    "      - {id: gate, kind: platform, wait_for: review, next: {approve: integrate}}\n"
    "      - {id: integrate, kind: platform, action: merge, next: {merged: $done}}\n"
)
COLLABORATORS = {demo.AUTHOR: "write", "bob": "read", "carol": "admin"}
MULTIPLY_LINE = 8  # `def multiply` in calc.py once implement appended it


async def review(
    stack: Stack, repo: str, pr: int, login: str, event: str, **fields: Any
) -> dict[str, Any]:
    async with stack.user(login) as user:
        response = await user.post(
            f"/repos/{repo}/pulls/{pr}/reviews", json={"event": event, **fields}
        )
    assert response.status_code == 200, response.text
    made: dict[str, Any] = response.json()
    return made


def waiting_in(kind: str, iteration: int) -> Any:
    def done(view: View) -> bool:
        rec = view.record
        return waiting_for(kind)(view) and rec is not None and rec.iteration == iteration

    return done


async def review_thread(
    stack: Stack, repo: str, pr: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The PR's review comments and the replies among them, once there is a reply."""
    async with stack.user(demo.AUTHOR) as user:
        for _ in range(300):
            thread: list[dict[str, Any]] = (
                await user.get(f"/repos/{repo}/pulls/{pr}/comments")
            ).json()
            replies = [c for c in thread if c.get("in_reply_to_id") is not None]
            if replies:
                break
            await asyncio.sleep(0.1)
    return thread, replies


def refused_reviews() -> float:
    value: float = metrics.TICKET_EVENTS.labels("review_submitted", "refused")._value.get()
    return value


async def until_refused(stack: Stack, repo: str, number: int, count: float) -> View:
    """The worker heard `count` reviews in all and refused them; the ticket is where it was."""
    return await wait_until(stack, repo, number, lambda _: refused_reviews() >= count, timeout=30)


async def test_a_reject_reason_reaches_the_next_implement_session(stack: Stack) -> None:
    repo = await witnessed_repo(stack, "reject", HUMAN, COLLABORATORS)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    head = view.record.head_sha
    reason = "Use integer math only; name the test after the ticket"
    await comment(stack, repo, view.record.pr_number, "carol", f"/ballet reject {reason}")
    view = await wait_until(stack, repo, number, waiting_in("approval", 2), timeout=90)
    assert view.record is not None and view.record.iteration == 2
    seen = await witnessed(stack, repo, view.record.branch or "", "implement", 2)
    (returned,) = seen["context"]["returned"]
    assert (returned["kind"], returned["by"], returned["sha"], returned["text"]) == (
        "rejected",
        "carol",
        head,
        reason,
    )
    assert "## Why this ticket came back" in seen["prompt"]
    assert reason in seen["prompt"] and "@carol" in seen["prompt"]
    first = await witnessed(stack, repo, view.record.branch or "", "implement", 1)
    assert first["context"]["returned"] == []
    await comment(stack, repo, view.record.pr_number, "carol", "/ballet approve")
    view = await wait_until(stack, repo, number, merged, timeout=60)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_red_ci_at_the_merge_names_the_failing_check(stack: Stack) -> None:
    repo = await witnessed_repo(stack, "red-ci", WITNESSED, COLLABORATORS)
    number = await ticket(stack, repo, directives="demo:break-ci=yes@1")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    assert ("integrate", 1, "returned") in outcomes(view)
    seen = await witnessed(stack, repo, "main", "implement", 2)
    (returned,) = seen["context"]["returned"]
    assert returned["kind"] == "merge_checks_failed" and returned["stage"] == "integrate"
    (check,) = returned["checks"]
    assert (check["name"], check["kind"], check["conclusion"]) == ("ci", "check_run", "failure")
    assert "CI is red: .ci-red is present" in check["summary"] + check["title"] + json.dumps(
        check["annotations"]
    )
    assert "Check `ci`: failure" in seen["prompt"]
    await assert_merged_cleanly(stack, view, repo, number)


async def test_a_writers_inline_review_at_a_human_stage_returns_the_ticket(stack: Stack) -> None:
    repo = await witnessed_repo(stack, "inline", HUMAN, COLLABORATORS)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr, head = view.record.pr_number, view.record.head_sha
    made = await review(
        stack,
        repo,
        pr,
        demo.AUTHOR,  # write permission
        "REQUEST_CHANGES",
        body="Two things before this can go in.",
        comments=[
            {"path": "calc.py", "line": MULTIPLY_LINE, "body": "Validate that both are ints."}
        ],
    )
    view = await wait_until(stack, repo, number, waiting_in("approval", 2), timeout=90)
    assert view.record is not None and view.record.iteration == 2
    seen = await witnessed(stack, repo, view.record.branch or "", "implement", 2)
    (returned,) = seen["context"]["returned"]
    assert (returned["kind"], returned["by"], returned["sha"]) == (
        "changes_requested",
        demo.AUTHOR,
        head,
    )
    got = returned["review"]
    assert got["body"] == "Two things before this can go in."
    (inline,) = got["comments"]
    assert (inline["path"], inline["line"], inline["body"]) == (
        "calc.py",
        MULTIPLY_LINE,
        "Validate that both are ints.",
    )
    assert "def multiply" in inline["diff_hunk"]
    prompt = seen["prompt"]
    assert "`calc.py` line 8" in prompt and "Validate that both are ints." in prompt
    # Ballet answers on the review's thread which commit addressed it.
    new_head = view.record.head_sha
    # The reply is an effect drained after the tracking edit that shows the wait.
    thread, replies = await review_thread(stack, repo, pr)
    assert len(replies) == 1 and new_head in replies[0]["body"], thread
    assert replies[0]["pull_request_review_id"] != made["id"]  # a reply is a review of its own
    await comment(stack, repo, pr, "carol", "/ballet approve")
    view = await wait_until(stack, repo, number, merged, timeout=60)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_a_review_gate_passes_only_on_the_approvers_review_of_the_head(
    stack: Stack,
) -> None:
    repo = await witnessed_repo(stack, "gate", GATE, COLLABORATORS)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("review"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr, head, seed = view.record.pr_number, view.record.head_sha, view.record.seed_sha
    assert head and seed and head != seed
    before = refused_reviews()
    await review(stack, repo, pr, "bob", "APPROVE")  # read only
    await review(stack, repo, pr, "mallory", "APPROVE")  # no access at all
    await review(stack, repo, pr, demo.AUTHOR, "APPROVE")  # a writer, not the approver
    await review(stack, repo, pr, "carol", "APPROVE", commit_id=seed)  # an older head
    view = await until_refused(stack, repo, number, before + 4)
    assert view.record is not None and view.record.status == "waiting"
    assert view.record.waiting and view.record.waiting.kind == "review"
    await review(stack, repo, pr, "carol", "APPROVE")
    view = await wait_until(stack, repo, number, merged, timeout=60)
    assert view.record is not None and view.record.approval is not None
    assert (view.record.approval.by, view.record.approval.sha) == ("carol", head)
    assert ("gate", 1, "approve") in outcomes(view)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_reviews_without_write_permission_move_nothing(stack: Stack) -> None:
    repo = await witnessed_repo(stack, "hostile", HUMAN, COLLABORATORS)
    number = await ticket(stack, repo)
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    pr = view.record.pr_number
    record = view.record
    before = refused_reviews()
    change = {"body": "Rewrite it all in Rust.", "comments": []}
    await review(stack, repo, pr, "mallory", "REQUEST_CHANGES", **change)
    await review(stack, repo, pr, "bob", "REQUEST_CHANGES", **change)
    await review(stack, repo, pr, "mallory", "APPROVE")
    await review(stack, repo, pr, "bob", "APPROVE")
    view = await until_refused(stack, repo, number, before + 4)
    view = await look(stack, repo, number)
    assert view.record is not None
    assert (view.record.status, view.record.stage, view.record.iteration) == (
        record.status,
        record.stage,
        record.iteration,
    )
    assert view.record.history == record.history and view.record.returned == ()


async def test_the_return_and_earlier_reports_outlive_a_redis_flush(stack: Stack) -> None:
    both = HUMAN.replace(
        "- {id: review, kind: agent,", "- {id: review, kind: agent, runtime: witness,"
    )
    repo = await witnessed_repo(stack, "amnesia", both, COLLABORATORS)
    number = await ticket(stack, repo, directives="demo:sleep-implement=3")
    view = await wait_until(stack, repo, number, waiting_for("approval"), timeout=90)
    assert view.record is not None and view.record.pr_number is not None
    reason = "The docstring must say it multiplies integers"
    await comment(stack, repo, view.record.pr_number, "carol", f"/ballet reject {reason}")

    def reworking(v: View) -> bool:
        rec = v.record
        return rec is not None and (rec.stage, rec.iteration, rec.status) == (
            "implement",
            2,
            "running",
        )

    await wait_until(stack, repo, number, reworking, timeout=60)
    await asyncio.sleep(1.0)  # the transition's tracking comment is written through
    await flush(stack)  # while implement's second session runs
    view = await wait_until(stack, repo, number, waiting_in("approval", 2), timeout=120)
    assert view.record is not None
    seen = await witnessed(stack, repo, view.record.branch or "", "review", 2)
    (returned,) = seen["context"]["returned"]
    assert (returned["kind"], returned["by"], returned["text"]) == ("rejected", "carol", reason)
    assert reason in seen["prompt"]
    earlier = [(r["stage"], r["iteration"]) for r in seen["context"]["earlier_reports"]]
    assert earlier == [("implement", 1), ("review", 1), ("verify", 1), ("implement", 2)]


async def test_an_answer_and_its_question_reach_the_session_that_asked(stack: Stack) -> None:
    repo = await witnessed_repo(stack, "answer", WITNESSED, COLLABORATORS)
    number = await ticket(stack, repo, directives="demo:implement=question@1")
    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=90)
    assert view.record is not None
    await comment(stack, repo, number, "carol", "/ballet answer Round half to even.")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    seen = await witnessed(stack, repo, "main", "implement", 1)  # its second attempt
    assert seen["context"]["stage"]["attempt"] == 2
    assert seen["context"]["answers"] == [
        {
            "question": "Which rounding should multiply use?",
            "answer": "Round half to even.",
            "author": "carol",
        }
    ]
    assert "Round half to even." in seen["prompt"]
    assert "Which rounding should multiply use?" in seen["prompt"]
