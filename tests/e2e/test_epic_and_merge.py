"""A sub-issue's sessions see its epic and lineage; the merge follows `.ballet.yml`'s
`merge:` (one squashed commit with the configured title, the branch deleted); a
method the repository disallows stops at a question saying what to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    assert_merged_cleanly,
    ballet_labels,
    comment,
    lands_alone,
    merged,
    outcomes,
    wait_until,
    waiting_for,
)
from witnessed import repo_request

pytestmark = pytest.mark.anyio

AGENT = (Path(__file__).parent / "links_agent.py").read_text()
CRITERIA = "- every operation has a function and a test"
EPIC_BODY = f"Grow the calculator. EPIC-BODY-MARK\n\n## Acceptance criteria\n\n{CRITERIA}\n"

LINKS_YML = """\
trigger_label: ballet
runtimes:
  script: {adapter: command, command: [python3, .ballet/agent.py]}
  links: {adapter: command, command: [python3, .ballet/links_agent.py]}
default_runtime: script
merge: {method: squash, commit_title: "{title} (#{pr})", delete_branch: true}
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, runtime: links, skills: [implementer], timeout_minutes: 5,
         next: {done: review}}
      - {id: review, kind: agent, runtime: links, skills: [reviewer], timeout_minutes: 5,
         next: {approve: integrate, changes_requested: implement}}
      - {id: integrate, kind: platform, action: merge, next: {merged: $done, returned: implement}}
"""


async def _post(user: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await user.post(path, json=body)
    assert response.status_code in (200, 201), response.text
    data: dict[str, Any] = response.json()
    return data


def _agent(expected: dict[str, Any]) -> str:
    return AGENT.replace(
        "EXPECTED: dict[str, Any] = {}", f"EXPECTED: dict[str, Any] = {expected!r}"
    )


async def test_a_sub_issue_sees_its_epic_and_lineage_and_lands_as_one_commit(
    stack: Stack,
) -> None:
    expected = {
        "epic": {
            "number": 1,
            "title": "Calculator epic",
            "state": "open",
            "criteria": CRITERIA,
            "body_has": True,
            "subs": [[2, "closed", "done"]],
            "total": 2,
        },
        "epic_body_has": "EPIC-BODY-MARK",
        # #3 is named by the ticket, #5 names it; the ticket's own PR (#6) is `pr_number`.
        "lineage": [[3, "referenced", "issue"], [5, "referencing", "issue"]],
        "prompt": ["## Epic: Calculator epic", "- #2 Add subtract (closed) — Ballet: done"],
    }
    files = {".ballet/links_agent.py": _agent(expected)}
    created = await stack.create_repo(repo_request("epic", LINKS_YML, files))
    repo, base = created["full_name"], created["head_sha"]
    async with stack.user(demo.AUTHOR) as user:
        issues = f"/repos/{repo}/issues"
        epic = await _post(user, issues, {"title": "Calculator epic", "body": EPIC_BODY})
        done = await _post(user, issues, {"title": "Add subtract", "labels": ["ballet:done"]})
        await user.patch(f"{issues}/{done['number']}", json={"state": "closed"})
        await _post(user, issues, {"title": "Design notes"})
        body = demo.ISSUE_BODY + "\nThe design is in #3.\n"
        ticket = await _post(user, issues, {"title": demo.ISSUE_TITLE, "body": body})
        for sub in (done, ticket):
            path = f"{issues}/{epic['number']}/sub_issues"
            await _post(user, path, {"sub_issue_id": sub["id"]})
        await _post(user, issues, {"title": "Follow-up", "body": f"After #{ticket['number']}."})
        number = ticket["number"]
        assert number == 4
        await _post(user, f"{issues}/{number}/labels", {"labels": ["ballet"]})

    def settled(view: View) -> bool:
        return merged(view) or waiting_for("question")(view)

    view = await wait_until(stack, repo, number, settled, timeout=120)

    # A question here means the agent saw something else: its report says what.
    assert merged(view), [c["body"][:2000] for c in view.state["comments"]]
    assert outcomes(view) == [
        ("implement", 1, "done"),
        ("review", 1, "approve"),
        ("integrate", 1, "merged"),
    ]
    reports = [c["body"] for c in view.comments_on(6) if "links-agent saw" in c["body"]]
    assert len(reports) == 2, [c["body"][:200] for c in view.comments_on(6)]
    await assert_merged_cleanly(stack, view, repo, number)
    pull = view.pull
    assert pull is not None and pull["number"] == 6
    # One squashed commit on the base, titled as configured; the branch is gone.
    async with stack.user(demo.AUTHOR) as user:
        sha = view.state["branches"]["main"]
        commit = (await user.get(f"/repos/{repo}/git/commits/{sha}")).json()
    assert [p["sha"] for p in commit["parents"]] == [base]
    assert commit["message"].splitlines()[0] == f"{demo.ISSUE_TITLE} (#6)"
    assert set(view.state["branches"]) == {"main"}


MERGE_ONLY_YML = """\
trigger_label: ballet
runtimes:
  script: {adapter: command, command: [python3, .ballet/agent.py]}
default_runtime: script
pipelines:
  default:
    merge: {method: merge, delete_branch: false}
    stages:
      - {id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,
         next: {done: integrate}}
      - {id: integrate, kind: platform, action: merge, next: {merged: $done, returned: implement}}
"""


async def _merge_attempts(stack: Stack, repo: str) -> int:
    async with stack.admin() as admin:
        made = (await admin.get("/_sandbox/requests")).json()
    return sum(
        1 for r in made if r["method"] == "PUT" and r["path"].startswith(f"/repos/{repo}/pulls/")
    )


async def test_a_disallowed_method_asks_what_to_change_then_merges_once_allowed(
    stack: Stack,
) -> None:
    request = demo.new_repo_request("squash-only", ballet_yml=lands_alone(MERGE_ONLY_YML))
    request["merge_methods"] = ["squash"]
    repo = (await stack.create_repo(request))["full_name"]
    async with stack.user(demo.AUTHOR) as user:
        issue = await _post(
            user,
            f"/repos/{repo}/issues",
            {"title": demo.ISSUE_TITLE, "body": demo.ISSUE_BODY, "labels": ["ballet"]},
        )
    number = issue["number"]

    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=90)

    assert view.record is not None and view.pull is not None
    question = view.record.questions[-1].question
    assert "with the `merge` method" in question
    assert "Merge commits are not allowed on this repository; it allows: squash" in question
    assert 'turn on "Allow merge commits"' in question and "`/ballet retry`" in question
    assert not view.pull["merged"]
    assert ballet_labels(view, number) == {"ballet:waiting", "ballet:question"}
    asked = [c["body"] for c in view.comments_on(view.pull["number"]) if question in c["body"]]
    assert asked and f"@{demo.AUTHOR}" in asked[0]
    assert await _merge_attempts(stack, repo) == 1  # asked once, not retried

    # The owner allows merge commits; the author retries.
    async with stack.user(demo.OWNER) as owner:
        allowed = await owner.patch(f"/repos/{repo}", json={"allow_merge_commit": True})
        assert allowed.status_code == 200, allowed.text
    await comment(stack, repo, number, demo.AUTHOR, "/ballet retry")

    view = await wait_until(stack, repo, number, merged, timeout=90)
    pull = view.pull
    assert pull is not None
    async with stack.user(demo.AUTHOR) as user:
        commit = (await user.get(f"/repos/{repo}/git/commits/{pull['merge_commit_sha']}")).json()
    assert len(commit["parents"]) == 2  # a merge commit, as configured
    assert pull["head"] in view.state["branches"]  # delete_branch: false keeps it
