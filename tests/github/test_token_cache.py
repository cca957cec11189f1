"""Credentials cached in Redis are sealed: Redis alone gives no usable token, and
the workers that hold the App key still share one token per installation and the
HTTP cache (a 304 still answers a repeated GET)."""

from __future__ import annotations

import pytest
from ballet.github.client import GitHubAppCredentials, GitHubClients
from fake_github import API, APP_ID, INSTALLATION_ID, REPO, FakeGitHub
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_cached_tokens_are_sealed_and_still_shared(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    credentials = GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API)
    first = GitHubClients(credentials, redis).installation(INSTALLATION_ID)
    await first.call("GET", f"/repos/{REPO}")
    assert fake_github.token_requests == 1

    keys = await redis.keys("*")
    stored = [await redis.dump(key) or b"" for key in keys]
    assert len(stored) > 1, "githubkit cached nothing in Redis"
    # Neither a token nor the App's JWT, in any key (the HTTP cache's entries too).
    assert not any(b"ghs_" in value or b"eyJ" in value for value in stored)

    # Another worker with the same App key reads the sealed token: no second token.
    second = GitHubClients(credentials, redis).installation(INSTALLATION_ID)
    await second.call("GET", f"/repos/{REPO}")
    assert fake_github.token_requests == 1
    assert fake_github.requests_to("GET", f"/repos/{REPO}") == 2
