"""The App authenticates for real: JWTs are verified, installation tokens expire."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import jwt
from ballet.sandbox.server import BackgroundSandbox
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from githubkit_schemas.latest.models import Installation, InstallationToken

from .conftest import Receiver, app_client, make_repo


def _jwt(key: bytes, iss: int, iat: int, exp: int) -> str:
    return jwt.encode({"iss": str(iss), "iat": iat, "exp": exp}, key, algorithm="RS256")


def test_githubkit_app_finds_installation_and_mints_token(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    repo = make_repo(admin)
    gh = app_client(sandbox)
    installation = gh.rest.apps.get_repo_installation("octo", "demo").parsed_data
    assert isinstance(installation, Installation)
    assert installation.id == repo["installation_id"]
    assert [i.id for i in gh.rest.apps.list_installations().parsed_data] == [installation.id]
    token = gh.rest.apps.create_installation_access_token(installation.id).parsed_data
    assert isinstance(token, InstallationToken)
    assert token.token.startswith("ghs_")
    # The token works on the repository.
    as_installation = httpx.get(
        f"{sandbox.api_url}/repos/octo/demo", headers={"Authorization": f"token {token.token}"}
    )
    assert as_installation.status_code == 200


def test_jwt_signed_with_another_key_is_refused(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    now = int(time.time())
    response = admin.get(
        "/app/installations", headers={"Authorization": f"Bearer {_jwt(other, 1, now, now + 300)}"}
    )
    assert response.status_code == 401
    assert "could not be decoded" in response.json()["message"]


def test_expired_or_foreign_jwt_is_refused(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    key = sandbox.sandbox.app.private_key_pem
    now = int(time.time())
    expired = _jwt(key, 1, now - 1200, now - 700)
    wrong_issuer = _jwt(key, 99, now, now + 300)
    too_long = _jwt(key, 1, now, now + 3600)
    for token in (expired, wrong_issuer, too_long):
        response = admin.get("/app", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 401, token
        assert response.json()["documentation_url"]
    good = admin.get("/app", headers={"Authorization": f"Bearer {_jwt(key, 1, now, now + 300)}"})
    assert good.status_code == 200
    assert good.json()["slug"] == "ballet"


def test_installation_endpoints_need_the_jwt(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    assert admin.get("/app/installations").status_code == 401
    as_user = admin.get("/app/installations", headers={"Authorization": "token sandbox-user:x"})
    assert as_user.status_code == 401


def test_installation_token_expires(tmp_path: Path, receiver: Receiver) -> None:
    with (
        BackgroundSandbox(tmp_path, receiver.url, token_ttl_seconds=3) as running,
        httpx.Client(base_url=running.api_url) as client,
    ):
        make_repo(client)
        key = running.sandbox.app.private_key_pem
        now = int(time.time())
        bearer = {"Authorization": f"Bearer {_jwt(key, 1, now, now + 300)}"}
        iid = client.get("/repos/octo/demo/installation", headers=bearer).json()["id"]
        minted = client.post(f"/app/installations/{iid}/access_tokens", headers=bearer)
        assert minted.status_code == 201
        expires_at = datetime.fromisoformat(minted.json()["expires_at"])
        token = {"Authorization": f"token {minted.json()['token']}"}
        label = {"labels": ["x"]}
        created = client.post("/repos/octo/demo/issues", json={"title": "t"}, headers=token)
        assert created.status_code == 201
        # Wait until the token has lived past the expiry the sandbox announced.
        while datetime.now(UTC) <= expires_at + timedelta(seconds=1):
            time.sleep(0.1)
        refused = client.post("/repos/octo/demo/issues/1/labels", json=label, headers=token)
        assert refused.status_code == 401
        assert refused.json()["message"] == "Bad credentials"
