"""The set of live tickets: the ones the reconciler visits once a minute.

The ticket service adds a ticket whenever it saves a record with a live status
(running, waiting, paused) and removes it when the ticket ends, so a ticket
that waits on a person or the forge before any session still gets its ticks
(wait timeouts, stale comments). The reconciler also drops tickets it finds
ended or gone. This module owns the set's key: nothing else spells it.

Redis can lose the set (flushed, or restarted without persistence), and a
ticket waiting on a person gets no event to put it back. So the set is only
trusted while its `complete` marker exists, which the reconciler sets once it
has asked GitHub for the tickets its labels show live; both vanish together.
"""

from __future__ import annotations

from redis.asyncio import Redis

from ballet.core.record import TERMINAL, Record

LIVE_TICKETS = "ballet:live-tickets"
LIVE_TICKETS_COMPLETE = "ballet:live-tickets:complete"
# The labels of a live ticket's issue (core.machine.labels_for): paused carries
# none, and a paused ticket waits for `/ballet resume`, an event of its own.
LIVE_LABELS = ("ballet:running", "ballet:waiting")


class LiveTickets:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def track(self, record: Record) -> None:
        """Keep the set in step with a record just saved."""
        if record.status in TERMINAL:
            await self.remove(record.key)
        else:
            await self.add(record.key)

    async def add(self, key: str) -> None:
        await self._redis.sadd(LIVE_TICKETS, key)  # type: ignore[misc]

    async def remove(self, key: str) -> None:
        await self._redis.srem(LIVE_TICKETS, key)  # type: ignore[misc]

    async def is_complete(self) -> bool:
        """Whether the set is whole: not lost with Redis since it was last rebuilt."""
        return bool(await self._redis.exists(LIVE_TICKETS_COMPLETE))

    async def mark_complete(self) -> None:
        await self._redis.set(LIVE_TICKETS_COMPLETE, "1")

    async def members(self) -> list[str]:
        """The live tickets' keys, sorted."""
        raw: set[bytes | str] = await self._redis.smembers(LIVE_TICKETS)  # type: ignore[misc]
        return sorted(m.decode() if isinstance(m, bytes) else m for m in raw)

    async def of_repo(self, repo: str) -> list[str]:
        """The live tickets' keys in `repo`, sorted."""
        return [k for k in await self.members() if k.startswith(f"{repo}#")]
