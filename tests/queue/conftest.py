"""Fixtures of the queue area: a real Valkey database of its own and a consumer
that records what it is handed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from arq.connections import ArqRedis
from ballet.queue import connect
from ballet.settings import Settings

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def queue_redis_url(redis_url: str) -> str:
    return urlunsplit(urlsplit(redis_url)._replace(path=f"/{REDIS_DB}"))


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
    pool = await connect(queue_redis_url)
    await pool.flushdb()
    yield pool
    await pool.aclose(close_connection_pool=True)
