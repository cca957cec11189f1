"""The sandbox's rulesets, branch rules and merge-group webhooks validated against GitHub's
OpenAPI description itself (JSON Schema, OpenAPI 3.0 dialect): a missing required
field, a wrong type or an enum value GitHub does not send fails here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from ballet.sandbox.server import BackgroundSandbox
from openapi_schema_validator import OAS30Validator
from schema_walk import Spec

R = "/repos/{owner}/{repo}"
OWNER = {"authorization": "token sandbox-user:octo"}
RULES: list[dict[str, Any]] = [
    {
        "type": "merge_queue",
        "parameters": {
            "check_response_timeout_minutes": 60,
            "grouping_strategy": "ALLGREEN",
            "max_entries_to_build": 5,
            "max_entries_to_merge": 5,
            "merge_method": "SQUASH",
            "min_entries_to_merge": 1,
            "min_entries_to_merge_wait_minutes": 5,
        },
    },
    {
        "type": "pull_request",
        "parameters": {
            "dismiss_stale_reviews_on_push": True,
            "require_code_owner_review": False,
            "require_last_push_approval": False,
            "required_approving_review_count": 1,
            "required_review_thread_resolution": False,
        },
    },
    {
        "type": "required_status_checks",
        "parameters": {
            "required_status_checks": [{"context": "ci"}],
            "strict_required_status_checks_policy": False,
        },
    },
    {"type": "required_linear_history"},
]


def problems(spec: Spec, schema: dict[str, Any], instance: Any) -> list[str]:
    # The whole description as the root, so the schema's own $refs resolve.
    root = {**spec.doc, **schema}
    return [
        f"{list(e.absolute_path)}: {e.message}" for e in OAS30Validator(root).iter_errors(instance)
    ]


def response_ref(method: str, path: str, status: str) -> dict[str, Any]:
    pointer = path.replace("~", "~0").replace("/", "~1")
    return {
        "$ref": f"#/paths/{pointer}/{method}/responses/{status}/content/application~1json/schema"
    }


def webhook_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/x-webhooks/{name}/post/requestBody/content/application~1json/schema"}


def test_rulesets_and_branch_rules_match_the_description(github_spec: Spec, tmp_path: Path) -> None:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        api = httpx.Client(base_url=running.api_url, headers=OWNER, timeout=30)
        made = api.post(
            "/_sandbox/repos",
            json={"owner": "octo", "name": "demo", "files": {"a.txt": "a\n"}},
        )
        assert made.status_code == 201, made.text
        body = {
            "name": "main",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
            "rules": RULES,
        }
        created = api.post("/repos/octo/demo/rulesets", json=body)
        ruleset_id = created.json()["id"]
        answers = [
            (response_ref("post", f"{R}/rulesets", "201"), created),
            (response_ref("get", f"{R}/rulesets", "200"), api.get("/repos/octo/demo/rulesets")),
            (
                response_ref("get", f"{R}/rulesets/{{ruleset_id}}", "200"),
                api.get(f"/repos/octo/demo/rulesets/{ruleset_id}"),
            ),
            (
                response_ref("get", f"{R}/rules/branches/{{branch}}", "200"),
                api.get("/repos/octo/demo/rules/branches/main"),
            ),
        ]
        found: list[str] = []
        for ref, answer in answers:
            assert answer.status_code in (200, 201), answer.text
            assert answer.json(), f"{ref}: nothing to check"
            found += [f"{ref['$ref']} {p}" for p in problems(github_spec, ref, answer.json())]
        assert len(answers[3][1].json()) == len(RULES)
        # The check can fail: a rule without its ruleset's id type, a ruleset without a name.
        assert problems(github_spec, answers[3][0], [{"type": "merge_queue", "ruleset_id": "1"}])
        assert problems(github_spec, answers[0][0], {"id": 1})
        assert found == []


def test_merge_group_webhooks_match_the_description(github_spec: Spec, tmp_path: Path) -> None:
    """A pull request through a queue with no required checks: requested, then merged."""
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        api = httpx.Client(base_url=running.api_url, headers=OWNER, timeout=30)
        made = api.post("/_sandbox/repos", json={"owner": "octo", "name": "demo"})
        base = made.json()["head_sha"]
        tree = api.get(f"/repos/octo/demo/git/commits/{base}").json()["tree"]["sha"]
        commit = api.post(
            "/repos/octo/demo/git/commits", json={"message": "m", "tree": tree, "parents": [base]}
        ).json()["sha"]
        api.post("/repos/octo/demo/git/refs", json={"ref": "refs/heads/topic", "sha": commit})
        body: dict[str, Any] = {"name": "queue", "enforcement": "active", "rules": [RULES[0]]}
        body["conditions"] = {"ref_name": {"include": ["refs/heads/main"], "exclude": []}}
        assert api.post("/repos/octo/demo/rulesets", json=body).status_code == 201
        pr = api.post(
            "/repos/octo/demo/pulls", json={"title": "t", "head": "topic", "base": "main"}
        )
        query = (
            "mutation($id: ID!) { enqueuePullRequest(input: {pullRequestId: $id})"
            " { clientMutationId } }"
        )
        queued = api.post(
            "/graphql", json={"query": query, "variables": {"id": pr.json()["node_id"]}}
        )
        assert "errors" not in queued.json(), queued.text
        api.post("/_sandbox/settle")
        payloads = [
            (d["event"], api.get(f"/_sandbox/deliveries/{d['id']}").json()["payload"])
            for d in api.get("/_sandbox/deliveries").json()
        ]
    found: list[str] = []
    names = []
    for event, payload in payloads:
        action = payload.get("action")
        if event == "merge_group" or action in ("enqueued", "dequeued"):
            name = f"{event.replace('_', '-')}-{action.replace('_', '-')}"
            names.append(name)
            found += [f"{name} {p}" for p in problems(github_spec, webhook_ref(name), payload)]
    assert names == [
        "pull-request-enqueued",
        "merge-group-checks-requested",
        "merge-group-destroyed",
    ]
    assert found == []
    assert problems(github_spec, webhook_ref("merge-group-destroyed"), {"action": "destroyed"})
