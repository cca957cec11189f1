"""hishel's Redis storage with its reads and writes batched: a round trip for what it
awaited one command at a time.

hishel's `AsyncRedisStorage` awaits each command on its own: a cached GET that
GitHub answered 304 cost seven round trips to Redis, one answered 200 with a new
body ten; and it keeps every older answer of a URL beside the newest, each read
and revalidated again at every later GET (17 round trips after one change). On a
worker's busy event loop each round trip waits its turn behind the other tasks'
steps: the issue's read at a session's start spent most of its ~40 ms there, not
in GitHub. Here the same keys, values and TTLs are read and written in
pipelines (the entries of a key and whether their bodies are complete; a body, by
`LRANGE`; a new body, in one transaction once it is whole; an entry's removal),
and a new answer replaces the older ones in the key's index: 5, 4 and 5 round
trips (tests/github/test_http_cache_round_trips.py).

Written against hishel 1.4's key layout (pinned in pyproject.toml); its own
reading of a key (`update_entry`) and the rest are inherited as they are.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any
from uuid import UUID, uuid4

from hishel import AsyncRedisStorage, Entry, EntryMeta, Request, Response
from hishel._core._storages._async_redis import STORAGE_CHUNK_SIZE
from hishel._core._storages._packing import pack, unpack
from redis import RedisError


class BatchedRedisStorage(AsyncRedisStorage):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The entries `get_entries` found for each key: a new answer for the key ends them.
        self._seen: dict[str, list[str]] = {}

    def _key(self, kind: str, name: str) -> str:
        return f"{self._key_prefix}:{kind}:{name}"

    async def get_entries(self, key: str) -> list[Entry]:
        idx_key = self._key("idx", key)
        members: list[bytes] = list(await self._client.smembers(idx_key))  # type: ignore[misc]
        if not members:
            return []
        names = [m.decode() if isinstance(m, bytes) else m for m in members]
        self._seen[key] = names
        async with self._client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.get(self._key("entry", name))
                pipe.exists(self._key("stream_done", name))
            replies = await pipe.execute()
        result: list[Entry] = []
        for member, data, done in zip(members, replies[::2], replies[1::2], strict=True):
            if data is None:  # expired: its index entry goes too
                await self._client.srem(idx_key, member)  # type: ignore[misc]
                continue
            entry = unpack(data, kind="pair")
            if entry is None or not done:  # a body still being written
                continue
            if self._is_pair_expired(entry):
                if not self.is_soft_deleted(entry):
                    await self.remove_entry(entry.id)
                continue
            if self.is_soft_deleted(entry):
                continue
            body = self._stream_from_cache(entry.id)
            result.append(replace(entry, response=replace(entry.response, stream=body)))
        return result

    async def create_entry(
        self, request: Request, response: Response, key: str, id_: UUID | None = None
    ) -> Entry:
        """As hishel's, and the entries kept before for the key leave its index in the
        same round trip: the newest answer for a URL replaces the older ones (which
        hishel keeps, each read and revalidated again at every later GET: two entries
        of an issue made its next cached read cost 17 round trips). Those this request
        looked up go within the soft-delete TTL, as a removed entry's do, not after
        the cache's day."""
        pair_id = id_ or uuid4()
        safe_ttl_ms = self._safe_ttl_ms(request)
        assert isinstance(response.stream, AsyncIterator), "hishel passes a stream"
        body = self._save_stream(response.stream, pair_id, safe_ttl_ms)
        entry = Entry(
            id=pair_id,
            request=request,
            response=replace(response, stream=body),
            meta=EntryMeta(created_at=time.time()),
            cache_key=key.encode(),
        )
        idx_key = self._key("idx", key)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.set(self._key("entry", pair_id.hex), pack(entry, kind="pair"), px=safe_ttl_ms)
            for old in self._seen.pop(key, ()):  # as remove_entry leaves them: briefly
                for kind in ("entry", "stream", "stream_done"):
                    pipe.expire(self._key(kind, old), self._soft_delete_ttl)
            pipe.delete(idx_key)
            pipe.sadd(idx_key, pair_id.hex)
            pipe.pexpire(idx_key, safe_ttl_ms)
            await pipe.execute()
        return entry

    async def _stream_from_cache(self, entry_id: UUID) -> AsyncIterator[bytes]:
        # Every chunk but the last, the end's empty sentinel.
        stream_key = self._key("stream", entry_id.hex)
        chunks: list[bytes] = await self._client.lrange(stream_key, 0, -2)  # type: ignore[misc]
        for chunk in chunks:
            yield chunk.encode() if isinstance(chunk, str) else chunk

    async def _save_stream(
        self, stream: AsyncIterator[bytes], pair_id: UUID, safe_ttl_ms: int
    ) -> AsyncIterator[bytes]:
        """The body passed on as it comes, and kept once it is whole: all its chunks,
        the sentinel, the done mark and their TTLs in one transaction (nothing is
        written for a body too large, or one its reader stopped reading)."""
        kept: list[bytes] = []
        size, too_large = 0, False
        async for chunk in stream:
            size += len(chunk)
            too_large = too_large or (
                self._max_stream_size is not None and size > self._max_stream_size
            )
            if not too_large:
                kept.append(chunk)
            yield chunk
        if too_large:
            return
        body = b"".join(kept)
        stream_key, done_key = (
            self._key("stream", pair_id.hex),
            self._key("stream_done", pair_id.hex),
        )
        async with self._client.pipeline(transaction=True) as pipe:
            for at in range(0, len(body), STORAGE_CHUNK_SIZE):
                pipe.rpush(stream_key, body[at : at + STORAGE_CHUNK_SIZE])
            pipe.rpush(stream_key, b"")
            pipe.pexpire(stream_key, safe_ttl_ms)
            pipe.set(done_key, b"1", px=safe_ttl_ms)
            await pipe.execute()

    async def remove_entry(self, id: UUID) -> None:
        with contextlib.suppress(RedisError):  # as hishel's: a cache that failed, not a read
            data = await self._client.get(self._key("entry", id.hex))
            entry = None if data is None else unpack(data, kind="pair")
            if entry is None:
                return
            # Out of the index at once; the keys linger briefly for a reader mid-body.
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.srem(self._key("idx", entry.cache_key.decode()), id.hex)
                for kind in ("entry", "stream", "stream_done"):
                    pipe.expire(self._key(kind, id.hex), self._soft_delete_ttl)
                await pipe.execute()
