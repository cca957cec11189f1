"""The ticket page shows what each session spent, as the model gateway metered it
(tokens in, cache read and write, out; cost, or "price unknown"), and the ticket's
total against its cost cap."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from ballet.core.config import Budget
from ballet.core.events import TicketRequested
from ballet.core.machine import advance
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.core.spend import Spend
from ballet.spend_ledger import SpendLedger
from ballet.watch.views import ticket_spent
from watch_kit import T0, Site, finish_session, new_ticket, pipeline_runtime, running_site

pytestmark = pytest.mark.anyio

PRICED = Spend(
    requests=3,
    input_tokens=1000,
    cache_read_tokens=4000,
    cache_write_tokens=500,
    output_tokens=700,
    cost_usd=0.3,
)
UNPRICED = Spend(requests=2, input_tokens=20, output_tokens=10, unpriced_requests=2)


async def test_the_ticket_page_shows_each_session_spend_and_the_total(site: Site) -> None:
    repo = await site.create_repo("acme", "spend", private=False, collaborators={})
    record = await new_ticket(site, repo, 4, "Count the pennies")
    record = await finish_session(site, record, "done", "implemented", spend=PRICED)
    record = await finish_session(site, record, "approve", "reviewed", spend=UNPRICED)
    async with site.browser() as browser:
        page = await browser.get("/tickets/acme/spend/4")
    assert page.status_code == 200, page.text
    text = page.text
    assert "<td>1000 in · 4000 cache read · 500 cache write · 700 out, $0.30</td>" in text
    assert "<td>20 in · 0 cache read · 0 cache write · 10 out, price unknown</td>" in text
    assert "<dd>3 sessions, $0.30 + price unknown for 2 requests</dd>" in text


def test_the_total_names_the_ticket_cap_with_what_writers_added() -> None:
    pipeline = resolve_pipeline(default_config(pipeline_runtime()), ())
    capped = pipeline.model_copy(update={"budget": Budget(cost_usd=5)})
    started = TicketRequested(
        now=T0,
        repo="acme/cap",
        issue=1,
        author="alice",
        title="t",
        pipeline=capped,
        default_branch="main",
    )
    record, _ = advance(None, started)
    record = record.model_copy(update={"budget_added_usd": 2.5, "cost_used": 1.25})
    assert ticket_spent(record) == "1 session, $1.25 of its $7.50 cap"


async def test_a_writer_sees_the_repository_spend_by_month_and_no_one_else(site: Site) -> None:
    repo = await site.create_repo(
        "acme", "ledger", private=False, collaborators={"alice": "write", "rita": "read"}
    )
    ledger = SpendLedger(site.redis)
    now = datetime.now(UTC)
    for provider, model, spend in (
        ("anthropic", "claude-sonnet-4-5", PRICED),
        ("openai", "made-up", UNPRICED),
    ):
        await ledger.add(
            repo=repo, installation_id=1, provider=provider, model=model, spend=spend, at=now
        )
    record = await new_ticket(site, repo, 9, "Spend it")
    await finish_session(site, record, "done", "ok", spend=PRICED)
    page = "/spend/acme/ledger"

    alice = await site.sign_in("alice", next_path="/tickets/acme/ledger/9")
    ticket = await alice.get("/tickets/acme/ledger/9")
    assert f'<a href="{page}">this repository\'s model spend by month</a>' in ticket.text
    shown = await alice.get(page)
    assert shown.status_code == 200, shown.text
    cells = shown.text.replace(" ", "").replace("\n", "")
    month = f"{now.year:04d}-{now.month:02d}"
    assert f"<td><strong>{month}</strong></td><td>5</td><td>1020</td>" in cells
    assert "<td>$0.30+priceunknownfor2requests</td>" in cells
    assert "<td>anthropic·claude-sonnet-4-5</td><td>3</td>" in cells
    assert "<td>openai·made-up</td><td>2</td>" in cells and "<td>priceunknown</td>" in cells

    rita = await site.sign_in("rita", next_path="/tickets/acme/ledger/9")
    assert "/spend/" not in (await rita.get("/tickets/acme/ledger/9")).text
    assert (await rita.get(page)).status_code == 404
    async with site.browser() as anyone:
        assert (await anyone.get(page)).status_code == 404


async def test_a_writer_sees_this_month_against_the_repository_and_installation_caps(
    watch_redis_url: str, tmp_path: Path
) -> None:
    async with running_site(
        tmp_path,
        watch_redis_url,
        budget_repository_monthly_usd=10.0,
        budget_installation_monthly_usd=1.0,
    ) as site:
        repo = await site.create_repo(
            "acme", "capped", private=False, collaborators={"alice": "write"}
        )
        sibling = await site.create_repo("acme", "sibling", private=True, collaborators={})
        installation = site.sandbox.sandbox.installation_for("acme")
        ledger = SpendLedger(site.redis)
        now = datetime.now(UTC)
        for where, spend in ((repo, PRICED), (sibling, Spend(requests=1, cost_usd=0.8))):
            await ledger.add(
                repo=where,
                installation_id=installation,
                provider="anthropic",
                model="claude-sonnet-4-5",
                spend=spend,
                at=now,
            )
        alice = await site.sign_in("alice", next_path="/spend/acme/capped")
        shown = await alice.get("/spend/acme/capped")
    assert shown.status_code == 200, shown.text
    cells = shown.text.replace("\n", "")
    assert "<td>This repository</td><td>$0.30</td><td>$10.00 a month, $9.70 left</td>" in cells
    assert (
        "<td>Its installation (all its repositories)</td><td>$1.10</td>"
        "<td>$1.00 a month, none left (reached: the gateway refuses model requests"
    ) in cells
    # The sibling's own figures are not this repository's writers' to see.
    assert "sibling" not in shown.text


async def test_without_caps_the_month_says_so(site: Site) -> None:
    await site.create_repo("acme", "free", private=False, collaborators={"alice": "write"})
    alice = await site.sign_in("alice", next_path="/spend/acme/free")
    shown = await alice.get("/spend/acme/free")
    assert "<td>This repository</td><td>$0.00</td><td>no monthly cap</td>" in shown.text.replace(
        "\n", ""
    )
