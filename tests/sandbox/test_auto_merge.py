"""GitHub's auto-merge on the sandbox: turned on with GraphQL where the repository allows
it and something holds the pull request back, refused with GitHub's words elsewhere,
merged by the sandbox as its enabler once the base's rules let it, and turned off by a
conflict or by `disablePullRequestAutoMerge`; a writer's push leaves it on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import GraphQLFailed

from .conftest import (
    Receiver,
    authed_url,
    installation_client,
    make_repo,
    push_branch,
    settle,
    user_client,
)
from .test_merge_queue import first_error, hooks
from .test_rulesets import add_ruleset, checks_rule, open_pull

ENABLE = (
    "mutation($id: ID!, $oid: GitObjectID, $method: PullRequestMergeMethod) {"
    " enablePullRequestAutoMerge(input: {pullRequestId: $id, expectedHeadOid: $oid,"
    " mergeMethod: $method}) { pullRequest { autoMergeRequest { mergeMethod } } } }"
)
DISABLE = (
    "mutation($id: ID!) { disablePullRequestAutoMerge(input: {pullRequestId: $id})"
    " { pullRequest { number } } }"
)


def enable(sandbox: BackgroundSandbox, node_id: str, head: str) -> Any:
    gh = installation_client(sandbox)
    return gh.graphql(ENABLE, {"id": node_id, "oid": head, "method": "SQUASH"})


def refused(sandbox: BackgroundSandbox, node_id: str, head: str) -> str:
    with pytest.raises(GraphQLFailed) as failed:
        enable(sandbox, node_id, head)
    return first_error(failed)


def allow_auto_merge(sandbox: BackgroundSandbox) -> None:
    owner = user_client(sandbox, "octo")
    updated = owner.rest.repos.update("octo", "demo", allow_auto_merge=True).parsed_data
    assert updated.allow_auto_merge is True


def ci_passes(sandbox: BackgroundSandbox, sha: str) -> None:
    gh = installation_client(sandbox)
    gh.rest.checks.create(
        "octo", "demo", name="ci", head_sha=sha, status="completed", conclusion="success"
    )


def pull(sandbox: BackgroundSandbox, number: int) -> Any:
    gh = installation_client(sandbox)  # kept while its namespace is used
    return gh.rest.pulls.get("octo", "demo", number).parsed_data


def test_auto_merge_is_refused_as_github_refuses_it_then_merges_once_checks_pass(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin)
    add_ruleset(sandbox, checks_rule("ci"))
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    node_id = pull(sandbox, number).node_id
    assert refused(sandbox, node_id, head) == (
        "Pull request Auto merge is not allowed for this repository"
    )
    allow_auto_merge(sandbox)
    assert "not the expectedHeadOid" in refused(sandbox, node_id, "0" * 40)

    answer = enable(sandbox, node_id, head)
    request = answer["enablePullRequestAutoMerge"]["pullRequest"]["autoMergeRequest"]
    assert (request["mergeMethod"], request["enabledBy"]) == ("SQUASH", {"login": "ballet[bot]"})
    held = pull(sandbox, number)
    assert held.auto_merge is not None and not held.merged
    assert (held.auto_merge.enabled_by.login, held.auto_merge.merge_method) == (
        "ballet[bot]",
        "squash",
    )
    assert held.auto_merge.commit_title == f"t (#{number})"
    settle(admin)
    (enabled,) = hooks(receiver, "pull_request", "auto_merge_enabled")
    assert enabled["pull_request"]["auto_merge"]["merge_method"] == "squash"

    ci_passes(sandbox, head)
    settle(admin)
    merged = pull(sandbox, number)
    assert merged.merged and merged.merged_by is not None
    assert merged.merged_by.login == "ballet[bot]"  # as the one who enabled it
    assert merged.auto_merge is None
    (closed,) = hooks(receiver, "pull_request", "closed")
    assert closed["pull_request"]["merged"] is True


def test_a_pull_request_that_could_merge_now_is_in_clean_status(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    add_ruleset(sandbox, checks_rule("ci"))
    allow_auto_merge(sandbox)
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    ci_passes(sandbox, head)
    assert refused(sandbox, pull(sandbox, number).node_id, head) == (
        "Pull request Pull request is in clean status"
    )


def test_a_writers_push_keeps_auto_merge_and_the_new_head_merges(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    """What Ballet guards against: GitHub merges a head nobody approved once its checks pass."""
    make_repo(admin)
    add_ruleset(sandbox, checks_rule("ci"))
    allow_auto_merge(sandbox)
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    enable(sandbox, pull(sandbox, number).node_id, head)
    url = authed_url(sandbox, "sandbox-user:writer")
    pushed = push_branch(tmp_path, url, "topic", {"more.txt": "more\n"}, start="topic")
    settle(admin)
    assert pull(sandbox, number).auto_merge is not None
    assert hooks(receiver, "pull_request", "auto_merge_disabled") == []
    ci_passes(sandbox, pushed)
    settle(admin)
    merged = pull(sandbox, number)
    assert merged.merged and merged.head.sha == pushed


def test_a_conflict_and_the_disable_mutation_turn_auto_merge_off(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin)
    add_ruleset(sandbox, checks_rule("ci"))
    allow_auto_merge(sandbox)
    number, head = open_pull(sandbox, tmp_path, {"README.md": "# topic\n"})
    node_id = pull(sandbox, number).node_id
    enable(sandbox, node_id, head)
    gh = installation_client(sandbox)
    gh.graphql(DISABLE, {"id": node_id})
    settle(admin)
    assert pull(sandbox, number).auto_merge is None
    (manual,) = hooks(receiver, "pull_request", "auto_merge_disabled")
    assert manual["reason"] == "Auto-merge was disabled by ballet[bot]"
    with pytest.raises(GraphQLFailed) as failed:
        gh.graphql(DISABLE, {"id": node_id})
    assert "not enabled" in first_error(failed)

    enable(sandbox, node_id, head)
    url = authed_url(sandbox, "sandbox-user:writer")
    push_branch(tmp_path, url, "main", {"README.md": "# main\n"})
    settle(admin)
    assert pull(sandbox, number).auto_merge is None
    conflict = hooks(receiver, "pull_request", "auto_merge_disabled")[-1]
    assert conflict["reason"] == "Merge conflict with the base branch"
    assert not pull(sandbox, number).merged
