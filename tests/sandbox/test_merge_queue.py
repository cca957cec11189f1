"""The merge queue's whole life on the sandbox: enqueue, a merge group on its
`gh-readonly-queue` ref, CI and the App's checks on the group's commit, merged into
the base or destroyed. Webhook payloads are read with githubkit's webhook models
(generated from GitHub's webhook schemas), which refuse a payload missing a field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import GraphQLFailed
from githubkit.webhooks import parse_obj

from .conftest import Receiver, authed_url, installation_client, make_repo, push_branch, settle
from .test_rulesets import QUEUE, add_ruleset, checks_rule, open_pull

# Fails on a commit with breaks.txt, and says where as a workflow annotation.
CI = [
    "sh",
    "-c",
    "if [ -f breaks.txt ]; then echo '::error file=breaks.txt,line=1::it broke'; exit 1; fi",
]
ENQUEUE = (
    "mutation($id: ID!, $oid: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id,"
    " expectedHeadOid: $oid}) { mergeQueueEntry { id position state } } }"
)
DEQUEUE = "mutation($id: ID!) { dequeuePullRequest(input: {id: $id}) { mergeQueueEntry { id } } }"


def first_error(failed: pytest.ExceptionInfo[GraphQLFailed]) -> str:
    errors = failed.value.response.errors
    assert errors
    return errors[0].message


def hooks(receiver: Receiver, event: str, action: str | None = None) -> list[dict[str, Any]]:
    return [
        r.payload
        for r in receiver.received
        if r.event == event and (action is None or r.payload.get("action") == action)
    ]


def queued_repo(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path, *contexts: str
) -> tuple[int, str, str]:
    """A repository whose main requires the queue and `contexts`, and a pull request
    whose own checks passed; its number, head sha and node id."""
    make_repo(admin, ci={"command": CI})
    add_ruleset(sandbox, QUEUE, checks_rule(*contexts))
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    settle(admin)
    gh = installation_client(sandbox)
    for context in contexts:
        if context != "ci":
            gh.rest.checks.create(
                "octo",
                "demo",
                name=context,
                head_sha=head,
                status="completed",
                conclusion="success",
            )
    pull = gh.rest.pulls.get("octo", "demo", number).parsed_data
    assert pull.mergeable_state == "clean"  # its rules are met; the queue does not block
    return number, head, pull.node_id


def state(admin: httpx.Client) -> dict[str, Any]:
    result: dict[str, Any] = admin.get("/_sandbox/repos/octo/demo/state").json()
    return result


def test_a_pull_request_lands_through_the_queue_with_the_apps_check_on_the_group(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    number, head, node = queued_repo(sandbox, admin, tmp_path, "ci", "ballet")
    base = state(admin)["branches"]["main"]
    gh = installation_client(sandbox)
    entry = gh.graphql(ENQUEUE, {"id": node, "oid": head})["enqueuePullRequest"]
    assert entry["mergeQueueEntry"]["state"] == "AWAITING_CHECKS"
    settle(admin)
    (requested,) = hooks(receiver, "merge_group", "checks_requested")
    group = requested["merge_group"]
    assert group["head_ref"] == f"refs/heads/gh-readonly-queue/main/pr-{number}-{head}"
    assert (group["base_ref"], group["base_sha"]) == ("refs/heads/main", base)
    parse_obj("merge_group", requested)
    parse_obj("pull_request", hooks(receiver, "pull_request", "enqueued")[0])
    ci = gh.rest.checks.list_for_ref("octo", "demo", group["head_sha"]).parsed_data
    assert [(r.name, r.conclusion) for r in ci.check_runs] == [("ci", "success")]
    assert state(admin)["pulls"][0]["merged"] is False  # "ballet" is yet to pass on the group

    gh.rest.checks.create(
        "octo",
        "demo",
        name="ballet",
        head_sha=group["head_sha"],
        status="completed",
        conclusion="success",
    )
    settle(admin)
    (destroyed,) = hooks(receiver, "merge_group", "destroyed")
    assert destroyed["reason"] == "merged"
    parse_obj("merge_group", destroyed)
    closed = hooks(receiver, "pull_request", "closed")[-1]["pull_request"]
    assert (closed["merged"], closed["merged_by"]["login"]) == (True, "github-merge-queue[bot]")
    after = state(admin)
    assert after["branches"]["main"] == group["head_sha"] == closed["merge_commit_sha"]
    assert not [b for b in after["branches"] if b.startswith("gh-readonly-queue/")]
    parents = gh.rest.git.get_commit("octo", "demo", group["head_sha"]).parsed_data.parents
    assert [p.sha for p in parents] == [base, head]


def test_a_group_whose_ci_fails_is_destroyed_and_its_pull_request_dequeued(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    number, head, node = queued_repo(sandbox, admin, tmp_path, "ci")
    url = authed_url(sandbox, "sandbox-user:octo")
    broken = push_branch(tmp_path, url, "main", {"breaks.txt": "x\n"})
    settle(admin)
    gh = installation_client(sandbox)
    gh.graphql(ENQUEUE, {"id": node, "oid": head})
    settle(admin)
    (requested,) = hooks(receiver, "merge_group", "checks_requested")
    group_sha = requested["merge_group"]["head_sha"]
    (run,) = gh.rest.checks.list_for_ref("octo", "demo", group_sha).parsed_data.check_runs
    assert (run.name, run.conclusion) == ("ci", "failure")
    notes = gh.rest.checks.list_annotations("octo", "demo", run.id).parsed_data
    assert [(a.path, a.message) for a in notes] == [("breaks.txt", "it broke")]
    (destroyed,) = hooks(receiver, "merge_group", "destroyed")
    assert destroyed["reason"] == "dequeued"
    (dequeued,) = hooks(receiver, "pull_request", "dequeued")
    assert (dequeued["number"], dequeued["reason"]) == (number, "CI_FAILURE")
    parse_obj("pull_request", dequeued)
    after = state(admin)
    assert after["branches"]["main"] == broken
    assert after["pulls"][0]["merged"] is False
    assert not [b for b in after["branches"] if b.startswith("gh-readonly-queue/")]


def test_dequeue_and_refusals(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    number, head, node = queued_repo(sandbox, admin, tmp_path, "ci", "ballet")
    gh = installation_client(sandbox)
    with pytest.raises(GraphQLFailed) as moved:
        gh.graphql(ENQUEUE, {"id": node, "oid": "0" * 40})
    assert "expectedHeadOid" in first_error(moved)
    with pytest.raises(GraphQLFailed) as not_queued:
        gh.graphql(DEQUEUE, {"id": node})
    assert "not in the merge queue" in first_error(not_queued)
    gh.graphql(ENQUEUE, {"id": node, "oid": head})
    settle(admin)
    gh.graphql(DEQUEUE, {"id": node})
    settle(admin)
    (destroyed,) = hooks(receiver, "merge_group", "destroyed")
    assert destroyed["reason"] == "dequeued"
    (dequeued,) = hooks(receiver, "pull_request", "dequeued")
    assert (dequeued["number"], dequeued["reason"]) == (number, "MANUAL")
    assert state(admin)["pulls"][0]["merged"] is False


def test_enqueue_needs_a_queue_and_the_other_rules_met(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    gh = installation_client(sandbox)
    node = gh.rest.pulls.get("octo", "demo", number).parsed_data.node_id
    with pytest.raises(GraphQLFailed) as no_queue:
        gh.graphql(ENQUEUE, {"id": node, "oid": head})
    assert "Merge queue is not enabled" in first_error(no_queue)
    add_ruleset(sandbox, QUEUE, checks_rule("lint"))
    with pytest.raises(GraphQLFailed) as unmet:
        gh.graphql(ENQUEUE, {"id": node, "oid": head})
    assert 'Required status check "lint" is expected.' in first_error(unmet)


def test_the_second_pull_request_is_grouped_on_the_first_ones_merge(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    first, first_head, first_node = queued_repo(sandbox, admin, tmp_path, "ci", "ballet")
    url = authed_url(sandbox, "sandbox-user:writer")
    second_head = push_branch(tmp_path, url, "second", {"second.txt": "2\n"})
    gh = installation_client(sandbox)
    second = gh.rest.pulls.create("octo", "demo", title="2", head="second", base="main")
    settle(admin)

    def ballet_passes(sha: str) -> None:
        gh.rest.checks.create(
            "octo", "demo", name="ballet", head_sha=sha, status="completed", conclusion="success"
        )

    ballet_passes(second_head)
    gh.graphql(ENQUEUE, {"id": first_node, "oid": first_head})
    queued = gh.graphql(ENQUEUE, {"id": second.parsed_data.node_id, "oid": second_head})
    assert queued["enqueuePullRequest"]["mergeQueueEntry"] == {
        **queued["enqueuePullRequest"]["mergeQueueEntry"],
        "position": 2,
        "state": "QUEUED",  # no group of its own while the first's is under way
    }
    settle(admin)
    assert len(hooks(receiver, "merge_group", "checks_requested")) == 1
    for n in range(2):  # the App's check on each group's commit in turn
        group = hooks(receiver, "merge_group", "checks_requested")[n]["merge_group"]
        ballet_passes(group["head_sha"])
        settle(admin)
    groups = [p["merge_group"] for p in hooks(receiver, "merge_group", "checks_requested")]
    assert [g["head_ref"].rsplit("/", 1)[-1] for g in groups] == [
        f"pr-{first}-{first_head}",
        f"pr-{second.parsed_data.number}-{second_head}",
    ]
    assert groups[1]["base_sha"] == groups[0]["head_sha"]
    destroyed = [p["reason"] for p in hooks(receiver, "merge_group", "destroyed")]
    assert destroyed == ["merged", "merged"]
    after = state(admin)
    assert after["branches"]["main"] == groups[1]["head_sha"]
    assert [p["merged"] for p in after["pulls"]] == [True, True]
