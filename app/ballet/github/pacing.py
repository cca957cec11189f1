"""Pacing of content-creating requests, per App installation, across processes.

GitHub's secondary rate limits punish bursts of writes: it asks for writes to
be made serially with a pause between them, and caps content creation at
about 80 requests a minute. Every worker shares one Redis, so the pacing is
kept there: a lock per installation makes writes serial, and the time of the
last write spaces them. A spacing of 0.75 s is exactly 80 writes a minute.

It plugs into githubkit as its throttler, so every request the adapter makes
(including retries) passes through it. Reads are not paced.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
from githubkit.throttling import BaseThrottler
from redis.asyncio import Redis

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
DEFAULT_SPACING_SECONDS = 0.75
# A write holding the lock longer than this is presumed dead (its process
# crashed); the lock expires so the installation is not wedged.
LOCK_TIMEOUT_SECONDS = 60.0


class WritePacer(BaseThrottler):
    def __init__(
        self,
        redis: Redis,
        installation_id: int,
        *,
        spacing_seconds: float = DEFAULT_SPACING_SECONDS,
        key_prefix: str = "ballet:pace",
    ) -> None:
        self._redis = redis
        self._spacing = spacing_seconds
        self._lock_key = f"{key_prefix}:{installation_id}:lock"
        self._last_key = f"{key_prefix}:{installation_id}:last"

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        raise RuntimeError("Ballet's GitHub adapter is async only")
        yield  # pragma: no cover

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        if request.method.upper() not in WRITE_METHODS:
            yield
            return
        lock = self._redis.lock(
            self._lock_key, timeout=LOCK_TIMEOUT_SECONDS, blocking_timeout=LOCK_TIMEOUT_SECONDS * 2
        )
        async with lock:
            await self._wait_for_spacing()
            try:
                yield
            finally:
                # Spacing counts from the end of a write: GitHub's own advice
                # is a pause between requests, not between their starts.
                await self._redis.set(self._last_key, repr(time.time()), ex=60)

    async def _wait_for_spacing(self) -> None:
        raw = await self._redis.get(self._last_key)
        if raw is None:
            return
        wait = float(raw) + self._spacing - time.time()
        if wait > 0:
            await asyncio.sleep(min(wait, self._spacing))
