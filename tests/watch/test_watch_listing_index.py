"""`/tickets` reads the ticket index, not the records: on real Valkey, the commands a
listing sends do not grow with the tickets, it never scans, and it lists tickets whose
records are gone from Redis (only the index holds them)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from ballet.core.record import Record
from ballet.tickets.store import RecordStore
from watch_kit import T0, Site, new_ticket

pytestmark = pytest.mark.anyio


async def ended(site: Site, repo: str, number: int) -> None:
    record = await new_ticket(site, repo, number, f"Ticket {number}")
    done = record.model_copy(
        update={"status": "done", "updated_at": T0 + timedelta(minutes=number), "version": 2}
    )
    await RecordStore(site.redis).commit(done, [], None)


async def commands(site: Site) -> dict[str, int]:
    stats: dict[str, Any] = await site.redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


async def listing_cost(site: Site) -> tuple[str, dict[str, int]]:
    """The listing's page, and the Redis commands it cost (warm: access answers kept)."""
    async with site.browser() as browser:
        await browser.get("/tickets")
        before = await commands(site)
        page = await browser.get("/tickets")
        after = await commands(site)
    assert page.status_code == 200
    spent = {name: after[name] - before.get(name, 0) for name in after}
    return page.text, {name: n for name, n in spent.items() if n}


async def test_the_listing_costs_the_same_for_20_or_220_tickets_and_never_scans(
    site: Site,
) -> None:
    repo = await site.create_repo("acme", "busy", private=False, collaborators={})
    live: list[Record] = [await new_ticket(site, repo, n, f"Live {n}") for n in range(1, 4)]
    for n in range(10, 27):
        await ended(site, repo, n)
    _, few = await listing_cost(site)
    for n in range(100, 300):
        await ended(site, repo, n)
    page, many = await listing_cost(site)

    assert "scan" not in few and "scan" not in many
    assert sum(many.values()) == sum(few.values()), (few, many)
    # The live tickets and the latest 100 ended ones, newest first.
    assert all(f'href="/tickets/acme/busy/{r.ticket.number}"' in page for r in live)
    assert page.count('class="status status-done"') == 100
    assert page.index(">acme/busy#299<") < page.index(">acme/busy#250<")
    assert ">acme/busy#200<" in page and ">acme/busy#199<" not in page


async def test_a_ticket_whose_record_is_gone_is_still_listed_from_the_index(site: Site) -> None:
    repo = await site.create_repo("acme", "kept", private=False, collaborators={})
    await new_ticket(site, repo, 4, "Indexed only")
    async with site.browser() as browser:
        assert "acme/kept#4" in (await browser.get("/tickets")).text
        await site.redis.delete("ballet:record:acme/kept#4")
        listing = await browser.get("/tickets")
    assert "acme/kept#4" in listing.text and "Indexed only" in listing.text


async def test_records_saved_before_the_index_are_indexed_on_the_first_listing(
    site: Site,
) -> None:
    repo = await site.create_repo("acme", "old", private=False, collaborators={})
    await new_ticket(site, repo, 8, "From before the index")
    await site.redis.delete(*await site.redis.keys("ballet:index:*"))
    async with site.browser() as browser:
        listing = await browser.get("/tickets")
    assert "acme/old#8" in listing.text and "From before the index" in listing.text
    assert await site.redis.exists("ballet:index:built")
