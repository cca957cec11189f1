"""Private repositories: there for the owner, collaborators and the App's installation;
GitHub's 404 for everyone else on every read path, git over HTTP included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit_schemas.latest.models import FullRepository

from .conftest import (
    Receiver,
    authed_url,
    git,
    installation_client,
    make_repo,
    settle,
    token_for,
)
from .test_oauth import sign_in

R = "/repos/octo/secret"


def _private(admin: httpx.Client) -> dict[str, object]:
    return make_repo(
        admin,
        name="secret",
        private=True,
        collaborators={"reader": "read", "writer": "write"},
        files={"README.md": "# secret\n", "src/app.py": "print(1)\n"},
    )


def _as(login: str) -> dict[str, str]:
    return {"Authorization": f"token sandbox-user:{login}"}


def test_a_private_repository_is_not_found_by_a_stranger(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver
) -> None:
    created = _private(admin)
    assert created["private"] is True
    head = str(created["head_sha"])
    gh = installation_client(sandbox)
    issue = gh.rest.issues.create("octo", "secret", title="hidden").parsed_data
    comment = gh.rest.issues.create_comment("octo", "secret", issue.number, body="x").parsed_data

    reads = [
        R,
        f"{R}/contents/src/app.py",
        f"{R}/contents/src",
        f"{R}/git/ref/heads/main",
        f"{R}/git/commits/{head}",
        f"{R}/branches/main",
        f"{R}/commits/{head}",
        f"{R}/commits/{head}/check-runs",
        f"{R}/commits/{head}/status",
        f"{R}/issues",
        f"{R}/issues/{issue.number}",
        f"{R}/issues/{issue.number}/comments",
        f"{R}/issues/comments/{comment.id}",
        f"{R}/issues/{issue.number}/timeline",
        f"{R}/issues/{issue.number}/sub_issues",
        f"{R}/labels",
        f"{R}/pulls",
        f"{R}/collaborators/reader/permission",
    ]
    for path in reads:
        for who in (_as("stranger"), {}):
            hidden = admin.get(path, headers=who)
            assert hidden.status_code == 404, (path, who, hidden.text)
            assert hidden.json()["message"] == "Not Found"
        # Seen by a reader: only collaborators' permissions need push access, as on GitHub.
        seen = admin.get(path, headers=_as("reader")).status_code
        assert seen == (403 if path.endswith("/permission") else 200), path
        assert admin.get(path, headers={"Authorization": f"token {token_for(sandbox)}"}).is_success

    # Writing is no different: a stranger cannot tell the repository exists.
    for method, path, body in [
        ("POST", f"{R}/issues", {"title": "t"}),
        ("POST", f"{R}/issues/{issue.number}/comments", {"body": "b"}),
        ("PATCH", R, {"allow_squash_merge": False}),
    ]:
        refused = admin.request(method, path, json=body, headers=_as("stranger"))
        assert refused.status_code == 404, (method, path)
    # A reader sees it and, as on any repository, may open issues but not label them.
    assert admin.post(f"{R}/issues", json={"title": "r"}, headers=_as("reader")).status_code == 201
    label = admin.post(f"{R}/issues/1/labels", json={"labels": ["x"]}, headers=_as("reader"))
    assert label.status_code == 403

    repo = gh.rest.repos.get("octo", "secret").parsed_data
    assert isinstance(repo, FullRepository)
    assert (repo.private, repo.visibility) == (True, "private")
    permission = gh.rest.repos.get_collaborator_permission_level("octo", "secret", "stranger")
    assert permission.parsed_data.permission == "none"

    settle(admin)
    repository = [r.payload["repository"] for r in receiver.received if "repository" in r.payload]
    assert repository and all(r["private"] is True for r in repository)
    assert all(r["visibility"] == "private" for r in repository)
    installed = [r.payload for r in receiver.received if r.event == "installation"]
    assert installed[0]["repositories"][0]["private"] is True


def test_public_repositories_stay_readable_by_anyone(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    for who in (_as("stranger"), {}):
        shown = admin.get("/repos/octo/demo", headers=who)
        assert shown.status_code == 200
        assert (shown.json()["private"], shown.json()["visibility"]) == (False, "public")
    assert admin.get("/repos/octo/nothing", headers=_as("stranger")).status_code == 404


def test_git_over_http_hides_a_private_repository(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    _private(admin)
    stranger = subprocess.run(
        ["git", "clone", "--quiet", authed_url(sandbox, "sandbox-user:stranger", "octo/secret")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    assert stranger.returncode != 0
    assert "not found" in stranger.stderr.lower()
    info_refs = admin.get(
        "/octo/secret.git/info/refs",
        params={"service": "git-upload-pack"},
        auth=("x", "sandbox-user:stranger"),
    )
    assert info_refs.status_code == 404

    git(
        tmp_path, "clone", "--quiet", authed_url(sandbox, "sandbox-user:reader", "octo/secret"), "r"
    )
    assert (tmp_path / "r" / "src" / "app.py").read_text() == "print(1)\n"
    app_url = authed_url(sandbox, token_for(sandbox), "octo/secret")
    git(tmp_path, "clone", "--quiet", app_url, "app")
    assert (tmp_path / "app" / "README.md").exists()


def test_a_user_token_sees_only_what_both_the_user_and_the_app_can(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    _private(admin)
    make_repo(admin)
    app_token = {"Authorization": f"token {token_for(sandbox)}"}
    assert admin.get(R, headers=app_token).status_code == 200  # the App can

    stranger = {"Authorization": f"token {sign_in(admin, sandbox, 'stranger')}"}
    assert admin.get(R, headers=stranger).status_code == 404  # the user cannot
    assert admin.get(f"{R}/issues", headers=stranger).status_code == 404
    assert admin.get("/repos/octo/demo", headers=stranger).status_code == 200  # public
    assert admin.get("/user/installations", headers=stranger).json()["total_count"] == 0

    reader = {"Authorization": f"token {sign_in(admin, sandbox, 'reader')}"}
    shown = admin.get(R, headers=reader)
    assert shown.status_code == 200
    assert shown.json()["permissions"] == {
        "admin": False,
        "maintain": False,
        "push": False,
        "triage": False,
        "pull": True,
    }
    # The owner is an admin, but the App has no administration permission: neither has
    # the owner's token through the App.
    owner = {"Authorization": f"token {sign_in(admin, sandbox, 'octo')}"}
    settings = admin.patch(R, json={"allow_squash_merge": False}, headers=owner)
    assert settings.status_code == 403
    assert settings.json()["message"] == "Resource not accessible by integration"
    writer = {"Authorization": f"token {sign_in(admin, sandbox, 'writer')}"}
    made = admin.post(f"{R}/issues", json={"title": "as writer"}, headers=writer)
    assert made.status_code == 201 and made.json()["user"]["login"] == "writer"


def test_references_from_a_private_repository_are_left_out(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    _private(admin)
    gh = installation_client(sandbox)
    target = gh.rest.issues.create("octo", "demo", title="public").parsed_data
    gh.rest.issues.create("octo", "secret", title="s", body=f"see octo/demo#{target.number}")
    timeline = f"/repos/octo/demo/issues/{target.number}/timeline"

    def referenced(headers: dict[str, str]) -> list[str]:
        events = admin.get(timeline, headers=headers).json()
        return [e["event"] for e in events]

    assert referenced({"Authorization": f"token {token_for(sandbox)}"}) == ["cross-referenced"]
    assert referenced(_as("reader")) == ["cross-referenced"]
    assert referenced(_as("stranger")) == []
    assert referenced({}) == []


@pytest.mark.parametrize("private", [True, False])
def test_admin_creation_says_whether_private(admin: httpx.Client, private: bool) -> None:
    made = admin.post(
        "/_sandbox/repos", json={"owner": "octo", "name": "r", "private": private}
    ).json()
    assert made["private"] is private
