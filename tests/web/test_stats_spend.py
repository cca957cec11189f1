"""`ballet stats` shows this month's model spend per repository and installation, as
the spend ledger holds it in a real Valkey, from a process of its own."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta

import pytest
from arq.connections import ArqRedis
from ballet.core.spend import Spend
from ballet.spend_ledger import SpendLedger, month_of

pytestmark = pytest.mark.anyio

PRICED = Spend(
    requests=2,
    input_tokens=100,
    cache_read_tokens=40,
    cache_write_tokens=5,
    output_tokens=30,
    cost_usd=0.25,
)
UNPRICED = Spend(requests=1, input_tokens=7, output_tokens=3, unpriced_requests=1)


async def stats(redis_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": redis_url}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ballet", "stats", *args,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def spent(
    ledger: SpendLedger, repo: str, installation: int, spend: Spend, at: datetime
) -> None:
    await ledger.add(
        repo=repo, installation_id=installation, provider="anthropic", model="m", spend=spend, at=at
    )


async def test_this_months_spend_per_repository_and_installation(
    redis: ArqRedis, web_redis_url: str
) -> None:
    now = datetime.now(UTC)
    ledger = SpendLedger(redis)
    await spent(ledger, "acme/app", 77, PRICED, now)
    await spent(ledger, "acme/app", 77, PRICED, now)
    await spent(ledger, "acme/lib", 77, UNPRICED, now)
    await spent(ledger, "solo/tool", 91, PRICED, now)
    await spent(ledger, "old/repo", 91, PRICED, now - timedelta(days=40))  # another month

    assert await ledger.spenders(at=now) == (["acme/app", "acme/lib", "solo/tool"], [77, 91])

    table = (await stats(web_redis_url, "--spend")).splitlines()
    assert table[0].split()[:3] == ["model", "spend", month_of(now)]
    rows = {line.split("  ")[0].strip(): line for line in table[1:]}
    assert set(rows) == {
        "repository acme/app",
        "repository acme/lib",
        "repository solo/tool",
        "installation 77",
        "installation 91",
    }
    assert rows["repository acme/app"].split()[2:] == ["4", "200", "80", "10", "60", "$0.50"]
    assert rows["repository acme/lib"].endswith("price unknown")
    assert rows["installation 77"].endswith("$0.50 + price unknown for 1 request")

    mine = json.loads(await stats(web_redis_url, "--spend", "--json", "--repo", "acme/lib"))
    assert mine["month"] == month_of(now)
    assert [(row["scope"], row["name"]) for row in mine["spend"]] == [
        ("repository", "acme/lib"),
        ("installation", "77"),
    ]
    assert mine["spend"][0]["unpriced_requests"] == 1

    # The usual view: the stage table (none here), then the month's spend.
    plain = await stats(web_redis_url)
    assert "no finished stage runs" in plain and "repository solo/tool" in plain


async def test_no_spend_says_so(redis: ArqRedis, web_redis_url: str) -> None:
    out = await stats(web_redis_url, "--spend")
    assert out == f"no model spend metered in {month_of(datetime.now(UTC))} (UTC)\n"
    assert "model spend" not in await stats(web_redis_url)
