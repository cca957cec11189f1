"""A ticket across repositories: its page lists every pull request and its state."""

from __future__ import annotations

import pytest
from ballet.core.record import CompanionPR
from ballet.tickets.store import RecordStore
from watch_kit import Site, new_ticket

pytestmark = pytest.mark.anyio


async def test_the_ticket_page_lists_the_companions_pull_requests(site: Site) -> None:
    repo = await site.create_repo("acme", "app", private=False, collaborators={"alice": "write"})
    record = await new_ticket(site, repo, 4, "Change both")
    prs = (
        CompanionPR(repo="acme/lib", head_sha="a" * 40, number=34, state="merged"),
        CompanionPR(repo="acme/web", head_sha="b" * 40),
    )
    record = record.model_copy(update={"companion_prs": prs, "version": record.version + 1})
    await RecordStore(site.redis).commit(record, [], None)

    async with site.browser() as browser:
        page = await browser.get("/tickets/acme/app/4")
    assert page.status_code == 200, page.text
    assert '/acme/lib/pull/34">acme/lib#34</a> (merged)' in page.text
    assert "acme/web (its pull request being opened)" in page.text
