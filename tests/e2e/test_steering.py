"""Steering a running ticket: pause/resume, cancel, retry; phases; red CI on merge."""

from __future__ import annotations

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import (
    assert_merged_cleanly,
    assert_tracking,
    ballet_checks,
    ballet_labels,
    comment,
    merged,
    new_repo,
    outcomes,
    status_is,
    ticket,
    wait_until,
)

pytestmark = pytest.mark.anyio


async def test_pause_then_resume_then_merged(stack: Stack) -> None:
    repo = await new_repo(stack, "pause")
    number = await ticket(stack, repo, directives="demo:sleep-implement=3@1")
    await wait_until(stack, repo, number, status_is("running"), timeout=30)

    await comment(stack, repo, number, demo.AUTHOR, "/ballet pause")
    view = await wait_until(stack, repo, number, status_is("paused"), timeout=30)
    assert view.record is not None
    assert ballet_labels(view, number) == set()

    await comment(stack, repo, number, demo.AUTHOR, "/ballet resume")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    assert [s for s, _, o in outcomes(view) if o == "merged"] == ["integrate"]
    assert ("implement", 1, "paused") in outcomes(view)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_cancel_stops_the_ticket(stack: Stack) -> None:
    repo = await new_repo(stack, "cancel")
    number = await ticket(stack, repo, directives="demo:sleep-implement=30@1")
    await wait_until(stack, repo, number, status_is("running"), timeout=30)

    await comment(stack, repo, number, "carol", "/ballet cancel")
    view = await wait_until(stack, repo, number, status_is("cancelled"), timeout=30)

    assert ballet_labels(view, number) == set()
    assert view.record is not None and view.record.ended_by == "carol"
    assert outcomes(view) == [("implement", 1, "cancelled")]
    assert_tracking(view, number)
    # The draft PR stays open for a person to pick up; its running check was cancelled.
    pull = view.pull
    assert pull is not None and pull["draft"] and not pull["merged"]
    assert view.issue(pull["number"])["state"] == "open"
    assert ballet_checks(view, pull["head_sha"]) == {"ballet/implement": ("completed", "cancelled")}


async def test_a_crashed_session_is_retried_by_command(stack: Stack) -> None:
    repo = await new_repo(stack, "retry")
    number = await ticket(stack, repo, directives="demo:crash-implement=yes@1")

    def failed_implement(view: object) -> bool:
        record = getattr(view, "record", None)
        return (
            record is not None
            and any(run.stage == "implement" and run.outcome == "failed" for run in record.history)
            and record.status == "waiting"
        )

    view = await wait_until(stack, repo, number, failed_implement, timeout=60)
    assert view.record is not None
    failed = next(run for run in view.record.history if run.outcome == "failed")
    assert "exit" in failed.summary.lower() or "report" in failed.summary.lower()
    assert ballet_labels(view, number) == {"ballet:waiting", "ballet:question"}
    head = view.record.head_sha or ""
    assert ballet_checks(view, head)["ballet/implement"] == ("completed", "failure")

    await comment(stack, repo, number, demo.AUTHOR, "/ballet retry")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    assert ("implement", 1, "done") in outcomes(view)
    await assert_merged_cleanly(stack, view, repo, number)
    # The retry started on the same head (reusing its check run there), then moved the
    # head: the old head's check ends superseded, not red or running.
    assert ballet_checks(view, head)["ballet/implement"] == ("completed", "neutral")


PHASED = demo.BALLET_YML.replace(
    "skills: [implementer], timeout_minutes: 5,",
    "skills: [implementer], timeout_minutes: 5, phases: [research, plan, implement, verify],",
)


async def test_phased_implement_runs_one_session_per_phase(stack: Stack) -> None:
    repo = await new_repo(stack, "phased", PHASED)
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=120)

    assert view.record is not None
    phases = [run.phase for run in view.record.history if run.stage == "implement"]
    assert phases == ["research", "plan", "implement", "verify"]
    # The phases share one check run; it completes once, with the last phase.
    await assert_merged_cleanly(stack, view, repo, number)


async def test_red_ci_on_merge_returns_the_ticket_to_implement(stack: Stack) -> None:
    repo = await new_repo(stack, "red-ci")
    number = await ticket(stack, repo, directives="demo:break-ci=yes@1")

    view = await wait_until(stack, repo, number, merged, timeout=150)

    runs = outcomes(view)
    assert ("integrate", 1, "returned") in runs
    assert ("integrate", 2, "merged") in runs
    assert view.record is not None
    returned = next(r for r in view.record.history if r.outcome == "returned")
    assert "check" in returned.summary.lower()
    await assert_merged_cleanly(stack, view, repo, number)
    # The red head keeps its red CI and the integrate check that returned the work.
    red = [r for r in view.state["check_runs"] if r["conclusion"] == "failure"]
    assert {r["name"] for r in red} == {"ci", "ballet/integrate"}
    assert len({r["head_sha"] for r in red}) == 1
