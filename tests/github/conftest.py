"""Fixtures of the GitHub edge: the shared fake GitHub on respx, a real Valkey, an App key."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
import respx
from ballet.github.github_forge import GitHubAppCredentials, GitHubForges, ServerErrorRetry
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from edge_fake_github import API, APP_ID, REPO, FakeGitHub
from redis.asyncio import Redis

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 9


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def app_private_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def github_redis_url(redis_url: str) -> str:
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{REDIS_DB}", "", ""))


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
    with respx.mock(base_url=API, assert_all_called=False) as router:
        router.route().mock(side_effect=fake)
        yield fake


@pytest.fixture
def forges(app_private_key: str, redis: Redis, fake_github: FakeGitHub) -> GitHubForges:
    return GitHubForges(
        GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API),
        redis,
        # Spacing is a production concern; tests keep it short but non-zero.
        write_spacing_seconds=0.01,
        retry=ServerErrorRetry(max_retries=2, base_seconds=0.01),
    )
