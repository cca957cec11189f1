"""What the pages' look-ups cost GitHub, counted in the sandbox's log of the App's requests:
made-up repositories cost a few listings, not a request each; a hundred browsers at once
on one uncached repository, one request; a repository installed later is seen as soon
as the worker hears its installation event, not when a kept "no" runs out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ballet.tickets.store import RecordStore
from watch_kit import Site, new_ticket

pytestmark = pytest.mark.anyio


def app_requests(site: Site) -> list[dict[str, Any]]:
    return list(site.sandbox.sandbox.requests)


async def test_a_thousand_made_up_repositories_cost_a_few_listings(site: Site) -> None:
    await site.create_repo("acme", "open", private=False, collaborators={})
    before = len(app_requests(site))
    # Owners the App is not installed for, and names its installation on acme lacks.
    urls = [f"/tickets/ghost{i}/repo{i}/1" for i in range(500)]
    urls += [f"/tickets/acme/missing{i}/1" for i in range(500)]
    async with site.browser() as browser:
        for start in range(0, len(urls), 50):
            batch = urls[start : start + 50]
            answers = await asyncio.gather(*(browser.get(url) for url in batch))
            assert [a.status_code for a in answers] == [404] * len(batch)
    made = app_requests(site)[before:]
    # The installations by account, acme's installation token and its repositories.
    assert len(made) <= 4, [(r["method"], r["path"]) for r in made]
    assert not any(r["path"].startswith("/repos/") for r in made), made


async def test_a_hundred_browsers_on_one_uncached_repository_cost_one_request(
    site: Site,
) -> None:
    await site.create_repo("acme", "open", private=False, collaborators={})
    await new_ticket(site, "acme/open", 1, "Popular")
    before = len(app_requests(site))
    async with site.browser() as browser:
        pages = await asyncio.gather(*(browser.get("/tickets/acme/open/1") for _ in range(100)))
    assert [p.status_code for p in pages] == [200] * 100
    made = app_requests(site)[before:]
    asked = [r for r in made if r["method"] == "GET" and r["path"] == "/repos/acme/open"]
    assert len(asked) == 1, [(r["method"], r["path"]) for r in made]
    # Besides it: the installations, acme's token and repositories, and the token
    # limited to acme/open it is read with (TokenScope.git), each once.
    assert len(made) <= 5, [(r["method"], r["path"]) for r in made]


async def test_a_repository_installed_later_is_seen_after_its_installation_event(
    engine_site: Site,
) -> None:
    site = engine_site
    async with site.browser() as browser:
        assert (await browser.get("/tickets/later/app/1")).status_code == 404
        kept = await site.redis.get("ballet:watch:visibility:later/app")
        assert kept == b"uninstalled"  # the "no", kept five minutes

        # Installed now: the sandbox sends `installation.created`, the worker hears it.
        await site.create_repo("later", "app", private=False, collaborators={})
        store = RecordStore(site.redis)
        async with asyncio.timeout(30):
            while await store.installation_of("later/app") is None:
                await asyncio.sleep(0.1)
        await new_ticket(site, "later/app", 1, "Installed since")
        seen = await browser.get("/tickets/later/app/1")
    assert seen.status_code == 200 and "Installed since" in seen.text
