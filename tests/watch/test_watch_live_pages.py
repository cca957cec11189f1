"""The listing and a ticket's page follow the tickets live in a real browser (Debian's
chromium): a transition committed while the page is open shows without a reload (a
mark left in the page's window survives, so the document is the same one). Without
scripts a reload shows the same. The streams themselves over HTTP: `changed` for a
commit, and at once for one made between the page's render and the stream's start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from browser import Browser, chromium_binary
from test_watch_live import Events
from watch_kit import Site, finish_session, new_ticket

pytestmark = pytest.mark.anyio

STAGE = "document.querySelector('main dl dd:nth-of-type(2)').textContent"


async def test_a_ticket_page_and_the_listing_update_without_a_reload_in_chromium(
    site: Site, tmp_path: Path
) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    repo = await site.create_repo("acme", "live", private=False, collaborators={})
    record = await new_ticket(site, repo, 9, "Follow me")
    with Browser(binary, tmp_path / "profile") as browser:

        def open_page(path: str) -> None:
            browser.goto(f"{site.web_url}{path}")
            browser.wait_for("!!document.getElementById('live-state')", f"{path} loaded")
            browser.evaluate("window.sameDocument = true")

        await asyncio.to_thread(open_page, "/tickets/acme/live/9")
        assert (await asyncio.to_thread(browser.evaluate, STAGE)).startswith("implement")
        record = await finish_session(site, record, "done", "Implemented.")
        await asyncio.to_thread(
            browser.wait_for, f"{STAGE}.startsWith('review')", "the page shows the review"
        )
        assert await asyncio.to_thread(browser.evaluate, "window.sameDocument === true")
        status = "document.getElementById('live-state').textContent"
        assert "Updated" in await asyncio.to_thread(browser.evaluate, status)

        await asyncio.to_thread(open_page, "/tickets")
        listed = "document.querySelector('main').textContent.includes('acme/live#10')"
        assert not await asyncio.to_thread(browser.evaluate, listed)
        await new_ticket(site, repo, 10, "A new one")
        await asyncio.to_thread(browser.wait_for, listed, "the listing shows the new ticket")
        assert await asyncio.to_thread(browser.evaluate, "window.sameDocument === true")

    # Scripts off, a reload shows the same.
    async with site.browser() as plain:
        page = (await plain.get("/tickets/acme/live/9")).text
    assert "<dt>Stage</dt><dd>review" in page


async def test_streams_say_changed_for_a_commit_and_for_one_missed_before_they_began(
    site: Site,
) -> None:
    repo = await site.create_repo("acme", "feed", private=False, collaborators={})
    record = await new_ticket(site, repo, 1, "Streamed")
    other = await new_ticket(site, repo, 2, "Another")
    async with site.browser() as client:
        # Rendered at version 1; the ticket moved on before the stream began.
        record = await finish_session(site, record, "done", "Implemented.")
        async with client.stream("GET", "/tickets/acme/feed/1/live?since=1") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = Events(response)
            first = await events.next_event()
            assert first["event"] == "changed" and first["data"] == str(record.version)
            # Another ticket's transition is not this page's change; its own is.
            await finish_session(site, other, "done", "Other.")
            await finish_session(site, record, "done", "Reviewed.")
            second = await events.next_event()
            assert second["event"] == "changed" and second["data"] == str(record.version + 1)
        async with client.stream("GET", "/tickets/live") as response:
            events = Events(response)
            await new_ticket(site, repo, 3, "Third")
            assert (await events.next_event())["event"] == "changed"
        hidden = await client.get("/tickets/acme/nowhere/1/live")
    assert hidden.status_code == 404
