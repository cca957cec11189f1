"""Sign in with GitHub: the OAuth web flow against the sandbox, the session cookie it
leaves, where it may send the browser afterwards, and a Ballet without an OAuth client."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest
from watch_kit import Site, running_site

pytestmark = pytest.mark.anyio


async def test_signing_in_leaves_a_session_of_the_login_and_id_only(site: Site) -> None:
    browser = await site.sign_in("alice", next_path="/tickets?from=mail")
    home = await browser.get("/")
    assert "Signed in as <strong>@alice</strong>" in home.text

    sent = next(c for c in browser.cookies.jar if c.name == "ballet_session")
    assert sent.path == "/" and not sent.secure  # http://127.0.0.1: Secure would drop it
    payload = sent.value.split(".")[0]
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert set(data) == {"login", "id", "csrf"} and data["login"] == "alice"
    assert "ghu_" not in sent.value  # the user token is not kept
    await browser.aclose()


async def test_the_cookie_is_lax_httponly_and_lives_a_working_day(site: Site) -> None:
    async with site.browser() as browser:
        start = await browser.get("/login")
        assert "SameSite=lax" in start.headers["set-cookie"]
        assert "HttpOnly" in start.headers["set-cookie"]
        async with site.person("alice") as github:
            back = await github.get(start.headers["location"])
        done = await browser.get(back.headers["location"])
    session = next(h for h in done.headers.get_list("set-cookie") if "ballet_session=" in h)
    assert "HttpOnly" in session and "SameSite=lax" in session
    assert "Max-Age=28800" in session and "Secure" not in session


@pytest.mark.parametrize(
    "asked",
    [
        "https://evil.example/phish",
        "//evil.example/phish",
        "/\\evil.example/phish",
        "javascript:alert(1)",
        "/tickets\r\nSet-Cookie: x=y",
    ],
)
async def test_next_is_only_ever_a_path_here(site: Site, asked: str) -> None:
    async with site.browser() as browser:
        start = await browser.get("/login", params={"next": asked})
        async with site.person("alice") as github:
            back = await github.get(start.headers["location"])
        done = await browser.get(back.headers["location"])
    assert done.status_code == 303 and done.headers["location"] == "/tickets"


async def test_githubs_answer_counts_only_in_the_browser_that_asked(site: Site) -> None:
    async with site.browser() as browser, site.browser() as stranger:
        start = await browser.get("/login")
        async with site.person("alice") as github:
            back = await github.get(start.headers["location"])
        callback = back.headers["location"]
        # Another browser (no sign-in cookie) cannot finish it, nor a made-up state.
        assert (await stranger.get(callback)).status_code == 403
        code = httpx.URL(callback).params["code"]
        made_up = await browser.get("/oauth/callback", params={"code": code, "state": "x"})
        assert made_up.status_code == 403
        assert "ballet_session" not in browser.cookies
        # GitHub saying no (the person declined) signs nobody in.
        state = httpx.URL(callback).params["state"]
        declined = await browser.get(
            "/oauth/callback", params={"error": "access_denied", "state": state}
        )
        assert declined.status_code == 403 and "access_denied" in declined.text
        assert "ballet_session" not in browser.cookies


async def test_without_an_oauth_client_sign_in_says_so(
    watch_redis_url: str, tmp_path: Path
) -> None:
    async with (
        running_site(
            tmp_path, watch_redis_url, github_client_id=None, github_client_secret=None
        ) as site,
        site.browser() as browser,
    ):
        home = await browser.get("/")
        assert "Sign-in is not configured" in home.text and "/login" not in home.text
        login = await browser.get("/login")
        assert login.status_code == 503
        assert "BALLET_GITHUB_CLIENT_ID" in login.text
