"""What Ballet's pages ask GitHub about a repository (is it public, what may this
signed-in person do there) goes through tokens limited to that one repository, able
to read who may read it and nothing else: a page never holds the installation's
whole token, which could read the code, write, or reach every repository."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from watch_kit import Site, new_ticket

pytestmark = pytest.mark.anyio


async def requests_made(site: Site) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=site.api_url, timeout=30) as admin:
        made: list[dict[str, Any]] = (await admin.get("/_sandbox/requests")).json()
    return made


async def test_a_pages_questions_about_a_repository_use_a_token_for_it_alone(site: Site) -> None:
    repo = await site.create_repo("acme", "secret", private=True, collaborators={"bob": "write"})
    await site.create_repo("acme", "other", private=True, collaborators={"bob": "write"})
    await new_ticket(site, repo, 4, "Add multiply")
    browser = await site.sign_in("bob")
    try:
        page = await browser.get("/tickets/acme/secret/4")
    finally:
        await browser.aclose()
    assert page.status_code == 200, page.text

    asked = [
        r for r in await requests_made(site)
        if r["path"] in ("/repos/acme/secret", "/repos/acme/secret/collaborators/bob/permission")
    ]  # fmt: skip
    assert {r["path"] for r in asked} == {
        "/repos/acme/secret",
        "/repos/acme/secret/collaborators/bob/permission",
    }
    for request in asked:
        assert request.get("token_repos") == ["acme/secret"], request
    (permission,) = [r for r in asked if r["path"].endswith("/permission")]
    assert permission["token_permissions"] == {"metadata": "read"}
