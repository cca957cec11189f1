"""The integrator brings every repository's branch up to date (issue 37): a companion's
main moving into a conflict while the ticket waits for people goes to the integrator,
naming the repository and the file; its session merges lib's main into lib's branch
keeping both intents, Ballet pushes it, and both land. A companion's branch behind but
clean, where lib's rules want it up to date, is brought up to date by nobody."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import STRICT_CI, add_ruleset, merged, new_repo, outcomes, ticket, wait_until
from test_base_moves import GATED, approve, main_file, waiting_at
from test_companions import merges_in_order
from test_config_pr import Clone

pytestmark = pytest.mark.anyio


def lib_pr_open(view: View) -> bool:
    rec = view.record
    return rec is not None and any(p.number is not None for p in rec.companion_prs)


async def gated_with(stack: Stack, name: str) -> tuple[str, str]:
    lib = await new_repo(stack, f"lib-{name}")
    app = await new_repo(stack, f"app-{name}", f"companions: [{lib}]\n" + GATED)
    return lib, app


def waiting_for_people(iteration: int) -> Any:
    at_gate = waiting_at("people", iteration)

    def done(view: View) -> bool:
        return at_gate(view) and lib_pr_open(view)

    return done


async def test_a_companions_base_moving_into_a_conflict_is_resolved_by_the_integrator(
    stack: Stack, tmp_path: Path
) -> None:
    lib, app = await gated_with(stack, "conflict")
    number = await ticket(stack, app, directives="demo:companion=lib-conflict")
    view = await wait_until(stack, app, number, waiting_for_people(1), timeout=90)
    assert view.record is not None
    (pr,) = view.record.companion_prs
    theirs = f"from_{number}.py"

    # Someone lands a file of the same name on lib's main meanwhile.
    clone = Clone(tmp_path / "lib", f"{stack.api_url}/{lib}.git", "carol")
    (clone.path / theirs).write_text("ALSO_ON_MAIN = 1\n")
    clone.git("add", theirs)
    base = clone.commit_file(theirs, "ALSO_ON_MAIN = 1\n", "lib: the same file on main")
    clone.git("push", "-q", "origin", "main")

    # The integrator merges lib's main into lib's branch keeping both; back to the people.
    view = await wait_until(stack, app, number, waiting_for_people(2), timeout=120)
    rec = view.record
    assert rec is not None
    assert outcomes(view)[-3:] == [
        ("people", 1, "returned"),
        ("integrate", 2, "done"),
        ("people", 2, None),
    ]
    (why,) = rec.returned
    assert (why.kind, why.by) == ("merge_conflict", f"base:{lib}:main")
    assert f"{lib}#{pr.number} now conflicts with it" in why.text and f"`{theirs}`" in why.text
    session = next(r for r in rec.history if r.stage == "integrate")
    report = next(c["body"] for c in view.state["comments"] if session.report_ref in c["body"])
    assert f"and {lib} with theirs" in report
    # Ballet pushed lib's resolved branch: main is in it, and the record names its head.
    (resolved,) = rec.companion_prs
    lib_pull = next(p for p in (await stack.state(lib))["pulls"] if p["number"] == pr.number)
    assert resolved.head_sha == lib_pull["head_sha"] != pr.head_sha
    clone.git("fetch", "-q", "origin", rec.branch or "")
    clone.git("merge-base", "--is-ancestor", base, resolved.head_sha)

    await approve(stack, app, view)
    view = await wait_until(stack, app, number, merged, timeout=120)
    assert await merges_in_order(stack, app, lib) == [lib, app]
    landed = await main_file(stack, lib, theirs)
    assert "ALSO_ON_MAIN = 1" in landed and "def multiply" in landed


async def test_a_companion_behind_but_clean_is_brought_up_to_date_by_nobody(
    stack: Stack, tmp_path: Path
) -> None:
    lib, app = await gated_with(stack, "behind")
    await add_ruleset(stack, lib, STRICT_CI)
    number = await ticket(stack, app, directives="demo:companion=lib-behind")
    view = await wait_until(stack, app, number, waiting_for_people(1), timeout=90)
    assert view.record is not None
    (before,) = view.record.companion_prs

    clone = Clone(tmp_path / "lib", f"{stack.api_url}/{lib}.git", "carol")
    base = clone.commit_file("README.md", "# lib\n\nNow with more.\n", "README")
    clone.git("push", "-q", "origin", "main")

    def lib_updated(view: View) -> bool:
        rec = view.record
        return rec is not None and rec.companion_prs[0].head_sha != before.head_sha

    view = await wait_until(stack, app, number, lib_updated, timeout=60)
    rec = view.record
    assert rec is not None
    (after,) = rec.companion_prs
    lib_state = await stack.state(lib)
    lib_pull = next(p for p in lib_state["pulls"] if p["number"] == before.number)
    # The record knows the head GitHub gave lib's branch, which has lib's main in it.
    assert after.head_sha == lib_pull["head_sha"]
    clone.git("fetch", "-q", "origin", rec.branch or "")
    clone.git("merge-base", "--is-ancestor", base, after.head_sha)
    # Still the people's, in the same iteration: no work was sent back, nobody wrote.
    assert (rec.status, rec.stage, rec.iteration) == ("waiting", "people", 1)
    people = {c["user"] for c in lib_state["comments"]}
    assert all(u.endswith("[bot]") for u in people), people

    await approve(stack, app, view)
    view = await wait_until(stack, app, number, merged, timeout=120)
    assert await merges_in_order(stack, app, lib) == [lib, app]
    assert view.record is not None
    assert view.record.companion_prs[0].head_sha == after.head_sha
