"""One ticket across two repositories (issue 37): the agent changes acme/app and its
companion acme/lib; each gets a pull request, linked to the other, Review reads both."""

from __future__ import annotations

import pytest
from ballet.core.record import decode_record
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import STATE, merged, new_repo, pull_request_actions, ticket, wait_until

pytestmark = pytest.mark.anyio


def with_companion(lib: str) -> str:
    return f"policy: {{merge: auto}}\ncompanions: [{lib}]\n" + demo.BALLET_YML


async def merges_in_order(stack: Stack, *repos: str) -> list[str]:
    """The repositories whose pull requests GitHub said were merged, in that order."""
    seen: list[str] = []
    async with stack.admin() as admin:
        for d in (await admin.get("/_sandbox/deliveries")).json():
            if d["event"] != "pull_request" or d["redelivery"]:
                continue
            payload = (await admin.get(f"/_sandbox/deliveries/{d['id']}")).json()["payload"]
            name = payload["repository"]["full_name"]
            if (
                name in repos
                and payload["action"] == "closed"
                and payload["pull_request"]["merged"]
            ):
                seen.append(name)
    return seen


async def test_a_ticket_changes_its_companion_two_linked_prs_merge_lib_first(stack: Stack) -> None:
    lib = await new_repo(stack, "lib-linked")
    app = await new_repo(stack, "app-linked", with_companion(lib))
    number = await ticket(stack, app, directives="demo:companion=lib-linked")

    view = await wait_until(stack, app, number, merged, timeout=120)
    record = view.record
    assert record is not None and record.pr_number is not None
    (pr,) = record.companion_prs
    assert pr.repo == lib and pr.number is not None
    lib_state = await stack.state(lib)
    lib_pr = next(p for p in lib_state["pulls"] if p["number"] == pr.number)
    # A draft from the ticket's branch, naming the ticket and the app's pull request.
    assert lib_pr["head"] == record.branch and lib_pr["base"] == "main"
    assert lib_pr["head_sha"] == pr.head_sha
    # Opened as a draft, marked ready as it landed.
    actions = await pull_request_actions(stack, lib, pr.number)
    assert actions[0] == ("opened", True, False), actions
    body = View(lib_state, None).issue(pr.number)["body"]
    assert f"Part of {app}#{number}, with {app}#{record.pr_number}." in body
    # Review read the companion's diff beside the app's.
    review = next(r for r in record.history if r.stage == "review")
    assert f"{lib} changes from_{number}.py" in review.summary
    # The tracking comment lists both pull requests; its hidden record names them.
    tracking = next(c["body"] for c in view.state["comments"] if STATE in c["body"])
    assert f"{lib}#{pr.number} " in tracking and f"{app}#{record.pr_number} (this one)" in tracking
    assert decode_record(tracking).companion_prs == record.companion_prs

    # Both land, the companion first (its `companions:` order), the ticket's own last.
    assert pr.state == "merged" and lib_pr["merged"]
    assert await merges_in_order(stack, app, lib) == [lib, app]
    # Every stage's verdict shows on the companion's head too.
    names = {r["name"] for r in lib_state["check_runs"] if r["head_sha"] == pr.head_sha}
    assert {"ballet/implement", "ballet/review", "ballet/verify"} <= names
