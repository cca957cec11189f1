"""A companion whose main requires GitHub's merge queue (issue 37 item 4: "each by its
repository's rules, the merge queue where that has landed"): Ballet puts the companion's
pull request in its queue, reports its own checks on the companion's group commit, and
lands the ticket's own pull request once the group merged; a companion group whose CI
fails returns the ticket, the cause naming the repository and the group's commit, and
once another companion landed stops it with the question; `/ballet retry` lands the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import ballet_checks, comment, merged, new_repo, ticket, wait_until, waiting_for
from test_companions import merges_in_order, with_companion
from test_config_pr import Clone
from test_landing_through_the_queue import BREAKABLE_CI, require_the_queue
from worker_processes import files_named

pytestmark = pytest.mark.anyio


async def breakable_queued_repo(stack: Stack, name: str) -> str:
    """A repository whose main requires the merge queue and whose CI fails on breaks.txt."""
    request = demo.new_repo_request(name)
    request["ci"] = {"command": BREAKABLE_CI}
    repo: str = (await stack.create_repo(request))["full_name"]
    await require_the_queue(stack, repo)
    return repo


async def implement_started(stack: Stack) -> None:
    """The implement session's agent runs: its clones, the companions' too, are made."""
    for _ in range(300):
        if files_named(stack.settings.data_dir, "hanging.ns"):
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the implement session never started")


async def break_main(stack: Stack, repo: str, tmp_path: Path) -> Clone:
    clone = Clone(tmp_path / repo.replace("/", "-"), f"{stack.api_url}/{repo}.git", "carol")
    (clone.path / "breaks.txt").write_text("x\n")
    clone.git("add", "breaks.txt")
    clone.git("commit", "-q", "-m", "Something on main the ticket's branch does not have")
    clone.git("push", "-q", "origin", "main")
    return clone


async def test_a_companion_that_requires_the_queue_lands_through_it_first(stack: Stack) -> None:
    lib = await new_repo(stack, "lib-queued")
    await require_the_queue(stack, lib)
    app = await new_repo(stack, "app-queued", with_companion(lib))
    number = await ticket(stack, app, directives="demo:companion=lib-queued")

    view = await wait_until(stack, app, number, merged, timeout=180)
    record = view.record
    assert record is not None
    (pr,) = record.companion_prs
    assert pr.state == "merged"
    lib_state = await stack.state(lib)
    lib_pr = next(p for p in lib_state["pulls"] if p["number"] == pr.number)
    # The queue merged lib's pull request: its group's commit is lib's main now.
    group = lib_pr["merge_commit_sha"]
    assert lib_pr["merged"], lib_pr
    assert lib_state["branches"]["main"] == group and group != lib_pr["head_sha"]
    # Ballet's checks, as they passed on lib's head, reported on lib's group commit:
    # the queue's ruleset requires ballet/verify and would have waited for it forever.
    on_group = ballet_checks(View(lib_state, None), group)
    for name in ("ballet/implement", "ballet/review", "ballet/verify"):
        assert on_group[name] == ("completed", "success"), on_group
    # lib through its queue first, then the ticket's own, merged directly.
    assert await merges_in_order(stack, app, lib) == [lib, app]
    assert not [b for b in lib_state["branches"] if b.startswith("gh-readonly-queue/")]


async def test_a_companion_group_whose_ci_fails_returns_the_ticket_naming_it(
    stack: Stack, tmp_path: Path
) -> None:
    lib = await breakable_queued_repo(stack, "lib-queue-red")
    app = await new_repo(stack, "app-queue-red", with_companion(lib))
    # Implement takes its time: lib's main moves once its clone of lib was made, breaking
    # what lib's merge group builds (lib's branch itself stays green).
    number = await ticket(
        stack, app, directives="demo:companion=lib-queue-red\ndemo:hang-implement=4"
    )
    await implement_started(stack)
    await break_main(stack, lib, tmp_path)

    def returned(view: View) -> bool:
        return view.record is not None and view.record.iteration == 2

    view = await wait_until(stack, app, number, returned, timeout=180)
    record = view.record
    assert record is not None
    (pr,) = record.companion_prs
    landing = next(r for r in record.history if r.stage == "integrate" and r.iteration == 1)
    assert landing.outcome == "returned"
    (why,) = [c for c in record.returned if c.kind == "merge_checks_failed"]
    group = why.sha
    assert group is not None and group != pr.head_sha
    assert (why.repo, why.pr) == (lib, pr.number)  # where the next session reads them
    assert why.text == (
        f"merge of {lib}#{pr.number} returned by red required checks: required checks "
        f"failed on GitHub's merge queue's group {group[:12]}"
    )
    lib_state = await stack.state(lib)
    # lib's CI ran red on the group's commit, where Ballet's checks were reported too;
    # nothing of the ticket landed in either repository.
    assert any(
        r["head_sha"] == group and r["name"] == "ci" and r["conclusion"] == "failure"
        for r in lib_state["check_runs"]
    )
    assert ballet_checks(View(lib_state, None), group)["ballet/verify"][1] == "success"
    assert not any(p["merged"] for p in lib_state["pulls"])
    assert view.pull is not None and not view.pull["merged"]


async def test_a_companion_group_failing_after_another_landed_stops_and_retry_lands_the_rest(
    stack: Stack, tmp_path: Path
) -> None:
    first = await new_repo(stack, "lib-direct")  # no rules: merged directly
    second = await breakable_queued_repo(stack, "lib-queued-late")
    yml = f"policy: {{merge: auto}}\ncompanions: [{first}, {second}]\n" + demo.BALLET_YML
    app = await new_repo(stack, "app-part-way", yml)
    number = await ticket(
        stack,
        app,
        directives="demo:companion=lib-direct\ndemo:companion=lib-queued-late\n"
        "demo:hang-implement=4",
    )
    await implement_started(stack)
    clone = await break_main(stack, second, tmp_path)

    view = await wait_until(stack, app, number, waiting_for("question"), timeout=180)
    record = view.record
    assert record is not None and record.waiting is not None
    one, two = record.companion_prs
    assert (one.repo, one.state, two.repo, two.state) == (first, "merged", second, "open")
    reason = record.waiting.reason
    assert reason.startswith(
        f"landing stopped part way: landed {first}#{one.number}; {second}#{two.number} did "
        "not land: red required checks (required checks failed on GitHub's merge queue's "
        "group "
    ), reason
    assert reason.endswith(
        f"; not tried yet: {app}#{record.pr_number}. Fix it, then `/ballet retry` lands what "
        "is left, in the same order"
    ), reason
    assert view.pull is not None and not view.pull["merged"]

    # Someone fixes the second's main; /ballet retry lands what is left, in order.
    clone.git("rm", "-q", "breaks.txt")
    clone.git("commit", "-q", "-m", "Fix main")
    clone.git("push", "-q", "origin", "main")
    await comment(stack, app, record.pr_number or 0, "carol", "/ballet retry")
    view = await wait_until(stack, app, number, merged, timeout=180)
    assert view.record is not None
    assert [p.state for p in view.record.companion_prs] == ["merged", "merged"]
    assert await merges_in_order(stack, app, first, second) == [first, second, app]
