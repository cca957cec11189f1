"""Fixtures of the spend area: a real Valkey database of its own, emptied before each test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from area_fixtures import area_redis_url
from redis.asyncio import Redis

# This area's own Redis database; other areas use others.
REDIS_DB = 14


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(area_redis_url(redis_url, REDIS_DB))
    await client.flushdb()
    try:
        yield client
    finally:
        await client.aclose()
