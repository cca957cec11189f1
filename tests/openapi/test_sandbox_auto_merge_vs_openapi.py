"""The sandbox's auto-merge shapes validated against GitHub's OpenAPI description: the
repository's `allow_auto_merge`, the pull request's `auto_merge` object, and the
`pull_request` webhooks `auto_merge_enabled` and `auto_merge_disabled` (with its
`reason`). The GraphQL mutations are not in the OpenAPI description."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from ballet.sandbox.server import BackgroundSandbox
from schema_walk import Spec
from test_sandbox_rules_vs_openapi import OWNER, R, problems, response_ref, webhook_ref

CHECKS = {
    "type": "required_status_checks",
    "parameters": {
        "required_status_checks": [{"context": "ci"}],
        "strict_required_status_checks_policy": False,
    },
}


def test_auto_merge_shapes_and_webhooks_match_the_description(
    github_spec: Spec, tmp_path: Path
) -> None:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        api = httpx.Client(base_url=running.api_url, headers=OWNER, timeout=30)
        base = api.post("/_sandbox/repos", json={"owner": "octo", "name": "demo"}).json()
        tree = api.get(f"/repos/octo/demo/git/commits/{base['head_sha']}").json()["tree"]["sha"]
        commit = api.post(
            "/repos/octo/demo/git/commits",
            json={"message": "m", "tree": tree, "parents": [base["head_sha"]]},
        ).json()["sha"]
        api.post("/repos/octo/demo/git/refs", json={"ref": "refs/heads/topic", "sha": commit})
        ruleset: dict[str, Any] = {"name": "ci", "enforcement": "active", "rules": [CHECKS]}
        ruleset["conditions"] = {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}}
        assert api.post("/repos/octo/demo/rulesets", json=ruleset).status_code == 201
        settings = api.patch("/repos/octo/demo", json={"allow_auto_merge": True})
        opened = {"title": "t", "head": "topic", "base": "main"}
        pr = api.post("/repos/octo/demo/pulls", json=opened)
        query = (
            "mutation($id: ID!) { enablePullRequestAutoMerge(input: {pullRequestId: $id,"
            " mergeMethod: MERGE}) { clientMutationId } }"
        )
        variables = {"id": pr.json()["node_id"]}
        enabled = api.post("/graphql", json={"query": query, "variables": variables})
        assert "errors" not in enabled.json(), enabled.text
        held = api.get(f"/repos/octo/demo/pulls/{pr.json()['number']}")
        disable = query.replace("enable", "disable").replace(", mergeMethod: MERGE", "")
        disabled = api.post("/graphql", json={"query": disable, "variables": variables})
        assert "errors" not in disabled.json(), disabled.text
        api.post("/_sandbox/settle")
        payloads = [
            api.get(f"/_sandbox/deliveries/{d['id']}").json()["payload"]
            for d in api.get("/_sandbox/deliveries").json()
            if d["event"] == "pull_request"
        ]
    assert settings.json()["allow_auto_merge"] is True
    assert held.json()["auto_merge"]["merge_method"] == "merge"
    found = [
        f"{ref['$ref']} {p}"
        for ref, answer in (
            (response_ref("patch", R, "200"), settings.json()),
            (response_ref("get", f"{R}/pulls/{{pull_number}}", "200"), held.json()),
        )
        for p in problems(github_spec, ref, answer)
    ]
    names = []
    for payload in payloads:
        action = payload["action"]
        if action.startswith("auto_merge"):
            name = f"pull-request-{action.replace('_', '-')}"
            names.append(name)
            found += [f"{name} {p}" for p in problems(github_spec, webhook_ref(name), payload)]
    assert names == ["pull-request-auto-merge-enabled", "pull-request-auto-merge-disabled"]
    assert found == []
    # The check can fail: an auto_merge without who enabled it, a disabled without reason.
    bad = {**held.json(), "auto_merge": {"merge_method": "merge"}}
    assert problems(github_spec, response_ref("get", f"{R}/pulls/{{pull_number}}", "200"), bad)
    without_reason = {k: v for k, v in payloads[-1].items() if k != "reason"}
    assert problems(github_spec, webhook_ref("pull-request-auto-merge-disabled"), without_reason)
