"""Installation tokens asked for some repositories and permissions: the sandbox mints them
as GitHub does and refuses them outside their repositories (404) and beyond their
permissions (403), over REST and over git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox

from .conftest import app_client, authed_url, git, make_repo, push_branch


def _mint(sandbox: BackgroundSandbox, owner: str, body: dict[str, Any]) -> httpx.Response:
    gh = app_client(sandbox)
    installation = gh.rest.apps.get_user_installation(owner).parsed_data
    jwt = gh.auth.get_auth_flow(gh)
    bearer = {"Authorization": f"Bearer {jwt.get_jwt()}"}  # type: ignore[attr-defined]
    return httpx.post(
        f"{sandbox.api_url}/app/installations/{installation.id}/access_tokens",
        json=body,
        headers=bearer,
    )


@pytest.fixture
def three(admin: httpx.Client) -> dict[str, dict[str, Any]]:
    """octo/app and octo/lib (one installation) and octo/other beside them."""
    owner = {"Authorization": "token sandbox-user:octo"}
    for name in ("app", "lib", "other"):
        make_repo(admin, name=name)
    return {n: admin.get(f"/repos/octo/{n}", headers=owner).json() for n in ("app", "lib", "other")}


def test_a_token_names_its_repositories_and_permissions(
    sandbox: BackgroundSandbox, three: dict[str, dict[str, Any]]
) -> None:
    wanted = {"repositories": ["app"], "repository_ids": [three["lib"]["id"]]}
    minted = _mint(sandbox, "octo", {**wanted, "permissions": {"contents": "write"}})
    assert minted.status_code == 201, minted.text
    body = minted.json()
    assert body["repository_selection"] == "selected"
    assert [r["full_name"] for r in body["repositories"]] == ["octo/app", "octo/lib"]
    assert body["permissions"] == {"metadata": "read", "contents": "write"}
    listed = httpx.get(
        f"{sandbox.api_url}/installation/repositories",
        headers={"Authorization": f"token {body['token']}"},
    ).json()
    assert [r["full_name"] for r in listed["repositories"]] == ["octo/app", "octo/lib"]
    assert listed["repository_selection"] == "selected"
    whole = _mint(sandbox, "octo", {}).json()
    assert whole["repository_selection"] == "all"
    assert "repositories" not in whole


def test_a_token_for_more_than_the_installation_holds_is_refused(
    sandbox: BackgroundSandbox, admin: httpx.Client, three: dict[str, dict[str, Any]]
) -> None:
    make_repo(admin, owner="acme", name="api")  # another installation
    elsewhere = admin.get("/repos/acme/api", headers={"Authorization": "token sandbox-user:acme"})
    for body in (
        {"repositories": ["app", "nowhere"]},
        {"repository_ids": [elsewhere.json()["id"]]},
        {"permissions": {"administration": "write"}},
        {"permissions": {"metadata": "write"}},
    ):
        refused = _mint(sandbox, "octo", body)
        assert refused.status_code == 422, body
        assert "installation" in refused.json()["message"]


def test_a_ticket_token_cannot_write_outside_its_repositories(
    sandbox: BackgroundSandbox, three: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    body = {
        "repositories": ["app", "lib"],
        "permissions": {"contents": "write", "issues": "write", "pull_requests": "write"},
    }
    token = _mint(sandbox, "octo", body).json()["token"]
    api = httpx.Client(base_url=sandbox.api_url, headers={"Authorization": f"token {token}"})
    for repo in ("app", "lib"):
        made = api.post(f"/repos/octo/{repo}/issues", json={"title": "t"})
        assert made.status_code == 201, made.text
        assert api.post(f"/repos/octo/{repo}/issues/1/comments", json={"body": "b"}).is_success
    assert api.get("/repos/octo/other").status_code == 404
    assert api.post("/repos/octo/other/issues", json={"title": "t"}).status_code == 404
    # The issue the owner made there is not reachable either: a comment on it is refused.
    owner = httpx.Client(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:octo"}
    )
    assert owner.post("/repos/octo/other/issues", json={"title": "t"}).status_code == 201
    assert api.post("/repos/octo/other/issues/1/comments", json={"body": "b"}).status_code == 404
    # Over git: its own repository takes the push, the other is not found.
    push_branch(tmp_path, authed_url(sandbox, token, "octo/lib"), "ticket", {"x": "x"})
    with pytest.raises(AssertionError, match=r"not found|404"):
        push_branch(tmp_path, authed_url(sandbox, token, "octo/other"), "ticket", {"x": "x"})


def test_a_token_is_refused_beyond_its_permissions(
    sandbox: BackgroundSandbox, three: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    push_only = _mint(sandbox, "octo", {"permissions": {"contents": "write"}}).json()["token"]
    api = httpx.Client(base_url=sandbox.api_url, headers={"Authorization": f"token {push_only}"})
    assert api.get("/repos/octo/app").status_code == 200  # metadata: every token's
    refused = api.post("/repos/octo/app/issues", json={"title": "t"})
    assert refused.status_code == 403
    assert refused.json()["message"] == "Resource not accessible by integration"
    assert api.get("/repos/octo/app/pulls").status_code == 403
    assert api.get("/repos/octo/app/contents/README.md").status_code == 200
    push_branch(tmp_path, authed_url(sandbox, push_only, "octo/app"), "ticket", {"x": "x"})

    reader = _mint(sandbox, "octo", {"permissions": {"contents": "read"}}).json()["token"]
    git(tmp_path, "clone", "--quiet", authed_url(sandbox, reader, "octo/app"), str(tmp_path / "r"))
    with pytest.raises(AssertionError, match=r"403|denied"):
        push_branch(tmp_path, authed_url(sandbox, reader, "octo/app"), "other", {"y": "y"})


def test_comments_on_a_pull_request_take_either_permission(
    sandbox: BackgroundSandbox, three: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    full = _mint(sandbox, "octo", {}).json()["token"]
    push_branch(tmp_path, authed_url(sandbox, full, "octo/app"), "topic", {"t": "t"})
    owner = httpx.Client(base_url=sandbox.api_url, headers={"Authorization": f"token {full}"})
    issue = owner.post("/repos/octo/app/issues", json={"title": "an issue"}).json()["number"]
    pull = owner.post(
        "/repos/octo/app/pulls", json={"title": "t", "head": "topic", "base": "main"}
    ).json()["number"]
    prs_only = {"permissions": {"pull_requests": "write"}}
    token = _mint(sandbox, "octo", prs_only).json()["token"]
    api = httpx.Client(base_url=sandbox.api_url, headers={"Authorization": f"token {token}"})
    said = api.post(f"/repos/octo/app/issues/{pull}/comments", json={"body": "on the PR"})
    assert said.status_code == 201, said.text
    edited = api.patch(f"/repos/octo/app/issues/comments/{said.json()['id']}", json={"body": "e"})
    assert edited.status_code == 200
    on_issue = api.post(f"/repos/octo/app/issues/{issue}/comments", json={"body": "no"})
    assert on_issue.status_code == 403
    assert api.put(f"/repos/octo/app/pulls/{pull}/merge").status_code == 403  # contents: write
