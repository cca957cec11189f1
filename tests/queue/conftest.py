"""Fixtures of the queue area: a real Valkey database of its own and a consumer
that records what it is handed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from area_fixtures import area_redis_url, emptied_pool
from arq.connections import ArqRedis
from ballet.settings import Settings

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 3


@pytest.fixture
def queue_redis_url(redis_url: str) -> str:
    return area_redis_url(redis_url, REDIS_DB)


@pytest.fixture
def settings(queue_redis_url: str, tmp_path: Path) -> Settings:
    return Settings(
        webhook_secret="queue-secret",
        redis_url=queue_redis_url,
        data_dir=tmp_path,
        delivery_retry_seconds=0,
    )


@pytest.fixture
async def redis(queue_redis_url: str) -> AsyncIterator[ArqRedis]:
    async with emptied_pool(queue_redis_url) as pool:
        yield pool
