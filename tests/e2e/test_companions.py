"""One ticket across two repositories (issue 37): the agent changes acme/app and its
companion acme/lib; each gets a pull request, linked to the other, Review reads both."""

from __future__ import annotations

import pytest
from ballet.core.record import decode_record
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import STATE, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio


def with_companion(lib: str) -> str:
    return f"policy: {{merge: auto}}\ncompanions: [{lib}]\n" + demo.BALLET_YML


def companion_pr_known(view: View) -> bool:
    record = view.record
    return (
        record is not None
        and any(pr.number is not None for pr in record.companion_prs)
        and record.status in ("done", "waiting", "failed")
    )


async def test_a_ticket_changes_its_companion_and_both_prs_are_linked(stack: Stack) -> None:
    lib = await new_repo(stack, "lib-linked")
    app = await new_repo(stack, "app-linked", with_companion(lib))
    number = await ticket(stack, app, directives="demo:companion=lib-linked")

    view = await wait_until(stack, app, number, companion_pr_known, timeout=120)
    record = view.record
    assert record is not None and record.pr_number is not None
    (pr,) = record.companion_prs
    assert pr.repo == lib and pr.number is not None
    lib_state = await stack.state(lib)
    lib_pr = next(p for p in lib_state["pulls"] if p["number"] == pr.number)
    # A draft from the ticket's branch, naming the ticket and the app's pull request.
    assert lib_pr["head"] == record.branch and lib_pr["base"] == "main"
    assert lib_pr["head_sha"] == pr.head_sha
    assert lib_pr["draft"]
    body = View(lib_state, None).issue(pr.number)["body"]
    assert f"Part of {app}#{number}, with {app}#{record.pr_number}." in body
    # Review read the companion's diff beside the app's.
    review = next(r for r in record.history if r.stage == "review")
    assert f"{lib} changes from_{number}.py" in review.summary
    # The tracking comment lists both pull requests; its hidden record names them.
    tracking = next(c["body"] for c in view.state["comments"] if STATE in c["body"])
    assert f"{lib}#{pr.number} " in tracking and f"{app}#{record.pr_number} (this one)" in tracking
    assert decode_record(tracking).companion_prs == record.companion_prs
