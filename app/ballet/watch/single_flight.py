"""Concurrent look-ups of one thing share one request to GitHub (per web process).

A hundred browsers opening one uncached repository's page at once would
otherwise ask GitHub a hundred times the same question before the first answer
reached the cache. The first asker starts the look-up as a task of its own; the
others await that task. Each waiter awaits it shielded, so a browser that goes
away (its request cancelled) leaves the look-up running for the rest; a
look-up that raises raises in every waiter. Across processes the Redis cache
behind it does the sharing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class SingleFlight(Generic[T]):
    def __init__(self) -> None:
        self._flights: dict[str, asyncio.Task[T]] = {}

    async def run(self, key: str, look_up: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """`look_up()`'s answer, shared with every caller of `key` while it runs."""
        task = self._flights.get(key)
        if task is None:
            task = asyncio.create_task(look_up())
            self._flights[key] = task
            task.add_done_callback(lambda done: self._landed(key, done))
        return await asyncio.shield(task)

    def in_flight(self) -> int:
        return len(self._flights)

    def _landed(self, key: str, task: asyncio.Task[T]) -> None:
        if self._flights.get(key) is task:
            del self._flights[key]
        if not task.cancelled():
            task.exception()  # retrieved, even when every waiter went away
