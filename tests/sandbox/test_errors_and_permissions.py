"""Errors shaped as GitHub's, people limited by their permission, the App's requests logged."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed

from .conftest import Receiver, installation_client, make_repo, token_for, user_client


def _status(call: object) -> tuple[int, dict[str, object]]:
    assert isinstance(call, pytest.ExceptionInfo)
    response = call.value.response
    return response.status_code, response.json()


def test_not_found_and_validation_errors(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    make_repo(admin)
    gh = installation_client(sandbox)
    with pytest.raises(RequestFailed) as missing:
        gh.rest.issues.get("octo", "demo", 42)
    status, body = _status(missing)
    assert (status, body["message"]) == (404, "Not Found")
    assert str(body["documentation_url"]).startswith("https://docs.github.com")

    unknown_route = admin.get("/repos/octo/demo/nowhere")
    assert unknown_route.status_code == 404
    assert unknown_route.json()["message"] == "Not Found"

    # githubkit checks request bodies itself, so send this one by hand.
    token = {"Authorization": f"token {token_for(sandbox)}"}
    no_title = admin.post("/repos/octo/demo/issues", json={"body": "no title"}, headers=token)
    status, body = no_title.status_code, no_title.json()
    assert status == 422
    assert body["errors"] == [{"resource": "Sandbox", "field": "title", "code": "missing_field"}]

    with pytest.raises(RequestFailed) as no_branch:
        gh.rest.pulls.create("octo", "demo", title="t", head="nope", base="main")
    status, body = _status(no_branch)
    assert (status, body["message"]) == (422, "Validation Failed")

    with pytest.raises(RequestFailed) as same:
        gh.rest.git.create_ref("octo", "demo", ref="refs/heads/main", sha="0" * 40)
    assert _status(same)[0] == 422

    bad_json = admin.post(
        "/repos/octo/demo/issues",
        content=b"{",
        headers={"Authorization": "token sandbox-user:writer"},
    )
    assert bad_json.status_code == 400
    assert "Problems parsing JSON" in bad_json.json()["message"]


def test_bad_credentials(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    make_repo(admin)
    response = admin.get("/repos/octo/demo", headers={"Authorization": "token ghs_unknown"})
    assert response.status_code == 401
    assert response.json()["message"] == "Bad credentials"
    anonymous = admin.post("/repos/octo/demo/issues", json={"title": "t"})
    assert anonymous.status_code == 401


def test_reader_cannot_label_or_merge_but_can_open_and_comment(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    reader = user_client(sandbox, "reader")
    stranger = user_client(sandbox, "stranger")
    issue = reader.rest.issues.create("octo", "demo", title="mine").parsed_data
    assert issue.user is not None and issue.user.login == "reader"
    comment = stranger.rest.issues.create_comment("octo", "demo", issue.number, body="hi")
    assert comment.parsed_data.user is not None and comment.parsed_data.user.login == "stranger"

    with pytest.raises(RequestFailed) as label:
        reader.rest.issues.add_labels("octo", "demo", issue.number, labels=["ballet"])
    status, body = _status(label)
    assert status == 403
    assert "triage" in str(body["message"])
    with pytest.raises(RequestFailed) as edit:
        reader.rest.issues.update_comment("octo", "demo", comment.parsed_data.id, body="x")
    assert _status(edit)[0] == 403

    triager = user_client(sandbox, "triager")
    triager.rest.issues.add_labels("octo", "demo", issue.number, labels=["ballet"])
    state = admin.get("/_sandbox/repos/octo/demo/state").json()
    assert state["issues"][0]["labels"] == ["ballet"]

    gh = installation_client(sandbox)
    gh.rest.git.create_ref("octo", "demo", ref="refs/heads/seed", sha=state["branches"]["main"])
    seed = gh.rest.git.create_commit(
        "octo",
        "demo",
        message="seed",
        tree=gh.rest.git.get_commit("octo", "demo", state["branches"]["main"]).parsed_data.tree.sha,
        parents=[state["branches"]["main"]],
    ).parsed_data
    gh.rest.git.update_ref("octo", "demo", "heads/seed", sha=seed.sha)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="seed", base="main").parsed_data
    with pytest.raises(RequestFailed) as merge:
        reader.rest.pulls.merge("octo", "demo", pr.number)
    assert _status(merge)[0] == 403
    writer = user_client(sandbox, "writer")
    with pytest.raises(RequestFailed) as checks:
        writer.rest.checks.create("octo", "demo", name="x", head_sha=seed.sha)
    assert _status(checks)[0] == 403


def test_request_log_counts_only_the_apps_requests(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    person = user_client(sandbox, "writer")
    person.rest.issues.create("octo", "demo", title="by a person")
    gh = installation_client(sandbox)
    gh.rest.issues.get("octo", "demo", 1)
    log = admin.get("/_sandbox/requests").json()
    assert [(r["method"], r["path"], r["status"]) for r in log] == [
        ("GET", "/users/octo/installation", 200),
        ("POST", f"/app/installations/{log[1]['path'].split('/')[3]}/access_tokens", 201),
        ("GET", "/repos/octo/demo/issues/1", 200),
    ]


def test_admin_refuses_bad_repository_specs(admin: httpx.Client) -> None:
    bad = admin.post(
        "/_sandbox/repos",
        json={"owner": "o", "name": "n", "collaborators": {"a": "owner"}, "colour": 1},
    )
    assert bad.status_code == 422
    fields = {e["field"] for e in bad.json()["errors"]}
    assert fields == {"collaborators.a", "colour"}
    make_repo(admin)
    again = admin.post("/_sandbox/repos", json={"owner": "octo", "name": "demo"})
    assert again.status_code == 422
    assert "already exists" in again.json()["message"]


def test_a_repository_left_on_disk_is_not_overwritten(tmp_path: Path, receiver: Receiver) -> None:
    with (
        BackgroundSandbox(tmp_path, receiver.url) as first,
        httpx.Client(base_url=first.api_url) as client,
    ):
        head = make_repo(client)["head_sha"]
    with (
        BackgroundSandbox(tmp_path, receiver.url) as second,
        httpx.Client(base_url=second.api_url) as client,
    ):
        again = client.post("/_sandbox/repos", json={"owner": "octo", "name": "demo"})
    assert again.status_code == 422
    assert "fresh --data directory" in again.json()["message"]
    kept = subprocess.run(
        ["git", "-C", str(tmp_path / "git/octo/demo.git"), "rev-parse", "main"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert kept.stdout.strip() == head
