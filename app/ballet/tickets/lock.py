"""A per-ticket lock that serves waiters in arrival order, across worker processes.

A plain Redis lock is not fair: when it is released, whichever waiter polls
next wins, so a ticket's events could be applied out of the order they
arrived in. Here waiters queue in a Redis list and only the head of the line
may take the lock:

- mutual exclusion comes from a redis-py `Lock` held on a short lease that its
  holder renews while it works (up to `timeout_seconds` in all), so a holder
  whose worker was killed frees the ticket within `LEASE_SECONDS`, not after
  the whole timeout (a worker SIGKILLed while writing a ticket's effects
  wedged it for five minutes);
- order comes from the line; each waiter keeps a short-lived "alive" key while
  it waits, and a head whose key expired (its process died) is removed, so a
  dead waiter never blocks the line either;
- a holder that lets go wakes the new head of the line (a push to the head's own
  wake list, which it waits on with BLPOP): the next event of a ticket is
  applied as soon as the lock is free, not at the waiter's next look. The
  look every `FALLBACK_SECONDS` stays for what no wake tells: a holder that
  died (its lock expires) or a dead head ahead.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from redis.asyncio import Redis
from redis.exceptions import LockError

from ballet.github.forge import ForgeUnavailable
from ballet.queue import left_to_expire

log = structlog.get_logger("ballet.tickets.lock")

FALLBACK_SECONDS = 0.5
ALIVE_SECONDS = 10
LEASE_SECONDS = 10.0


class TicketBusy(ForgeUnavailable):
    """The ticket stayed locked longer than a job should wait; retry the job later.

    A kind of `ForgeUnavailable` so every job that defers on an unavailable
    GitHub defers on a busy ticket too.
    """


class TicketLock:
    def __init__(
        self,
        redis: Redis,
        key_prefix: str,
        *,
        timeout_seconds: float,
        wait_seconds: float,
        fallback_seconds: float = FALLBACK_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self._redis = redis
        self._prefix = key_prefix
        self._timeout = timeout_seconds
        self._wait = wait_seconds
        self._fallback = fallback_seconds
        self._lease = min(lease_seconds, timeout_seconds)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Wait for `key`'s turn, then hold its lock; `TicketBusy` after `wait_seconds`."""
        line = f"{self._prefix}:line:{key}"
        token = uuid.uuid4().hex
        await _run(self._redis.rpush(line, token))
        await self._redis.expire(line, int(self._timeout * 2))
        lock = None
        in_line = True
        try:
            lock = await self._wait_for_turn(key, line, token)
            renewing = asyncio.create_task(self._renew(lock, key))
            try:
                await _run(self._redis.lrem(line, 1, token))
                in_line = False
                yield
            finally:
                renewing.cancel()
                await asyncio.gather(renewing, return_exceptions=True)
        finally:
            # Redis lost (a worker stopping): the lease ends within LEASE_SECONDS.
            leaving = self._leave(line, token, lock, in_line=in_line)
            await left_to_expire(leaving, "ticket lock", ticket=key)

    async def _leave(self, line: str, token: str, lock: Any, *, in_line: bool) -> None:
        if lock is not None:
            await lock.release()
        if in_line:
            await _run(self._redis.lrem(line, 1, token))
        await self._wake_next(line)  # the lock is free, or the line's head may have changed
        await self._redis.delete(self._alive(token), self._wake(token))

    async def _renew(self, lock: Any, key: str) -> None:
        """Keep the lease while the holder works, for `timeout_seconds` at most."""
        loop = asyncio.get_running_loop()
        until = loop.time() + self._timeout
        every = self._lease / 3
        while loop.time() + every < until:
            await asyncio.sleep(every)
            try:
                await lock.reacquire()
            except LockError as error:  # expired meanwhile (the loop stalled a lease)
                log.warning("ticket lock lost while held", ticket=key, error=str(error))
                return

    def _alive(self, token: str) -> str:
        return f"{self._prefix}:alive:{token}"

    def _wake(self, token: str) -> str:
        return f"{self._prefix}:wake:{token}"

    async def _wake_next(self, line: str) -> None:
        head = await _run(self._redis.lindex(line, 0))
        if head is None:
            return
        wake = self._wake(head.decode() if isinstance(head, bytes) else head)
        # Kept only while a waiter could still be there to take it.
        pipe = self._redis.pipeline(transaction=False)
        pipe.rpush(wake, "1")
        pipe.expire(wake, ALIVE_SECONDS)
        await pipe.execute()

    async def _sleep_until_woken(self, token: str, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        seconds = min(self._fallback, deadline - loop.time())
        if seconds >= 0.01:  # BLPOP's 0 would be "forever"
            # A wake pushed before this wait began is still in the list: none is missed.
            # BLPOP takes fractions of a second (Redis 6); redis-py's typing says whole ones.
            timeout: Any = round(seconds, 3)
            await _run(self._redis.blpop([self._wake(token)], timeout=timeout))

    async def _wait_for_turn(self, key: str, line: str, token: str) -> Any:
        lock = self._redis.lock(f"{self._prefix}:lock:{key}", timeout=self._lease)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait
        while loop.time() < deadline:
            await self._redis.set(self._alive(token), "1", ex=ALIVE_SECONDS)
            head = await _run(self._redis.lindex(line, 0))
            head = head.decode() if isinstance(head, bytes) else head
            if head == token:
                if await lock.acquire(blocking=False):
                    return lock
            elif head is not None and not await self._redis.exists(self._alive(head)):
                await _run(self._redis.lrem(line, 1, head))  # its waiter died
                continue
            elif head is None:
                # The line expired under us (a very long wait): join it again.
                await _run(self._redis.rpush(line, token))
            await self._sleep_until_woken(token, deadline)
        raise TicketBusy(f"ticket {key} stayed busy for {self._wait:.0f}s; retry the job later")


async def _run(value: Any) -> Any:
    # redis-py types list commands for sync and async clients at once.
    return await value if inspect.isawaitable(value) else value
