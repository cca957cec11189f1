"""The sandbox's `GET /repos/{owner}/{repo}/compare/{basehead}` validated against GitHub's
OpenAPI description itself (JSON Schema, OpenAPI 3.0 dialect): a head that diverged from
its base, with its commits and files."""

from __future__ import annotations

from pathlib import Path

import httpx
from ballet.sandbox.server import BackgroundSandbox
from schema_walk import Spec
from test_sandbox_rules_vs_openapi import OWNER, R, problems, response_ref


def test_compare_matches_the_description(github_spec: Spec, tmp_path: Path) -> None:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        api = httpx.Client(base_url=running.api_url, headers=OWNER, timeout=30)
        made = api.post("/_sandbox/repos", json={"owner": "octo", "name": "demo"}).json()
        base = made["head_sha"]
        tree = api.get(f"/repos/octo/demo/git/commits/{base}").json()["tree"]["sha"]
        for branch, message in (("topic", "t"), ("main", "m")):
            commit = api.post(
                "/repos/octo/demo/git/commits",
                json={"message": message, "tree": tree, "parents": [base]},
            ).json()["sha"]
            name = f"heads/{branch}"
            if api.get(f"/repos/octo/demo/git/ref/{name}").status_code == 200:
                api.patch(f"/repos/octo/demo/git/refs/{name}", json={"sha": commit})
            else:
                api.post("/repos/octo/demo/git/refs", json={"ref": f"refs/{name}", "sha": commit})
        compared = api.get("/repos/octo/demo/compare/main...topic")
    assert compared.status_code == 200, compared.text
    shape = compared.json()
    assert (shape["status"], shape["ahead_by"], shape["behind_by"]) == ("diverged", 1, 1)
    ref = response_ref("get", f"{R}/compare/{{basehead}}", "200")
    # A commit's `author` and `committer` are `nullable` beside a `oneOf` (null where the
    # email is nobody's on GitHub, as in the sandbox); the OAS 3.0 validator honours
    # `nullable` only beside a `type`, so that null alone is let through.
    unlinked = ("'author']: None is not valid", "'committer']: None is not valid")
    found = [p for p in problems(github_spec, ref, shape) if not any(u in p for u in unlinked)]
    assert found == []
    # The check can fail: a status GitHub never sends, a comparison without its counts.
    assert problems(github_spec, ref, {**shape, "status": "apart"})
    assert problems(github_spec, ref, {k: v for k, v in shape.items() if k != "behind_by"})
