"""`/fleet`: each viewer sees only the repositories they may read, and spend only of those
they may write to; sessions, waits for a person, rework per stage and the month's spend
against its cap come from the ticket index and the spend ledger."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from ballet.core.events import SessionFinished
from ballet.core.machine import advance
from ballet.core.record import Record, Waiting
from ballet.core.report import Report
from ballet.core.spend import Spend
from ballet.spend_ledger import SpendLedger
from ballet.tickets.store import RecordStore
from watch_kit import Site, new_ticket, running_site

pytestmark = pytest.mark.anyio
NOW = datetime.now(UTC) - timedelta(hours=1)


@pytest.fixture
async def capped_site(watch_redis_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    async with running_site(
        tmp_path, watch_redis_url, budget_repository_monthly_usd=10.0
    ) as running:
        yield running


async def started(site: Site, repo: str, number: int, title: str) -> Record:
    return await new_ticket(site, repo, number, title, now=NOW, tally=True)


async def finished(site: Site, record: Record, outcome: str, minutes: int) -> Record:
    run = record.open_run
    assert run is not None and run.job_key is not None
    after, _ = advance(
        record,
        SessionFinished(
            now=NOW + timedelta(minutes=minutes),
            job_key=run.job_key,
            stage=run.stage,
            iteration=run.iteration,
            attempt=run.attempt,
            report=Report(outcome=outcome, summary="s"),
        ),
    )
    await RecordStore(site.redis).commit(after, [], None, before=record, tally=True)
    return after


async def asks(site: Site, record: Record, question: str) -> None:
    waiting = Waiting(kind="question", reason=question, since=NOW, command="/ballet answer")
    asked = record.model_copy(
        update={"status": "waiting", "waiting": waiting, "version": record.version + 1}
    )
    await RecordStore(site.redis).commit(asked, [], None)


async def test_each_viewer_sees_only_what_they_may_read(capped_site: Site) -> None:
    site = capped_site
    await site.create_repo("acme", "open", private=False, collaborators={"bob": "read"})
    await site.create_repo("acme", "secret", private=True, collaborators={"bob": "write"})
    await started(site, "acme/open", 1, "Public work")
    secret = await started(site, "acme/secret", 2, "Secret work")
    secret = await finished(site, secret, "done", 5)  # implement done: review runs
    secret = await finished(site, secret, "changes_requested", 9)  # sent back
    waiting = await started(site, "acme/secret", 3, "Secret question")
    await asks(site, waiting, "which table to use")
    await SpendLedger(site.redis).add(
        repo="acme/secret",
        installation_id=None,
        provider="anthropic",
        model="m",
        spend=Spend(requests=1, input_tokens=10, output_tokens=5, cost_usd=1.5),
        at=NOW,
    )

    quick = await started(site, "acme/open", 4, "Quick one")
    quick = quick.model_copy(
        update={"status": "done", "version": 2, "updated_at": NOW + timedelta(minutes=30)}
    )
    await RecordStore(site.redis).commit(quick, [], None)

    async with site.browser() as anonymous:
        seen = await anonymous.get("/fleet")
    assert seen.status_code == 200
    assert "acme/open#1" in seen.text and "Public work" in seen.text
    assert "acme/secret" not in seen.text and "Secret" not in seen.text
    assert "No ticket you can see waits for a person." in seen.text
    assert "No model spend this month" in seen.text
    assert f"{NOW:%Y-%m-%d}: started 2<" in seen.text  # the chart's figures
    assert "of the 1 ticket done" in seen.text and "<strong>p50</strong> 30m" in seen.text

    bob = await site.sign_in("bob", "/fleet")
    try:
        mine = (await bob.get("/fleet")).text
    finally:
        await bob.aclose()
    # Sessions now: the secret ticket's implement (iteration 2) in the default pool.
    assert "acme/secret#2" in mine and "acme/open#1" in mine
    assert "<td>implement</td><td>default</td>" in mine
    assert f"{NOW:%Y-%m-%d}: started 4<" in mine and "of the 1 ticket done" in mine
    # Waiting for a person, with what for.
    assert "acme/secret#3" in mine and "which table to use" in mine
    # `ballet stats`' table: the review sent the ticket back once in one run.
    assert "<tr><td>review</td><td>1</td>" in mine and "<td>100%</td>" in mine
    # Spend for a writer: this month's $1.50 against the $10 cap.
    assert 'href="/spend/acme/secret"' in mine and "$1.50" in mine
    assert "15% of $10.00" in mine
