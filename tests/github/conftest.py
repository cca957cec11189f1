"""Fixtures of the GitHub edge: the shared fake GitHub on respx, a real Valkey, an App key."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from area_fixtures import area_redis_url, rsa_private_key_pem
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials, ServerErrorRetry
from fake_github import API, APP_ID, REPO, FakeGitHub
from redis.asyncio import Redis

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 9


@pytest.fixture(scope="session")
def app_private_key() -> str:
    return rsa_private_key_pem()


@pytest.fixture
def github_redis_url(redis_url: str) -> str:
    return area_redis_url(redis_url, REDIS_DB)


@pytest.fixture
async def redis(github_redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(github_redis_url)
    await client.flushdb()
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_repo(REPO, collaborators={"Codertocat": "admin", "reader": "read"})
    with fake.serving():
        yield fake


@pytest.fixture
def forges(app_private_key: str, redis: Redis, fake_github: FakeGitHub) -> GitHubApp:
    return GitHubApp(
        GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API),
        redis,
        # Spacing is a production concern; tests keep it short but non-zero.
        write_spacing_seconds=0.01,
        retry=ServerErrorRetry(max_retries=2, base_seconds=0.01),
    )
