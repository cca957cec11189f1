"""GitHub's OAuth web flow for the App's client, signed in without a browser: the test
says who is signed in to "GitHub" with the API's `sandbox-user:<login>` token."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import RequestFailed
from githubkit_schemas.latest.models import (
    FullRepository,
    Installation,
    PrivateUser,
    PublicUser,
    SimpleUser,
)

from .conftest import Receiver, make_repo

SIGNED_IN = {"Authorization": "token sandbox-user:reader"}


def callback(sandbox: BackgroundSandbox) -> str:
    hook = urlsplit(str(sandbox.sandbox.hooks.url))
    return f"{hook.scheme}://{hook.netloc}/oauth/callback"


def authorize(
    admin: httpx.Client, sandbox: BackgroundSandbox, user: str | None = "reader", **extra: str
) -> httpx.Response:
    """The App sends `user`'s browser to GitHub's authorize page; `extra`: more parameters."""
    params = {
        "client_id": sandbox.sandbox.app.client_id,
        "redirect_uri": callback(sandbox),
        "state": "st4te",
        **extra,
    }
    headers = {"Authorization": f"token sandbox-user:{user}"} if user else {}
    return admin.get("/login/oauth/authorize", params=params, headers=headers)


def query_of(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 302, response.text
    return {k: v[0] for k, v in parse_qs(urlsplit(response.headers["location"]).query).items()}


def exchange(admin: httpx.Client, sandbox: BackgroundSandbox, **fields: str) -> dict[str, Any]:
    body = {
        "client_id": sandbox.sandbox.app.client_id,
        "client_secret": sandbox.sandbox.app.client_secret,
        **fields,
    }
    response = admin.post(
        "/login/oauth/access_token", data=body, headers={"Accept": "application/json"}
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def sign_in(admin: httpx.Client, sandbox: BackgroundSandbox, login: str) -> str:
    code = query_of(authorize(admin, sandbox, login))["code"]
    token: str = exchange(admin, sandbox, code=code, redirect_uri=callback(sandbox))["access_token"]
    return token


def as_user(sandbox: BackgroundSandbox, token: str) -> GitHub[TokenAuthStrategy]:
    return GitHub(TokenAuthStrategy(token), base_url=sandbox.api_url)


def test_a_user_signs_in_and_sees_the_installations_repositories(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    make_repo(admin, name="secret", private=True, collaborators={"reader": "read"})
    make_repo(admin, name="other", collaborators={})
    make_repo(admin, owner="elsewhere", name="theirs", collaborators={})

    back = authorize(admin, sandbox)
    assert back.headers["location"].startswith(callback(sandbox) + "?")
    sent = query_of(back)
    assert sent["state"] == "st4te" and len(sent["code"]) >= 20

    token = exchange(admin, sandbox, code=sent["code"], redirect_uri=callback(sandbox))
    assert token["access_token"].startswith("ghu_") and len(token["access_token"]) == 40
    assert token["refresh_token"].startswith("ghr_")
    assert (token["token_type"], token["scope"], token["expires_in"]) == ("bearer", "", 28800)
    assert token["refresh_token_expires_in"] > 28800

    gh = as_user(sandbox, token["access_token"])
    me = gh.rest.users.get_authenticated().parsed_data
    assert isinstance(me, PrivateUser | PublicUser)
    assert (me.login, me.type, me.name) == ("reader", "User", "reader")
    assert me.html_url == f"{sandbox.api_url}/reader"
    assert admin.get(me.avatar_url).headers["content-type"].startswith("image/svg")

    found = gh.rest.apps.list_installations_for_authenticated_user().parsed_data
    assert found.total_count == 1
    installation = found.installations[0]
    assert isinstance(installation, Installation)
    assert isinstance(installation.account, SimpleUser) and installation.account.login == "octo"
    repos = gh.rest.apps.list_installation_repos_for_authenticated_user(installation.id).parsed_data
    assert [r.full_name for r in repos.repositories] == ["octo/demo", "octo/secret"]
    secret = repos.repositories[1]  # parsed: githubkit checked the shape
    assert (secret.private, secret.visibility) == (True, "private")
    assert secret.permissions is not None and secret.permissions.pull
    assert not secret.permissions.push
    # Another account's installation, where the user has no explicit access, does not exist.
    elsewhere = sandbox.sandbox.installations["elsewhere"]
    with pytest.raises(RequestFailed) as hidden:
        gh.rest.apps.list_installation_repos_for_authenticated_user(elsewhere)
    assert hidden.value.response.status_code == 404

    repo = gh.rest.repos.get("octo", "secret").parsed_data
    assert isinstance(repo, FullRepository) and repo.private
    assert repo.permissions is not None and repo.permissions.pull and not repo.permissions.admin
    # A reader may not ask for collaborators' permissions, as on GitHub.
    with pytest.raises(RequestFailed) as refused:
        gh.rest.repos.get_collaborator_permission_level("octo", "secret", "reader")
    assert refused.value.response.status_code == 403
    writer = as_user(sandbox, sign_in(admin, sandbox, "writer"))
    level = writer.rest.repos.get_collaborator_permission_level("octo", "demo", "reader")
    assert level.parsed_data.permission == "read"

    # The App's requests for a person are logged with whom they were for.
    log = admin.get("/_sandbox/requests").json()
    assert {"method": "GET", "path": "/user", "status": 200, "user": "reader"} in [
        {k: v for k, v in r.items() if k not in {"time", "began", "ended"}} for r in log
    ]


def test_a_code_works_once(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    code = query_of(authorize(admin, sandbox))["code"]
    assert "access_token" in exchange(admin, sandbox, code=code)
    again = exchange(admin, sandbox, code=code)
    assert again["error"] == "bad_verification_code"
    assert again["error_description"] == "The code passed is incorrect or expired."
    assert exchange(admin, sandbox, code="made-up")["error"] == "bad_verification_code"


def test_a_code_expires(tmp_path: Path, receiver: Receiver) -> None:
    with (
        BackgroundSandbox(tmp_path, receiver.url) as sandbox,
        httpx.Client(base_url=sandbox.api_url) as admin,
    ):
        code = query_of(authorize(admin, sandbox))["code"]
        admin.post("/_sandbox/oauth/expire").raise_for_status()
        assert exchange(admin, sandbox, code=code)["error"] == "bad_verification_code"


def test_a_wrong_secret_is_refused_and_keeps_the_code(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    code = query_of(authorize(admin, sandbox))["code"]
    wrong = exchange(admin, sandbox, code=code, client_secret="not-it")
    assert wrong["error"] == "incorrect_client_credentials"
    assert "access_token" not in wrong
    assert exchange(admin, sandbox, code=code, client_id="Iv23liunknown")["error"] == (
        "incorrect_client_credentials"
    )
    # Basic auth carries the client's credentials as well as the form does.
    app = sandbox.sandbox.app
    basic = base64.b64encode(f"{app.client_id}:{app.client_secret}".encode()).decode()
    answer = admin.post(
        "/login/oauth/access_token",
        data={"code": code},
        headers={"Authorization": f"Basic {basic}", "Accept": "application/json"},
    )
    assert answer.json()["access_token"].startswith("ghu_")


def test_redirect_uri_off_the_callback(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    elsewhere = authorize(admin, sandbox, redirect_uri="http://evil.example/oauth/callback")
    sent = query_of(elsewhere)
    assert elsewhere.headers["location"].startswith(callback(sandbox) + "?")
    assert sent["error"] == "redirect_uri_mismatch" and sent["state"] == "st4te"
    assert "code" not in sent
    # A path beside the callback is no match either: GitHub Apps' callbacks match exactly.
    beside = authorize(admin, sandbox, redirect_uri=callback(sandbox) + "/more")
    assert query_of(beside)["error"] == "redirect_uri_mismatch"
    # Without redirect_uri, the first callback URL; at the exchange it must be the same.
    code = query_of(authorize(admin, sandbox, redirect_uri=""))["code"]
    other = exchange(admin, sandbox, code=code, redirect_uri="http://evil.example/cb")
    assert other["error"] == "redirect_uri_mismatch"

    moved = admin.put("/_sandbox/app/callback_urls", json={"urls": ["http://ballet.test/cb"]})
    assert moved.json() == {"urls": ["http://ballet.test/cb"]}
    now_there = authorize(admin, sandbox, redirect_uri="http://ballet.test/cb")
    assert now_there.headers["location"].startswith("http://ballet.test/cb?code=")
    assert admin.put("/_sandbox/app/callback_urls", json={"urls": None}).json() == {
        "urls": [callback(sandbox)]
    }


def test_nobody_signed_in_gets_a_page_and_no_redirect(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    page = authorize(admin, sandbox, user=None)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "not signed in" in page.text and "location" not in page.headers
    bad_token = admin.get(
        "/login/oauth/authorize",
        params={"client_id": sandbox.sandbox.app.client_id},
        headers={"Authorization": "token ghu_revoked"},
    )
    assert bad_token.status_code == 200 and "not signed in" in bad_token.text

    unknown = admin.get("/login/oauth/authorize", params={"client_id": "Iv23linothere"})
    assert unknown.status_code == 404 and "location" not in unknown.headers

    # In a browser: the page's form signs in (a cookie) and comes back to authorise.
    with httpx.Client(base_url=sandbox.api_url) as browser:
        shown = authorize(browser, sandbox, user=None, login="mona")
        assert "value='mona'" in shown.text
        back_to = shown.request.url.raw_path.decode()
        signed = browser.post("/session", data={"login": "mona", "return_to": back_to})
        assert signed.status_code == 303 and signed.headers["location"] == back_to
        code = query_of(browser.get(back_to))["code"]
        token = exchange(admin, sandbox, code=code)["access_token"]
        mona = as_user(sandbox, token)
        assert mona.rest.users.get_authenticated().parsed_data.login == "mona"
        browser.post("/logout")
        assert browser.get(back_to).status_code == 200


def test_form_encoded_answers_refresh_and_pkce(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    app = sandbox.sandbox.app
    verifier = "v" * 50
    challenge = (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    )
    code = query_of(
        authorize(admin, sandbox, code_challenge=challenge, code_challenge_method="S256")
    )["code"]
    form = admin.post(
        "/login/oauth/access_token",
        data={
            "client_id": app.client_id,
            "client_secret": app.client_secret,
            "code": code,
            "code_verifier": verifier,
        },
    )
    assert form.headers["content-type"].startswith("application/x-www-form-urlencoded")
    answer = {k: v[0] for k, v in parse_qs(form.text, keep_blank_values=True).items()}
    assert answer["access_token"].startswith("ghu_") and answer["token_type"] == "bearer"

    code = query_of(authorize(admin, sandbox, code_challenge=challenge))["code"]
    no_verifier = exchange(admin, sandbox, code=code)
    assert no_verifier["error"] == "bad_verification_code"

    refreshed = exchange(
        admin, sandbox, grant_type="refresh_token", refresh_token=answer["refresh_token"]
    )
    assert refreshed["access_token"].startswith("ghu_")
    assert refreshed["access_token"] != answer["access_token"]
    spent = exchange(
        admin, sandbox, grant_type="refresh_token", refresh_token=answer["refresh_token"]
    )
    assert spent["error"] == "bad_refresh_token"
    reader = as_user(sandbox, refreshed["access_token"])
    assert reader.rest.users.get_authenticated().parsed_data.login == "reader"


def test_user_tokens_expire_and_only_user_tokens_list_installations(
    tmp_path: Path, receiver: Receiver
) -> None:
    with (
        BackgroundSandbox(tmp_path, receiver.url) as sandbox,
        httpx.Client(base_url=sandbox.api_url) as admin,
    ):
        token = sign_in(admin, sandbox, "reader")
        assert admin.get("/user", headers={"Authorization": f"token {token}"}).status_code == 200
        # A person's own token is not one authorised to the App.
        person = admin.get("/user/installations", headers=SIGNED_IN)
        assert person.status_code == 403
        assert "authorized to a GitHub App" in person.json()["message"]
        assert admin.get("/user").status_code == 401
        admin.post("/_sandbox/oauth/expire").raise_for_status()
        expired = admin.get("/user", headers={"Authorization": f"Bearer {token}"})
        assert (expired.status_code, expired.json()["message"]) == (401, "Bad credentials")


def test_display_names_and_public_profiles(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    admin.put("/_sandbox/users/reader", json={"name": "Mona Lisa"}).raise_for_status()
    gh = as_user(sandbox, sign_in(admin, sandbox, "reader"))
    assert gh.rest.users.get_authenticated().parsed_data.name == "Mona Lisa"
    public = gh.rest.users.get_by_username("someone").parsed_data
    assert isinstance(public, PublicUser) and public.login == "someone"
    admin.put("/_sandbox/users/reader", json={"name": None}).raise_for_status()
    assert gh.rest.users.get_authenticated().parsed_data.name is None


def test_an_app_registered_from_a_manifest_has_its_own_client(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    manifest = {
        "name": "Ballet here",
        "url": "http://ballet.test",
        "redirect_url": "http://ballet.test/setup/done",
        "callback_urls": ["http://ballet.test/oauth/callback"],
        "hook_attributes": {"url": "http://ballet.test/webhooks"},
    }
    old = sandbox.sandbox.app.client_id
    posted = admin.post("/settings/apps/new", data={"manifest": json.dumps(manifest)})
    code = query_of(posted)["code"]
    app = admin.post(f"/app-manifests/{code}/conversions").json()
    assert app["client_id"] != old and app["client_id"].startswith("Iv23li")
    params = {"client_id": app["client_id"], "redirect_uri": "http://ballet.test/oauth/callback"}
    back = admin.get("/login/oauth/authorize", params=params, headers=SIGNED_IN)
    sent = query_of(back)
    answer = admin.post(
        "/login/oauth/access_token",
        json={"client_id": app["client_id"], "client_secret": app["client_secret"], **sent},
        headers={"Accept": "application/json"},
    ).json()
    assert answer["access_token"].startswith("ghu_")
    # The App it replaced is gone, and its client with it.
    gone = admin.get("/login/oauth/authorize", params={"client_id": old}, headers=SIGNED_IN)
    assert gone.status_code == 404
