"""The HTTP cache's round trips to Redis per cached GET (github/batched_storage.py):
on a worker's busy event loop each one waits its turn behind the other tasks, so
they are what a cached read costs. Counted on the wire (each write of commands to
Valkey's socket is one round trip), with what the cache answers read back whole."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ballet.github.client import GitHubAppCredentials, GitHubClient, GitHubClients
from fake_github import API, APP_ID, INSTALLATION_ID, REPO, FakeGitHub
from redis.asyncio import Connection, Redis

pytestmark = pytest.mark.anyio

ISSUE = f"/repos/{REPO}/issues/7"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CountingConnection(Connection):
    """A real connection that counts its writes to the socket: one a round trip (a
    pipeline's commands go out in one)."""

    sent = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        await super().send_packed_command(command, check_health)


@pytest.fixture
async def counted(github_redis_url: str, redis: Redis) -> AsyncIterator[Redis]:
    client = Redis.from_url(github_redis_url, connection_class=CountingConnection)
    try:
        yield client
    finally:
        await client.aclose()


async def trips(client: GitHubClient) -> tuple[int, Any]:
    before = CountingConnection.sent
    body = await client.json("GET", ISSUE)
    return CountingConnection.sent - before, body


async def test_a_cached_get_costs_a_few_round_trips_whether_revalidated_or_changed(
    counted: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    issue = fake_github.add_issue(REPO, 7, title="t", body="the issue's text " * 200)
    credentials = GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API)
    client = GitHubClients(credentials, counted).installation(INSTALLATION_ID)
    await client.json("GET", ISSUE)  # the token minted, the issue cached

    # Unchanged: GitHub answers 304 and the cache its body (hishel alone: 7 round trips).
    spent, body = await trips(client)
    assert body["body"] == issue.body
    assert fake_github.requests_to("GET", ISSUE) == 2
    assert spent <= 5, spent

    # Changed: a new body is kept in place of the old one (hishel alone: 10).
    issue.body = "edited " * 300
    spent, body = await trips(client)
    assert body["body"] == issue.body
    assert spent <= 4, spent
    # And it is what the cache answers next, the old entry no longer read and
    # revalidated beside it (hishel alone: 17, and more at each change)...
    spent, body = await trips(client)
    assert body["body"] == issue.body
    assert spent <= 5, spent
    # ...nor kept for the cache's day: only the newest answer's keys live on.
    lives = [await counted.pttl(key) async for key in counted.scan_iter(match="ballet:gh:*")]
    day_long = [ms for ms in lives if ms > 3_600_000]
    assert len(day_long) == 4, lives  # the entry, its body, its done mark, the index


async def test_a_body_of_several_stored_chunks_reads_back_whole(
    counted: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    # Random text compresses to about half: over hishel's 128 KB a stored chunk.
    issue = fake_github.add_issue(REPO, 7, title="t", body=secrets.token_hex(300_000))
    credentials = GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API)
    client = GitHubClients(credentials, counted).installation(INSTALLATION_ID)
    await client.json("GET", ISSUE)
    stored = [key async for key in counted.scan_iter(match="*:stream:*")]
    assert len(stored) == 1 and await counted.llen(stored[0]) >= 4  # type: ignore[misc]
    spent, body = await trips(client)
    print("third", spent)
    assert body["body"] == issue.body and spent <= 9
