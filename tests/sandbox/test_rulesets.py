"""Repository rulesets as GitHub has them: created by admins, read by anyone who can read
the repository, each rule refusing a direct merge with GitHub's 405 and words.

Shapes are checked by githubkit's models, generated from GitHub's OpenAPI description:
reading `parsed_data` validates the body.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed
from githubkit_schemas.latest.models import RepositoryRuleset

from .conftest import authed_url, installation_client, make_repo, push_branch, user_client

QUEUE = {
    "type": "merge_queue",
    "parameters": {
        "check_response_timeout_minutes": 60,
        "grouping_strategy": "ALLGREEN",
        "max_entries_to_build": 5,
        "max_entries_to_merge": 5,
        "merge_method": "MERGE",
        "min_entries_to_merge": 1,
        "min_entries_to_merge_wait_minutes": 5,
    },
}


def review_rule(count: int) -> dict[str, Any]:
    return {
        "type": "pull_request",
        "parameters": {
            "dismiss_stale_reviews_on_push": False,
            "require_code_owner_review": False,
            "require_last_push_approval": False,
            "required_approving_review_count": count,
            "required_review_thread_resolution": False,
        },
    }


def checks_rule(*contexts: str, strict: bool = False) -> dict[str, Any]:
    return {
        "type": "required_status_checks",
        "parameters": {
            "required_status_checks": [{"context": c} for c in contexts],
            "strict_required_status_checks_policy": strict,
        },
    }


def add_ruleset(sandbox: BackgroundSandbox, *rules: dict[str, Any], name: str = "main") -> int:
    """A ruleset on the default branch, made by the repository's owner (an admin)."""
    owner = user_client(sandbox, "octo")
    body: Any = {
        "name": name,
        "enforcement": "active",
        "target": "branch",
        "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
        "rules": list(rules),
    }
    made = owner.rest.repos.create_repo_ruleset("octo", "demo", data=body)
    assert made.status_code == 201
    return int(made.parsed_data.id)


def open_pull(sandbox: BackgroundSandbox, tmp_path: Path, files: dict[str, str]) -> tuple[int, str]:
    head = push_branch(tmp_path, authed_url(sandbox, "sandbox-user:writer"), "topic", files)
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    return pr.number, head


def refusal(
    sandbox: BackgroundSandbox,
    number: int,
    method: Literal["merge", "squash", "rebase"] = "merge",
) -> str:
    gh = installation_client(sandbox)
    with pytest.raises(RequestFailed) as refused:
        gh.rest.pulls.merge("octo", "demo", number, merge_method=method)
    assert refused.value.response.status_code == 405
    message: str = refused.value.response.json()["message"]
    return message


def test_rulesets_are_created_by_admins_and_read_as_github_shapes_them(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    ruleset_id = add_ruleset(sandbox, QUEUE, checks_rule("ci"), {"type": "required_linear_history"})
    reader = user_client(sandbox, "reader")
    listed = reader.rest.repos.get_repo_rulesets("octo", "demo").parsed_data
    assert [(r.id, r.name, r.enforcement) for r in listed] == [(ruleset_id, "main", "active")]
    whole = reader.rest.repos.get_repo_ruleset("octo", "demo", ruleset_id).parsed_data
    assert isinstance(whole, RepositoryRuleset)
    assert [rule.type for rule in whole.rules or []] == [
        "merge_queue",
        "required_status_checks",
        "required_linear_history",
    ]
    app = installation_client(sandbox)
    on_main = app.rest.repos.get_branch_rules("octo", "demo", "main")
    rules = on_main.parsed_data
    assert [(r.type, r.ruleset_id, r.ruleset_source) for r in rules] == [
        ("merge_queue", ruleset_id, "octo/demo"),
        ("required_status_checks", ruleset_id, "octo/demo"),
        ("required_linear_history", ruleset_id, "octo/demo"),
    ]
    assert rules[0].parameters.merge_method == "MERGE"  # type: ignore[union-attr]
    other = reader.rest.repos.get_branch_rules("octo", "demo", "feature/x").parsed_data
    assert other == []


def test_rulesets_refuse_writers_and_rules_not_modelled(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    body = {"name": "r", "enforcement": "active", "rules": [QUEUE]}
    writer = admin.post(
        "/repos/octo/demo/rulesets",
        json=body,
        headers={"authorization": "token sandbox-user:writer"},
    )
    assert writer.status_code == 403
    owner = {"authorization": "token sandbox-user:octo"}
    unknown = {**body, "rules": [{"type": "non_fast_forward"}]}
    refused = admin.post("/repos/octo/demo/rulesets", json=unknown, headers=owner)
    assert refused.status_code == 422
    assert "models only these rule types: merge_queue" in refused.json()["message"]
    partial = {**body, "rules": [{"type": "merge_queue", "parameters": {"merge_method": "MERGE"}}]}
    missing = admin.post("/repos/octo/demo/rulesets", json=partial, headers=owner)
    assert missing.status_code == 422
    assert "/rules/0" in missing.json()["message"]
    assert admin.get("/repos/octo/demo/rulesets", headers=owner).json() == []


def test_a_required_merge_queue_refuses_a_direct_merge(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    number, _ = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    add_ruleset(sandbox, QUEUE)
    message = refusal(sandbox, number)
    assert message == (
        "Repository rule violations found\n\nChanges must be made through the merge queue\n\n"
    )
    state = admin.get("/_sandbox/repos/octo/demo/state").json()
    assert state["pulls"][0]["merged"] is False


def test_required_reviews_count_only_approvals_of_people_with_write_access(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    number, _ = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    add_ruleset(sandbox, review_rule(1))
    app = installation_client(sandbox)
    assert app.rest.pulls.get("octo", "demo", number).parsed_data.mergeable_state == "blocked"
    needed = "At least 1 approving review is required by reviewers with write access."
    assert needed in refusal(sandbox, number)
    reader = user_client(sandbox, "reader")
    reader.rest.pulls.create_review("octo", "demo", number, event="APPROVE")
    assert needed in refusal(sandbox, number)
    triager = user_client(sandbox, "triager")
    triager.rest.pulls.create_review("octo", "demo", number, event="APPROVE")
    assert needed in refusal(sandbox, number)
    writer = user_client(sandbox, "writer")
    writer.rest.pulls.create_review("octo", "demo", number, event="APPROVE")
    assert app.rest.pulls.get("octo", "demo", number).parsed_data.mergeable_state == "clean"
    merged = app.rest.pulls.merge("octo", "demo", number)
    assert merged.parsed_data.merged is True


def test_required_checks_and_linear_history_refuse_until_met(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    add_ruleset(sandbox, checks_rule("lint"), {"type": "required_linear_history"})
    message = refusal(sandbox, number, "squash")
    assert 'Required status check "lint" is expected.' in message
    gh = installation_client(sandbox)
    run = gh.rest.checks.create(
        "octo", "demo", name="lint", head_sha=head, status="completed", conclusion="failure"
    ).parsed_data
    assert 'Required status check "lint" is failing.' in refusal(sandbox, number, "squash")
    gh.rest.checks.update("octo", "demo", run.id, conclusion="success")
    assert refusal(sandbox, number, "merge") == (
        "Repository rule violations found\n\nThis branch must not contain merge commits.\n\n"
    )
    squashed = gh.rest.pulls.merge("octo", "demo", number, merge_method="squash")
    assert squashed.parsed_data.merged is True


def test_strict_checks_refuse_a_branch_behind_its_base(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    push_branch(tmp_path, authed_url(sandbox, "sandbox-user:writer"), "main", {"other.txt": "x\n"})
    add_ruleset(sandbox, checks_rule("lint", strict=True))
    gh = installation_client(sandbox)
    gh.rest.repos.create_commit_status("octo", "demo", head, state="success", context="lint")
    assert "This branch is out-of-date with the base branch." in refusal(sandbox, number)
    assert gh.rest.pulls.get("octo", "demo", number).parsed_data.mergeable_state == "behind"
    assert gh.rest.pulls.update_branch("octo", "demo", number).status_code == 202
    updated = gh.rest.pulls.get("octo", "demo", number).parsed_data.head.sha
    gh.rest.repos.create_commit_status("octo", "demo", updated, state="success", context="lint")
    assert gh.rest.pulls.merge("octo", "demo", number).parsed_data.merged is True
