"""Pacing of content-creating requests, per App installation, across processes.

GitHub's secondary rate limits punish bursts of writes. Its documentation
asks for writes to be made serially, "at least one second between each",
and caps content creation at 80 requests a minute and 500 an hour per
installation. Every worker shares one Redis, so the pacing is kept there and
holds all three, counting every REST or GraphQL write (GitHub decides which
requests create content; counting them all errs on the safe side):
- a write starts at least `spacing_seconds` (default 1 s) after the
  installation's previous one, which also keeps it under 80 a minute;
- no rolling hour holds more than `per_hour` (default 500) of its writes.

Each write *reserves* its start time: one atomic script reads the
installation's next free slot (by Redis's clock, so workers on several
machines agree), moves it past the hour's budget if the last hour's
reservations have spent it, takes it and moves it on by the spacing. Writers
are served in the order they asked, with no polling and no lock for a
newcomer to win unfairly, so no write starves behind a burst of others.
A slot is a plan, though: a worker the machine keeps waiting reaches its slot
late, just before the next writer's. So a lock keeps the writes serial, and
under it the same rule is applied again to the writes actually let go (their
own keys): what reaches GitHub is spaced and capped, however late a writer.

A write whose slot is further away than `max_wait_seconds` does not wait in
its job (holding the ticket's lock and a worker slot for minutes): it
reserves nothing and raises `RateLimited` with the backlog's length, so the
job is deferred to then and resumes at the same effect (the outbox). That is
how a burst of tickets in one installation waits in the queue, not in jobs,
and how an installation that has spent its hour waits for the hour to roll.

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
DEFAULT_SPACING_SECONDS = 1.0
# GitHub's hourly cap on content-creating requests of one installation.
DEFAULT_PER_HOUR = 500
HOUR_SECONDS = 3600.0
# The hour counted is a little longer than GitHub's: a write let go at the hour's
# edge may reach GitHub a moment after the next one (a busy machine, a slow
# connection), and no hour of arrivals may hold one write too many.
HOUR_MARGIN = 1.02
# A write waits in its job for at most this long; a longer backlog defers the job.
DEFAULT_MAX_WAIT_SECONDS = 15.0
# A write holding the lock longer than this is presumed dead (its process
# crashed); the lock expires so the installation is not wedged.
LOCK_TIMEOUT_SECONDS = 60.0

# Takes the installation's next slot, for a write planned (reserved: max wait as
# long as a job may wait) or one let go now (max wait 0), each on its own keys.
# KEYS[1]: the next free slot (seconds, Redis clock); KEYS[2]: the slots taken
# within the last window (a sorted set, score = slot).
# ARGV: spacing, max wait, writes per window (0: no cap), window seconds.
# Returns {reserved (1|0), wait seconds, whether the cap set the wait (1|0)} as
# strings. The slots are reserved in
# increasing order, so the window is full at `slot` while the reservation
# `per window` places before the newest is within a window of it.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(now, free)
local capped = '0'
local cap = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
if cap > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. tostring(now - window))
  local count = redis.call('ZCARD', KEYS[2])
  if count >= cap then
    local oldest = redis.call('ZRANGE', KEYS[2], count - cap, count - cap, 'WITHSCORES')
    if tonumber(oldest[2]) + window > slot then
      slot = tonumber(oldest[2]) + window
      capped = '1'
    end
  end
end
local wait = slot - now
if wait > tonumber(ARGV[2]) then
  return {'0', tostring(wait), capped}
end
-- tostring() keeps 14 digits, a tenth of a millisecond of today's clock: too coarse.
local ttl = math.ceil(window + wait)
redis.call('SET', KEYS[1], string.format('%.6f', slot + tonumber(ARGV[1])), 'EX', ttl)
if cap > 0 then
  redis.call('ZADD', KEYS[2], slot, string.format('%.6f', slot))
  redis.call('EXPIRE', KEYS[2], ttl + 60)
end
return {'1', tostring(wait), capped}
"""


class WritePacer(BaseThrottler):
    def __init__(
        self,
        redis: Redis,
        installation_id: int,
        *,
        spacing_seconds: float = DEFAULT_SPACING_SECONDS,
        per_hour: int = DEFAULT_PER_HOUR,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        key_prefix: str = "ballet:pace",
        hour_seconds: float = HOUR_SECONDS,
    ) -> None:
        """`spacing_seconds` 0 turns pacing off (only for a GitHub double such as the
        sandbox); `per_hour` 0 lifts the hourly cap. `hour_seconds` shortens the hour
        for a test or a bench that must see it roll (counted HOUR_MARGIN longer)."""
        self._redis = redis
        self._spacing = spacing_seconds
        self._per_hour = per_hour
        self._hour = hour_seconds * HOUR_MARGIN
        self._max_wait = max_wait_seconds
        prefix = f"{key_prefix}:{installation_id}"
        # The writes planned (reserved slots) and those actually let go, by one rule.
        self._planned = (f"{prefix}:next", f"{prefix}:hour")
        self._sent = (f"{prefix}:sent:next", f"{prefix}:sent:hour")
        self._lock_key = f"{prefix}:lock"
        self._script = redis.register_script(_TAKE)

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        raise RuntimeError("Ballet's GitHub adapter is async only")
        yield  # pragma: no cover

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        if request.method.upper() not in WRITE_METHODS or self._spacing <= 0:
            yield
            return
        what = f"{request.method} {request.url.path}"
        await asyncio.sleep(await self.reserve(what))
        # The lock only matters for a write slower than the spacing; its waiter
        # polls, and redis-py's default 0.1 s would bunch writes up behind it.
        lock = self._redis.lock(
            self._lock_key,
            timeout=LOCK_TIMEOUT_SECONDS,
            sleep=0.01,
            blocking_timeout=LOCK_TIMEOUT_SECONDS * 2,
        )
        async with lock:
            await self._admit(what)
            yield

    async def reserve(self, what: str = "a write") -> float:
        """Take the next free slot; the seconds to wait for it. `RateLimited` (nothing
        reserved) when the backlog is longer than this job should wait."""
        taken, seconds, capped = await self._take(self._planned, self._max_wait)
        if not taken:
            raise self._deferred(what, seconds, capped)
        return seconds

    async def _admit(self, what: str) -> None:
        """Let the write go only when the writes actually sent allow it.

        A reserved slot is a plan: a worker the machine left waiting (a busy CPU, a
        slow wake-up) reaches it late, just before the next writer's turn, and
        two writes would land together. Under the lock, the same rule is applied to
        the writes actually let go, so what reaches GitHub is spaced and capped.
        """
        while True:
            taken, seconds, capped = await self._take(self._sent, 0.0)
            if taken:
                return
            if seconds > self._max_wait:
                raise self._deferred(what, seconds, capped)
            await asyncio.sleep(seconds)

    async def _take(self, keys: tuple[str, str], max_wait: float) -> tuple[bool, float, bool]:
        """(taken, seconds to wait, whether the hour's cap set the wait)."""
        taken, wait, capped = await self._script(
            keys=list(keys), args=[self._spacing, max_wait, self._per_hour, self._hour]
        )
        return taken in (b"1", "1"), float(wait), capped in (b"1", "1")

    def _deferred(self, what: str, seconds: float, capped: bool) -> RateLimited:
        why = (
            f"this installation made its {self._per_hour} writes of the last hour"
            " (GitHub's cap on content creation)"
            if capped
            else "this installation's writes are queued ahead of it"
            " (GitHub asks for them to be paced)"
        )
        return RateLimited(seconds, reason=f"{what}: deferred {seconds:.0f}s: {why}")
