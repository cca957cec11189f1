"""Credentials cached in Redis are sealed: Redis alone gives no usable token, and
the workers that hold the App key still share one token per installation and the
HTTP cache (a 304 still answers a repeated GET)."""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator

import pytest
from ballet.github.client import GitHubAppCredentials, GitHubClients
from ballet.github.sealed_cache import PACKED, packing, unpacking
from fake_github import API, APP_ID, INSTALLATION_ID, REPO, FakeGitHub
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def stored_values(redis: Redis) -> list[bytes]:
    """Every value in Redis as a reader of it gets it, compressed entries opened: not
    DUMP's serialisation, which may compress a value (hiding a token in it) or hold
    bytes that merely look like one."""
    values: list[bytes] = []
    for key in await redis.keys("*"):
        kind = (await redis.type(key)).decode()
        if kind == "string":
            values.append(await redis.get(key) or b"")
        elif kind == "list":
            values += await redis.lrange(key, 0, -1)
        elif kind == "hash":
            values += [k + b"=" + v for k, v in (await redis.hgetall(key)).items()]
        elif kind == "set":
            values += await redis.smembers(key)
        elif kind == "zset":
            values += await redis.zrange(key, 0, -1)
        else:
            raise AssertionError(f"{key!r} is a {kind}, which this test cannot read")
    return [zlib.decompress(v[len(PACKED) :]) if v.startswith(PACKED) else v for v in values]


async def test_cached_tokens_are_sealed_and_still_shared(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    credentials = GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API)
    first = GitHubClients(credentials, redis).installation(INSTALLATION_ID)
    await first.call("GET", f"/repos/{REPO}")
    assert fake_github.token_requests == 1

    stored = await stored_values(redis)
    assert len(stored) > 1, "githubkit cached nothing in Redis"
    # Neither the token (the fake's `ghs_<installation>_<n>`) nor the App's JWT (a
    # JSON header, then a JSON payload: `eyJ….eyJ…`), in any key, the HTTP cache's
    # entries too. Sealed values are random base64: a bare "eyJ" turns up by chance.
    leaked = re.compile(rb"ghs_%d_|eyJ[\w-]+\.eyJ" % INSTALLATION_ID)
    assert not any(leaked.search(value) for value in stored)

    # Another worker with the same App key reads the sealed token: no second token.
    second = GitHubClients(credentials, redis).installation(INSTALLATION_ID)
    await second.call("GET", f"/repos/{REPO}")
    assert fake_github.token_requests == 1
    assert fake_github.requests_to("GET", f"/repos/{REPO}") == 2


async def test_a_worker_holds_its_token_until_it_expires_not_asking_redis_each_time(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    credentials = GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API)
    client = GitHubClients(credentials, redis).installation(INSTALLATION_ID)
    await client.call("GET", f"/repos/{REPO}")
    assert fake_github.token_requests == 1
    tokens = [key async for key in redis.scan_iter("*") if b"installation" in key.lower()]
    assert tokens, "no installation token was cached in Redis"
    await redis.delete(*tokens)  # read from Redis again, it would be minted again
    await client.call("GET", f"/repos/{REPO}")
    assert fake_github.token_requests == 1


async def test_cached_bodies_are_kept_compressed_and_read_back_whole(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    # A finished ticket's responses stay cached for a day: compressed, they cost a
    # fraction of what GitHub sent.
    fake_github.add_issue(REPO, 7, title="Big", body="multiply six by seven\n" * 2000)
    credentials = GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API)
    first = (
        await GitHubClients(credentials, redis)
        .installation(INSTALLATION_ID)
        .call("GET", f"/repos/{REPO}/issues/7")
    )
    body = first.content
    assert len(body) > 40_000
    streams = [key async for key in redis.scan_iter("*:stream:*")]
    kept = [b"".join(await redis.lrange(key, 0, -1)) for key in streams]
    ours = [value for value in kept if value.startswith(PACKED)]
    assert len(ours) == 1 and len(ours[0]) < len(body) / 10, [len(v) for v in kept]
    assert zlib.decompress(ours[0][len(PACKED) :]) == body

    # Another worker's GET is answered from the cache (or by a 304) with the same body.
    second = (
        await GitHubClients(credentials, redis)
        .installation(INSTALLATION_ID)
        .call("GET", f"/repos/{REPO}/issues/7")
    )
    assert second.content == body
    assert fake_github.requests_to("GET", f"/repos/{REPO}/issues/7") <= 2


async def _chunks(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize(
    "chunks",
    [
        (b'{"a": ', b"1}"),  # kept before bodies were compressed: served as it is
        (b"{",),
        (),
    ],
)
async def test_bodies_cached_uncompressed_are_served_as_they_are(
    chunks: tuple[bytes, ...],
) -> None:
    assert b"".join([c async for c in unpacking(_chunks(*chunks))]) == b"".join(chunks)


async def test_a_compressed_body_reads_back_however_it_is_split() -> None:
    body = b'{"number": 7, "body": "' + b"seven " * 5000 + b'"}'
    packed = b"".join([c async for c in packing(_chunks(body[:10], body[10:]))])
    for size in (1, 3, len(PACKED), 4096, len(packed)):
        pieces = [packed[i : i + size] for i in range(0, len(packed), size)]
        assert b"".join([c async for c in unpacking(_chunks(*pieces))]) == body
