"""One ticket across repositories (issue 37): the agent changes acme/app and its companion
acme/lib; each gets a pull request, linked to the other, Review reads both, both land
in order; a red check or a person's review there returns the ticket; Redis loses none."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ballet.core.record import decode_record
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    STATE,
    comment,
    flush,
    merged,
    new_repo,
    pull_request_actions,
    ticket,
    wait_until,
    waiting_for,
)
from test_people_heard import refused_reviews, review, until_refused
from worker_processes import files_named

pytestmark = pytest.mark.anyio


def with_companion(lib: str) -> str:
    return f"policy: {{merge: auto}}\ncompanions: [{lib}]\n" + demo.BALLET_YML


def companion_pr_named(view: View) -> bool:
    record = view.record
    return record is not None and any(p.number is not None for p in record.companion_prs)


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
    # Ballet's own work for the ticket (its comments, labels, check runs, pull requests
    # and merges in both repositories) went through a token GitHub was asked to limit
    # to the ticket's repositories, no other of the installation (a write elsewhere
    # through such a token is GitHub's 404: tests/github/test_token_scopes.py).
    async with stack.admin() as admin:
        made = (await admin.get("/_sandbox/requests")).json()
    ours = [r for r in made if r["path"].startswith((f"/repos/{app}/", f"/repos/{lib}/"))]
    writes = [(r["method"], r["path"], r.get("token_repos")) for r in ours if r["method"] != "GET"]
    assert {path.split("/")[4] for _, path, _ in writes} == {"issues", "check-runs", "pulls"}
    assert {(m, path.startswith(f"/repos/{lib}/")) for m, path, _ in writes} >= {
        ("POST", True),  # its pull request, its check runs
        ("PUT", True),  # its merge
        ("PUT", False),
    }
    assert all(reach == sorted([app, lib]) for _, _, reach in writes), writes


async def test_a_red_check_on_the_companions_pr_returns_the_ticket_naming_it(
    stack: Stack,
) -> None:
    lib = await new_repo(stack, "lib-red")
    app = await new_repo(stack, "app-red", with_companion(lib))
    number = await ticket(
        stack, app, directives="demo:companion=lib-red\ndemo:break-companion-ci=yes@1"
    )

    view = await wait_until(stack, app, number, merged, timeout=180)
    record = view.record
    assert record is not None
    (pr,) = record.companion_prs
    # The landing found the companion's red checks before merging anything (heard while
    # the agents worked, or read by its merge): the work came back, the cause naming the
    # repository, and the next iteration landed both. (Heard and kept, red CI returns the
    # ticket before anyone is asked to approve: test_companions_returned.)
    returned = next(r for r in record.history if r.stage == "integrate" and r.iteration == 1)
    assert returned.outcome == "returned"
    assert f"{lib}#{pr.number}" in returned.summary and "red" in returned.summary
    assert [p["number"] for p in (await stack.state(lib))["pulls"]] == [pr.number]
    assert [(r.stage, r.iteration, r.outcome) for r in record.history][-1] == (
        "integrate",
        2,
        "merged",
    )
    assert await merges_in_order(stack, app, lib) == [lib, app]


async def test_a_redis_flush_mid_ticket_loses_no_companion_pr(stack: Stack) -> None:
    lib = await new_repo(stack, "lib-flush")
    app = await new_repo(stack, "app-flush", with_companion(lib))
    number = await ticket(stack, app, directives="demo:companion=lib-flush\ndemo:hang-review=6")
    # Review runs: the companion's pull request was opened after implement; then every
    # key in Valkey goes, and the record comes back from the tracking comment.
    for _ in range(1200):
        if files_named(stack.settings.data_dir, "hanging.ns"):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the review session never started")
    # What the tracking comment on GitHub holds is all a rebuilt record has: it names
    # the companion's pull request before Valkey goes.
    before = await wait_until(stack, app, number, companion_pr_named, timeout=30)
    assert before.record is not None and before.record.stage == "review"
    await flush(stack)

    view = await wait_until(stack, app, number, merged, timeout=240)
    record = view.record
    assert record is not None
    (pr,) = record.companion_prs
    assert pr.state == "merged"
    assert before.record.companion_prs[0].number == pr.number
    lib_state = await stack.state(lib)
    # The one pull request opened before the flush, never a second, landed first.
    assert [(p["number"], p["merged"]) for p in lib_state["pulls"]] == [(pr.number, True)]
    assert await merges_in_order(stack, app, lib) == [lib, app]
    ours = [(r["name"], r["head_sha"]) for r in lib_state["check_runs"]]
    assert len(ours) == len(set(ours)), ours


APPROVED_BY_A_PERSON = demo.BALLET_YML.replace(
    "next: {pass: integrate, fail: implement}}",
    "next: {pass: approval, fail: implement}}\n"
    "      - {id: approval, kind: human, next: {approve: integrate, reject: implement}}",
)


def waiting_in(kind: str, iteration: int) -> Any:
    def done(view: View) -> bool:
        rec = view.record
        return waiting_for(kind)(view) and rec is not None and rec.iteration == iteration

    return done


async def test_a_persons_review_of_the_companions_pr_returns_the_ticket_naming_it(
    stack: Stack,
) -> None:
    lib = await new_repo(stack, "lib-reviewed")
    yml = f"policy: {{merge: auto}}\ncompanions: [{lib}]\n" + APPROVED_BY_A_PERSON
    app = await new_repo(stack, "app-reviewed", yml)
    number = await ticket(stack, app, directives="demo:companion=lib-reviewed")
    view = await wait_until(stack, app, number, waiting_in("approval", 1), timeout=120)
    assert view.record is not None
    (pr,) = view.record.companion_prs
    assert pr.number is not None

    async with stack.user("carol") as user:
        made = await user.post(
            f"/repos/{lib}/pulls/{pr.number}/reviews",
            json={"event": "REQUEST_CHANGES", "body": "Name the function in lib too."},
        )
    assert made.status_code == 200, made.text

    view = await wait_until(stack, app, number, waiting_in("approval", 2), timeout=120)
    record = view.record
    assert record is not None
    (why,) = record.returned
    assert why.kind == "changes_requested" and why.by == "carol"
    assert f"(a review of {lib}#{pr.number}, at " in why.text
    assert "Name the function in lib too." in why.text
    await comment(stack, app, record.pr_number or 0, "carol", "/ballet approve")
    view = await wait_until(stack, app, number, merged, timeout=120)
    assert view.record is not None
    assert [p.state for p in view.record.companion_prs] == ["merged"]
    assert await merges_in_order(stack, app, lib) == [lib, app]


async def test_where_people_decide_each_repositorys_writer_approves_its_pull_request(
    stack: Stack,
) -> None:
    lib = await new_repo(stack, "lib-approved")
    app = await new_repo(stack, "app-approved", f"companions: [{lib}]\n" + demo.BALLET_YML,
                         people_decide=True)  # fmt: skip
    number = await ticket(stack, app, directives="demo:companion=lib-approved")
    view = await wait_until(stack, app, number, waiting_in("approval", 1), timeout=120)
    record = view.record
    assert record is not None and record.pr_number is not None
    (pr,) = record.companion_prs
    assert pr.number is not None
    # The ticket's own approval speaks for acme/app alone: the landing waits on for lib's.
    await comment(stack, app, record.pr_number, "carol", "/ballet approve")

    def only_lib_left(view: View) -> bool:
        w = view.record.waiting if view.record is not None else None
        return w is not None and w.reason.startswith("a person to approve the companions'")

    view = await wait_until(stack, app, number, only_lib_left, timeout=60)
    assert view.record is not None and view.record.waiting is not None
    assert f"{lib}#{pr.number} at {pr.head_sha[:12]}" in view.record.waiting.reason
    # A reader's approval there lands nothing; a writer's of lib's head lands both, lib first.
    refused = refused_reviews()
    await review(stack, lib, pr.number, "bob", "APPROVE")
    await until_refused(stack, app, number, refused + 1)
    assert not (await stack.state(lib))["pulls"][0]["merged"]
    await review(stack, lib, pr.number, "carol", "APPROVE", commit_id=pr.head_sha)
    view = await wait_until(stack, app, number, merged, timeout=120)
    assert view.record is not None
    (landed,) = view.record.companion_prs
    assert landed.approval is not None and landed.approval.by == "carol"
    assert await merges_in_order(stack, app, lib) == [lib, app]
