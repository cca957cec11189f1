"""A ticket across repositories: its page lists every pull request and its state."""

from __future__ import annotations

import pytest
from ballet.core.record import ChecksSeen, CompanionPR
from ballet.tickets.store import RecordStore
from watch_kit import Site, new_ticket

pytestmark = pytest.mark.anyio


async def test_the_ticket_page_lists_the_companions_pull_requests(site: Site) -> None:
    repo = await site.create_repo("acme", "app", private=False, collaborators={"alice": "write"})
    record = await new_ticket(site, repo, 4, "Change both")
    prs = (
        CompanionPR(repo="acme/lib", head_sha="a" * 40, number=34, state="merged"),
        CompanionPR(repo="acme/web", head_sha="b" * 40),
        # Heard red on its head while a session ran; the check's name is anyone's text.
        CompanionPR(repo="acme/api", head_sha="c" * 40, number=9,
                    checks=ChecksSeen(sha="c" * 40, outcome="fail", summary="<b>ci</b>: failure")),
        # Red on an older head: its new head's checks decide.
        CompanionPR(repo="acme/cli", head_sha="d" * 40, number=3,
                    checks=ChecksSeen(sha="e" * 40, outcome="fail", summary="ci: failure")),
    )  # fmt: skip
    record = record.model_copy(update={"companion_prs": prs, "version": record.version + 1})
    await RecordStore(site.redis).commit(record, [], None)

    async with site.browser() as browser:
        page = await browser.get("/tickets/acme/app/4")
    assert page.status_code == 200, page.text
    assert '/acme/lib/pull/34">acme/lib#34</a> (merged)' in page.text
    assert "acme/web (its pull request being opened)" in page.text
    assert "acme/api#9</a> (open, red checks: &lt;b&gt;ci&lt;/b&gt;: failure)" in page.text
    assert "acme/cli#3</a> (open);" in page.text or "acme/cli#3</a> (open)." in page.text
