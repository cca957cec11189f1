"""Fixtures of the pages' area: the sandbox, Ballet's web app and a Valkey database of
its own (emptied before each test); with a worker where the engine must act."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from area_fixtures import area_redis_url
from watch_kit import Site, running_site

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 12


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def watch_redis_url(redis_url: str) -> str:
    return area_redis_url(redis_url, REDIS_DB)


@pytest.fixture
async def site(watch_redis_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    """The pages without a worker: whatever a page queues stays queued, for all to see."""
    async with running_site(tmp_path, watch_redis_url) as running:
        yield running


@pytest.fixture
async def engine_site(watch_redis_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    """The pages with a worker applying what they queue, and running real sessions."""
    async with running_site(tmp_path, watch_redis_url, worker=True) as running:
        yield running
