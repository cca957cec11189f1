"""Fixtures of the web area: settings on a real Valkey database of its own, the
real app over ASGI, and signed deliveries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from area_fixtures import area_redis_url, emptied_pool
from arq.connections import ArqRedis
from ballet.settings import Settings
from ballet.web import create_app
from webhook_signing import SECRET

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 2


@pytest.fixture
def web_redis_url(redis_url: str) -> str:
    return area_redis_url(redis_url, REDIS_DB)


@pytest.fixture
def settings(web_redis_url: str, tmp_path: Path) -> Settings:
    return Settings(webhook_secret=SECRET, redis_url=web_redis_url, data_dir=tmp_path)


@pytest.fixture
async def redis(web_redis_url: str) -> AsyncIterator[ArqRedis]:
    async with emptied_pool(web_redis_url) as pool:
        yield pool


@pytest.fixture
async def client(settings: Settings, redis: ArqRedis) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://ballet") as http,
    ):
        yield http
