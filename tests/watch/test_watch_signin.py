"""Sign in with GitHub: the OAuth web flow against the sandbox, the session cookie it
leaves, where it may send the browser afterwards, signing out on the server for every
web process, and a Ballet without an OAuth client."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from ballet.demo.stack import free_port
from ballet.web import create_app
from ballet.web.server import WebServer
from watch_kit import (
    Site,
    csrf_of,
    finish_session,
    finished_log,
    forms_of,
    new_ticket,
    queued_commands,
    running_site,
)

pytestmark = pytest.mark.anyio


async def test_signing_in_leaves_a_session_of_the_login_and_id_only(site: Site) -> None:
    browser = await site.sign_in("alice", next_path="/tickets?from=mail")
    home = await browser.get("/")
    assert "Signed in as <strong>@alice</strong>" in home.text

    sent = next(c for c in browser.cookies.jar if c.name == "ballet_session")
    assert sent.path == "/" and not sent.secure  # http://127.0.0.1: Secure would drop it
    payload = sent.value.split(".")[0]
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert set(data) == {"login", "id", "csrf", "sid"} and data["login"] == "alice"
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


@contextlib.asynccontextmanager
async def another_web_process(site: Site, redis_url: str) -> AsyncIterator[str]:
    """A second web app on the same Redis and settings (as `ballet web` scaled out)."""
    port = free_port()
    server = WebServer(create_app(site.settings, redis_url), "127.0.0.1", port)
    task = asyncio.create_task(server.run())
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=2) as probe:
            for _ in range(200):
                with contextlib.suppress(httpx.HTTPError):
                    if (await probe.get("/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        yield url
    finally:
        server.stop()
        await asyncio.wait_for(task, timeout=20)


async def test_signing_out_ends_the_session_for_a_copied_cookie_on_every_process(
    site: Site, watch_redis_url: str
) -> None:
    repo = await site.create_repo("acme", "secret", private=True, collaborators={"alice": "write"})
    record = await new_ticket(site, repo, 1, "Private work")
    implement = record.open_run
    assert implement is not None and implement.job_key is not None
    await finish_session(site, record, "done", "implemented")
    await finished_log(site, implement.job_key, ["PRIVATE-LOG-LINE"])
    ticket, log = "/tickets/acme/secret/1", "/tickets/acme/secret/1/sessions/implement/1/1"

    alice = await site.sign_in("alice")
    async with (
        another_web_process(site, watch_redis_url) as other_url,
        httpx.AsyncClient(base_url=other_url, timeout=30) as thief,
    ):
        # The cookie copied to another browser, on another web process: it works there.
        thief.cookies.set("ballet_session", alice.cookies["ballet_session"])
        page = await thief.get(ticket)
        assert page.status_code == 200 and "Signed in as <strong>@alice</strong>" in page.text
        pause = f"{ticket}/commands/pause"
        assert pause in forms_of(page.text)
        token = csrf_of(page.text)

        out = await alice.post("/logout", data={"csrf": token})
        assert out.status_code == 303

        # Signed out on the first process: the copy reads as nobody on the second,
        # the private ticket and its log are the 404 of a ticket that never was...
        for url in (ticket, log, f"{log}/log.txt"):
            hidden = await thief.get(url)
            assert hidden.status_code == 404, url
            assert "PRIVATE-LOG-LINE" not in hidden.text and "@alice" not in hidden.text
        # ...and its Pause, form token and all, is refused and queues nothing.
        pressed = await thief.post(pause, data={"csrf": token})
        assert pressed.status_code == 403 and "not signed in" in pressed.text
        assert await queued_commands(site.redis) == []
        # The first process agrees, for the same cookie sent again.
        again = httpx.AsyncClient(base_url=site.web_url, timeout=30)
        again.cookies.set("ballet_session", thief.cookies["ballet_session"])
        assert (await again.get(ticket)).status_code == 404
        await again.aclose()
    await alice.aclose()
