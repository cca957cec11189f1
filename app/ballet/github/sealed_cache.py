"""githubkit's caches in Redis, with every credential in them sealed.

githubkit keeps two things in its cache strategy, and both hold credentials:
- its token cache: installation tokens and the App's JWT, as they are;
- hishel's HTTP cache: each response with the request that fetched it, whose
  `Authorization` header is an installation token (GitHub's responses vary on
  it, so hishel compares it when it looks an entry up).
Here both are sealed with AES-GCM under a key derived from the App's private
key: whoever reads Redis or its append-only file without that key (a session
that escaped, a backup, a shared Redis) finds no usable token, while every
worker holding the key shares one token per installation and one HTTP cache.

The cached bodies are kept zlib-compressed: a ticket's issue, pull request,
comments and check runs stay cached for a day after it ends (about 80 KB a
ticket as GitHub sends them, a fifth of that compressed).
"""

from __future__ import annotations

import base64
import os
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import timedelta
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from githubkit.cache import AsyncRedisCacheStrategy
from githubkit.cache.redis import AsyncRedisCache
from hishel import AsyncBaseStorage, Entry, Headers, Request, Response
from redis.asyncio import Redis

from ballet.github.batched_storage import BatchedRedisStorage

# githubkit's strategy keeps cached bodies an hour; a day keeps .ballet.yml
# and pull requests revalidating with 304s across a working day.
HTTP_CACHE_TTL_SECONDS = 24 * 3600
SEALED = "ballet-sealed:"
# Leads a compressed body in the cache; a body without it (kept before bodies were
# compressed) is served as it is. No JSON body starts with a NUL byte.
PACKED = b"\x00ballet-zlib\x00"


class Sealer:
    """AES-GCM under a key derived from the App's private key; `context` binds a
    sealed value to where it is kept, so it cannot be moved to another key."""

    def __init__(self, private_key: str) -> None:
        key = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"ballet token cache v1"
        ).derive(private_key.encode())
        self._aead = AESGCM(key)

    def seal(self, value: str, context: str) -> str:
        nonce = os.urandom(12)
        return base64.b64encode(
            nonce + self._aead.encrypt(nonce, value.encode(), context.encode())
        ).decode()

    def open(self, sealed: str, context: str) -> str | None:
        """The value, or None when it was not sealed under this key and context."""
        try:
            raw = base64.b64decode(sealed)
            return self._aead.decrypt(raw[:12], raw[12:], context.encode()).decode()
        except (ValueError, InvalidTag):
            return None


class SealedCacheStrategy(AsyncRedisCacheStrategy):
    """The cache strategy githubkit is given: Redis, sealed."""

    def __init__(self, client: Redis, prefix: str, *, private_key: str) -> None:
        super().__init__(client, prefix)
        self._sealer = Sealer(private_key)
        self._held: dict[str, tuple[str, float]] = {}  # see _SealedTokenCache

    async def get_async_cache_storage(self) -> AsyncRedisCache:
        return _SealedTokenCache(self.client, self.prefix, self._sealer, self._held)

    async def get_async_hishel_storage(self) -> AsyncBaseStorage:
        return _SealedHttpStorage(
            self._sealer,
            client=self.client,
            key_prefix=self.prefix or "hishel",
            ttl=HTTP_CACHE_TTL_SECONDS,
        )


class _SealedTokenCache(AsyncRedisCache):
    """The tokens in Redis, sealed; and each one this process read or wrote `held`
    in its memory until it expires there too: githubkit asks for the token before
    every request, and a round trip and an unsealing each time were a quarter of a
    request's cost to the worker. A token another process mints meanwhile does not
    make this one invalid."""

    def __init__(
        self,
        client: Redis,
        prefix: str | None,
        sealer: Sealer,
        held: dict[str, tuple[str, float]],
    ) -> None:
        super().__init__(client, prefix)
        self._sealer = sealer
        self._held = held

    async def aget(self, key: str) -> str | None:
        value, until = self._held.get(key, ("", 0.0))
        if time.monotonic() < until:
            return value
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self._get_key(key))
            pipe.pttl(self._get_key(key))
            sealed, ttl_ms = await pipe.execute()
        # Written in the clear or under another key: None, and githubkit fetches anew.
        if isinstance(sealed, bytes):
            sealed = sealed.decode()
        opened = None if sealed is None else self._sealer.open(sealed, key)
        if opened is not None and ttl_ms > 0:
            self._held[key] = (opened, time.monotonic() + ttl_ms / 1000)
        return opened

    async def aset(self, key: str, value: str, ex: timedelta) -> None:
        await super().aset(key, self._sealer.seal(value, key), ex)
        self._held[key] = (value, time.monotonic() + ex.total_seconds())


class _SealedHttpStorage(BatchedRedisStorage):
    """hishel's Redis storage (in fewer round trips), the stored requests'
    Authorization sealed."""

    def __init__(self, sealer: Sealer, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._sealer = sealer

    # githubkit closes the cache storage after every request made outside a
    # client context, and hishel's close closes the Redis client: that would
    # cut every connection of the worker's shared pool under other jobs' feet
    # ("Connection closed by server"). The pool belongs to the worker.
    async def close(self) -> None:
        return None

    async def create_entry(
        self, request: Request, response: Response, key: str, id_: UUID | None = None
    ) -> Entry:
        assert isinstance(response.stream, AsyncIterator)
        packed = replace(response, stream=packing(response.stream))
        entry = await super().create_entry(self._headers(request, seal=True), packed, key, id_)
        return replace(entry, request=request, response=_unpacked_response(entry.response))

    async def get_entries(self, key: str) -> list[Entry]:
        entries = await super().get_entries(key)
        return [
            replace(
                e,
                request=self._headers(e.request, seal=False),
                response=_unpacked_response(e.response),
            )
            for e in entries
        ]

    async def update_entry(
        self, id: UUID, new_entry: Entry | Callable[[Entry], Entry]
    ) -> Entry | None:
        def sealed(existing: Entry) -> Entry:
            opened = replace(existing, request=self._headers(existing.request, seal=False))
            updated = new_entry(opened) if callable(new_entry) else new_entry
            return replace(updated, request=self._headers(updated.request, seal=True))

        entry = await super().update_entry(id, sealed)
        return (
            None
            if entry is None
            else replace(entry, request=self._headers(entry.request, seal=False))
        )

    def _headers(self, request: Request, *, seal: bool) -> Request:
        values = request.headers.get_list("authorization")
        if not values:
            return request
        changed = []
        for value in values:
            if seal and not value.startswith(SEALED):
                value = SEALED + self._sealer.seal(value, "authorization")
            elif not seal and value.startswith(SEALED):
                value = self._sealer.open(value.removeprefix(SEALED), "authorization") or ""
            changed.append(value)
        kept = {k: request.headers.get_list(k) or [] for k in request.headers}
        return replace(request, headers=Headers({**kept, "authorization": changed}))


async def packing(stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The body as the cache keeps it: PACKED, then the body compressed."""
    compressor = zlib.compressobj(6)
    yield PACKED
    async for chunk in stream:
        if out := compressor.compress(chunk):
            yield out
    yield compressor.flush()


async def unpacking(stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The body as GitHub sent it, from what the cache keeps (compressed or not)."""
    head: bytes | None = b""  # the start, until it tells whether the body is packed
    decompressor: zlib._Decompress | None = None
    async for chunk in stream:
        if head is not None:
            head += chunk
            if len(head) < len(PACKED) and PACKED.startswith(head):
                continue  # too short yet to tell
            if head.startswith(PACKED):
                decompressor, chunk = zlib.decompressobj(), head[len(PACKED) :]
            else:
                chunk = head  # kept before bodies were compressed
            head = None
        if decompressor is None:
            yield chunk
        elif out := decompressor.decompress(chunk):
            yield out
    if decompressor is not None:
        if out := decompressor.flush():
            yield out
    elif head:
        yield head


def _unpacked_response(response: Response) -> Response:
    if not isinstance(response.stream, AsyncIterator):
        return response
    return replace(response, stream=unpacking(response.stream))
