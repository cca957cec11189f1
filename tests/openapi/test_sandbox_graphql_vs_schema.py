"""Ballet's GraphQL mutations and the sandbox's answers to them checked against GitHub's
published GraphQL schema (`graphql_schema.py`): each query Ballet sends validates
(names, argument types, enum values), and each answer the sandbox gives executes as
that query's result (every field the query selects, of GitHub's type)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.github.auto_merge import DISABLE, ENABLE
from ballet.github.merge_queue import ENQUEUE
from ballet.sandbox.server import BackgroundSandbox
from graphql import GraphQLSchema, execute_sync, parse, validate
from graphql_schema import github_graphql_schema
from test_sandbox_rules_vs_openapi import OWNER, RULES

READY = (
    "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id})"
    " { pullRequest { isDraft } } }"
)
# What the sandbox's answers are read as: every field it gives that a client may select.
ENABLED = (
    "mutation($id: ID!, $oid: GitObjectID) { enablePullRequestAutoMerge(input:"
    " {pullRequestId: $id, expectedHeadOid: $oid, mergeMethod: SQUASH}) { pullRequest"
    " { id number autoMergeRequest { enabledAt mergeMethod commitHeadline commitBody } } } }"
)
DISABLED = (
    "mutation($id: ID!) { disablePullRequestAutoMerge(input: {pullRequestId: $id})"
    " { pullRequest { id number autoMergeRequest { mergeMethod } } } }"
)
QUEUED = (
    "mutation($id: ID!) { enqueuePullRequest(input: {pullRequestId: $id}) { mergeQueueEntry"
    " { id position state enqueuedAt headCommit { oid } pullRequest { id number } } } }"
)


@pytest.fixture(scope="module")
def schema() -> GraphQLSchema:
    return github_graphql_schema()


def problems(schema: GraphQLSchema, query: str) -> list[str]:
    return [error.message for error in validate(schema, parse(query))]


def test_ballets_mutations_are_githubs(schema: GraphQLSchema) -> None:
    for query in (ENABLE, DISABLE, ENQUEUE, READY, ENABLED, DISABLED, QUEUED):
        assert problems(schema, query) == [], query
    # The check can fail: a merge method GitHub has no value for, a field it lacks.
    assert problems(schema, ENABLED.replace("SQUASH", "SQASH"))
    assert problems(schema, DISABLED.replace("mergeMethod", "method"))


def answered_as(schema: GraphQLSchema, query: str, data: dict[str, Any]) -> list[str]:
    """Execute `query` with the sandbox's `data` as what GitHub resolved: every field it
    selects must be in `data`, as GitHub's type serializes it, with no errors."""
    given = {"id": "PR_1", "oid": "0" * 40}  # the variables it was asked with
    result = execute_sync(schema, parse(query), root_value=data, variable_values=given)
    errors = [error.message for error in result.errors or ()]
    return errors or [f"{path}: not in the answer" for path in _missing(result.data, data)]


def _missing(selected: Any, given: Any, path: str = "") -> list[str]:
    """Where what the query selected differs from what the sandbox gave (it gives
    every field it has, selected or not)."""
    if isinstance(selected, dict):
        if not isinstance(given, dict):
            return [path]
        return [
            p
            for key, value in selected.items()
            for p in (
                _missing(value, given[key], f"{path}.{key}") if key in given else [f"{path}.{key}"]
            )
        ]
    return [] if selected == given else [path]


def test_the_sandboxs_answers_are_githubs(schema: GraphQLSchema, tmp_path: Path) -> None:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        api = httpx.Client(base_url=running.api_url, headers=OWNER, timeout=30)
        base = api.post("/_sandbox/repos", json={"owner": "octo", "name": "demo"}).json()
        tree = api.get(f"/repos/octo/demo/git/commits/{base['head_sha']}").json()["tree"]["sha"]
        commit = api.post(
            "/repos/octo/demo/git/commits",
            json={"message": "m", "tree": tree, "parents": [base["head_sha"]]},
        ).json()["sha"]
        api.post("/repos/octo/demo/git/refs", json={"ref": "refs/heads/topic", "sha": commit})
        ruleset: dict[str, Any] = {"name": "ci", "enforcement": "active", "rules": [RULES[2]]}
        ruleset["conditions"] = {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}}
        assert api.post("/repos/octo/demo/rulesets", json=ruleset).status_code == 201
        api.patch("/repos/octo/demo", json={"allow_auto_merge": True})
        opened = {"title": "t", "head": "topic", "base": "main"}
        node_id = api.post("/repos/octo/demo/pulls", json=opened).json()["node_id"]

        def ask(query: str, **variables: str) -> dict[str, Any]:
            answer = api.post("/graphql", json={"query": query, "variables": variables})
            body: dict[str, Any] = answer.json()
            assert "errors" not in body, body
            data: dict[str, Any] = body["data"]
            return data

        enabled = ask(ENABLED, id=node_id, oid=commit)
        disabled = ask(DISABLED, id=node_id)
        status = {"state": "success", "context": "ci"}  # what the queue requires first
        assert api.post(f"/repos/octo/demo/statuses/{commit}", json=status).status_code == 201
        queue = {**ruleset, "name": "queue", "rules": [RULES[0]]}
        assert api.post("/repos/octo/demo/rulesets", json=queue).status_code == 201
        queued = ask(QUEUED, id=node_id)
    found = [
        f"{name}: {p}"
        for name, query, data in (
            ("enable", ENABLED, enabled),
            ("disable", DISABLED, disabled),
            ("enqueue", QUEUED, queued),
        )
        for p in answered_as(schema, query, data)
    ]
    assert found == []
    request = enabled["enablePullRequestAutoMerge"]["pullRequest"]["autoMergeRequest"]
    assert request["mergeMethod"] == "SQUASH"
    # The check can fail: a merge method GitHub's enum does not have.
    wrong = {"enablePullRequestAutoMerge": {"pullRequest": {"autoMergeRequest": {}}}}
    wrong["enablePullRequestAutoMerge"]["pullRequest"]["autoMergeRequest"] = {
        **request,
        "mergeMethod": "squash",
    }
    assert answered_as(schema, ENABLED, wrong)
