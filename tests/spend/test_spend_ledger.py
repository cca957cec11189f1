"""Each repository's and installation's spend per calendar month (UTC), in real Valkey."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from ballet.core.spend import Spend
from ballet.spend_ledger import DAYS_KEPT, KEEP, SESSION_KEPT, ModelSpend, SpendLedger
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

NOV = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
SONNET = Spend(
    requests=1,
    input_tokens=1_000,
    cache_read_tokens=20_000,
    cache_write_tokens=300,
    output_tokens=400,
    cost_usd=0.0171,
)
LOCAL = Spend(requests=1, input_tokens=50, output_tokens=5, unpriced_requests=1)


async def test_answers_add_up_per_repository_and_installation(redis: Redis) -> None:
    ledger = SpendLedger(redis)
    for repo, spend in (("acme/api", SONNET), ("acme/api", SONNET), ("acme/web", LOCAL)):
        await ledger.add(
            repo=repo,
            installation_id=7,
            provider="anthropic" if spend is SONNET else "openai",
            model="claude-sonnet-4-5-20250929" if spend is SONNET else "qwen-local",
            spend=spend,
            at=NOV,
        )

    api, installation = await ledger.month(repo="acme/api", installation_id=7, at=NOV)
    web, _ = await ledger.month(repo="acme/web", installation_id=7, at=NOV)

    assert api == SONNET + SONNET
    assert web == LOCAL
    assert installation == SONNET + SONNET + LOCAL
    assert installation.price_unknown
    other, nobody = await ledger.month(repo="acme/other", installation_id=8, at=NOV)
    assert (other, nobody) == (Spend(), Spend())


async def test_costs_sum_exactly(redis: Redis) -> None:
    ledger = SpendLedger(redis)
    for _ in range(10):
        await ledger.add(
            repo="acme/api",
            installation_id=None,
            provider="openai",
            model="gpt-5",
            spend=Spend(requests=1, cost_usd=0.1),
            at=NOV,
        )
    repository, installation = await ledger.month(repo="acme/api", installation_id=None, at=NOV)
    assert repository.cost_usd == 1.0  # ten floats of 0.1 sum to 0.9999999999999999
    assert installation == Spend()


async def test_a_second_before_midnight_utc_and_midnight_are_different_months(
    redis: Redis,
) -> None:
    ledger = SpendLedger(redis)
    last_second = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
    midnight = datetime(2027, 1, 1, 0, 0, 0, tzinfo=UTC)
    # The same instants seen from UTC+2: the month is UTC's, not the clock's.
    cest = timezone(timedelta(hours=2))
    for at in (last_second.astimezone(cest), midnight.astimezone(cest)):
        await ledger.add(
            repo="acme/api",
            installation_id=7,
            provider="openai",
            model="gpt-5",
            spend=Spend(requests=1, cost_usd=2.5),
            at=at,
        )

    december = await ledger.month(repo="acme/api", installation_id=7, at=last_second)
    january = await ledger.month(repo="acme/api", installation_id=7, at=midnight)
    assert december == january == (Spend(requests=1, cost_usd=2.5),) * 2
    months = await ledger.months(repo="acme/api", at=midnight, count=3)
    assert [(m.month, m.total.requests) for m in months] == [
        ("2027-01", 1),
        ("2026-12", 1),
        ("2026-11", 0),
    ]


async def test_months_say_models_and_repositories_and_keys_expire(redis: Redis) -> None:
    ledger = SpendLedger(redis, prefix="ballet:spend")
    entries = [
        ("acme/api", "anthropic", "claude-sonnet-4-5-20250929", SONNET),
        ("acme/web", "openai", "qwen-local", LOCAL),
        ("acme/web", "openai", None, LOCAL),
    ]
    for repo, provider, model, spend in entries:
        await ledger.add(
            repo=repo, installation_id=7, provider=provider, model=model, spend=spend, at=NOV
        )

    [november] = await ledger.months(installation_id=7, at=NOV, count=1)
    assert november.month == "2026-11"
    assert november.total == SONNET + LOCAL + LOCAL
    assert november.repositories == ("acme/api", "acme/web")
    assert november.by_model == (
        ModelSpend("anthropic", "claude-sonnet-4-5-20250929", SONNET),
        ModelSpend("openai", None, LOCAL),
        ModelSpend("openai", "qwen-local", LOCAL),
    )
    [api] = await ledger.months(repo="acme/api", at=NOV, count=1)
    assert api.by_model == (ModelSpend("anthropic", "claude-sonnet-4-5-20250929", SONNET),)

    keys = [key async for key in redis.scan_iter(match="ballet:spend:2026-*")]
    assert len(keys) == 7  # per repository and installation: totals, models; one set
    for key in keys:
        ttl = await redis.ttl(key)
        assert KEEP.total_seconds() - 60 < ttl <= KEEP.total_seconds()
    # The fleet page's cost per repository and day: only where something was priced.
    [day] = [key async for key in redis.scan_iter(match="ballet:spend:day:*")]
    assert day == b"ballet:spend:day:2026-11-20:repository:acme/api"
    assert DAYS_KEPT.total_seconds() - 60 < await redis.ttl(day) <= DAYS_KEPT.total_seconds()
    assert await ledger.days(["acme/api", "acme/web"], NOV, 1) == {
        "acme/api": [SONNET.cost_usd],
        "acme/web": [0.0],
    }


async def test_months_wants_one_repository_or_one_installation(redis: Redis) -> None:
    ledger = SpendLedger(redis)
    with pytest.raises(ValueError, match="either repo or installation_id"):
        await ledger.months(at=NOV)
    with pytest.raises(ValueError, match="either repo or installation_id"):
        await ledger.months(repo="acme/api", installation_id=7, at=NOV)


async def test_a_sessions_own_spend_is_kept_apart_for_its_crash_report(redis: Redis) -> None:
    ledger = SpendLedger(redis)
    for session, spend in (("job-a", SONNET), ("job-a", LOCAL), ("job-b", SONNET), (None, LOCAL)):
        await ledger.add(
            repo="acme/api",
            installation_id=7,
            provider="anthropic",
            model="m",
            spend=spend,
            at=NOV,
            session=session,
        )
    assert await ledger.session("job-a") == SONNET + LOCAL
    assert await ledger.session("job-b") == SONNET
    assert await ledger.session("job-never") == Spend()
    repository, _ = await ledger.month(repo="acme/api", installation_id=7, at=NOV)
    assert repository == SONNET + SONNET + LOCAL + LOCAL  # the month counts every answer
    assert 0 < await redis.ttl("ballet:spend:session:job-a") <= SESSION_KEPT.total_seconds()
