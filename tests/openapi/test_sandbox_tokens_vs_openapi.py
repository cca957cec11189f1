"""The sandbox's scoped installation tokens validated against GitHub's OpenAPI description:
the request body Ballet sends (githubkit builds it), the token GitHub answers with, the
422 for a repository the installation does not reach, and a scoped token's listing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import jwt
from ballet.sandbox.server import BackgroundSandbox
from openapi_schema_validator import OAS30Validator
from schema_walk import Spec

TOKENS = "/app/installations/{installation_id}/access_tokens"


def problems(spec: Spec, pointer: str, instance: Any) -> list[str]:
    root = {**spec.doc, "$ref": pointer}
    return [
        f"{list(e.absolute_path)}: {e.message}" for e in OAS30Validator(root).iter_errors(instance)
    ]


def _path(path: str) -> str:
    return path.replace("~", "~0").replace("/", "~1")


REQUEST = f"#/paths/{_path(TOKENS)}/post/requestBody/content/application~1json/schema"
MINTED = f"#/paths/{_path(TOKENS)}/post/responses/201/content/application~1json/schema"
REFUSED = "#/components/schemas/validation-error"
LISTED = "#/paths/~1installation~1repositories/get/responses/200/content/application~1json/schema"


def test_scoped_tokens_match_the_description(github_spec: Spec, tmp_path: Path) -> None:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        api = httpx.Client(base_url=running.api_url, timeout=30)
        for name in ("app", "lib"):
            assert api.post("/_sandbox/repos", json={"owner": "acme", "name": name}).is_success
        now = int(time.time())
        app = running.sandbox.app
        claims = {"iss": str(app.app_id), "iat": now, "exp": now + 300}
        bearer = {"Authorization": f"Bearer {jwt.encode(claims, app.private_key_pem, 'RS256')}"}
        installation = api.get("/repos/acme/app/installation", headers=bearer).json()["id"]
        url = TOKENS.replace("{installation_id}", str(installation))
        body = {"repositories": ["app", "lib"], "permissions": {"contents": "write"}}
        minted = api.post(url, json=body, headers=bearer)
        refused = api.post(url, json={"repositories": ["elsewhere"]}, headers=bearer)
        token = {"Authorization": f"token {minted.json()['token']}"}
        listed = api.get("/installation/repositories", headers=token)

        assert (minted.status_code, refused.status_code, listed.status_code) == (201, 422, 200)
        found = [
            *problems(github_spec, REQUEST, body),
            *problems(github_spec, MINTED, minted.json()),
            *problems(github_spec, REFUSED, refused.json()),
            *problems(github_spec, LISTED, listed.json()),
        ]
        assert found == []
        assert len(minted.json()["repositories"]) == 2
        # The check can fail: a permission GitHub does not know, a token without its expiry.
        assert problems(github_spec, REQUEST, {"permissions": {"contents": "all"}})
        assert problems(github_spec, MINTED, {"token": "ghs_x"})
