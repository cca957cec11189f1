"""Pacing of content-creating requests, per App installation, across processes.

GitHub's secondary rate limits punish bursts of writes: it asks for writes to
be made serially with a pause between them, and caps content creation at
about 80 requests a minute. Every worker shares one Redis, so the pacing is
kept there. A spacing of 0.75 s is exactly 80 writes a minute.

Each write *reserves* its start time: one atomic script reads the
installation's next free slot (by Redis's clock, so workers on several
machines agree), takes it and moves it on by the spacing. Writers are served
in the order they asked, with no polling and no lock for a newcomer to win
unfairly, so no write starves behind a burst of others. A lock still keeps
writes serial when one takes longer than the spacing.

A write whose slot is further away than `max_wait_seconds` does not wait in
its job (holding the ticket's lock and a worker slot for minutes): it
reserves nothing and raises `RateLimited` with the backlog's length, so the
job is deferred to then and resumes at the same effect (the outbox). That is
how a burst of tickets in one installation waits in the queue, not in jobs.

It plugs into githubkit as its throttler, so every request the adapter makes
(including retries) passes through it. Reads are not paced.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
from githubkit.throttling import BaseThrottler
from redis.asyncio import Redis

from ballet.github.forge import RateLimited

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
DEFAULT_SPACING_SECONDS = 0.75
# A write waits in its job for at most this long; a longer backlog defers the job.
DEFAULT_MAX_WAIT_SECONDS = 15.0
# A write holding the lock longer than this is presumed dead (its process
# crashed); the lock expires so the installation is not wedged.
LOCK_TIMEOUT_SECONDS = 60.0

# KEYS[1]: the installation's next free slot (seconds, Redis clock).
# ARGV: spacing, max wait. Returns {reserved (1|0), wait seconds} as strings.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(now, free)
local wait = slot - now
if wait > tonumber(ARGV[2]) then
  return {'0', tostring(wait)}
end
redis.call('SET', KEYS[1], tostring(slot + tonumber(ARGV[1])), 'EX', 3600)
return {'1', tostring(wait)}
"""


class WritePacer(BaseThrottler):
    def __init__(
        self,
        redis: Redis,
        installation_id: int,
        *,
        spacing_seconds: float = DEFAULT_SPACING_SECONDS,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        key_prefix: str = "ballet:pace",
    ) -> None:
        self._redis = redis
        self._spacing = spacing_seconds
        self._max_wait = max_wait_seconds
        self._slot_key = f"{key_prefix}:{installation_id}:next"
        self._lock_key = f"{key_prefix}:{installation_id}:lock"
        self._reserve = redis.register_script(_RESERVE)

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        raise RuntimeError("Ballet's GitHub adapter is async only")
        yield  # pragma: no cover

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        if request.method.upper() not in WRITE_METHODS or self._spacing <= 0:
            yield
            return
        await asyncio.sleep(await self.reserve(f"{request.method} {request.url.path}"))
        lock = self._redis.lock(
            self._lock_key, timeout=LOCK_TIMEOUT_SECONDS, blocking_timeout=LOCK_TIMEOUT_SECONDS * 2
        )
        async with lock:
            yield

    async def reserve(self, what: str = "a write") -> float:
        """Take the next free slot; the seconds to wait for it. `RateLimited` (nothing
        reserved) when the backlog is longer than this job should wait."""
        reserved, wait = await self._reserve(
            keys=[self._slot_key], args=[self._spacing, self._max_wait]
        )
        seconds = float(wait)
        if reserved in (b"0", "0"):
            raise RateLimited(
                seconds,
                reason=f"{what}: {seconds:.0f}s of this installation's writes are queued"
                " ahead of it (GitHub asks for them to be paced); deferred",
            )
        return seconds
