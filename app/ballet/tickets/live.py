"""The set of live tickets: the ones the reconciler visits once a minute.

The ticket service adds a ticket whenever it saves a record with a live status
(running, waiting, paused) and removes it when the ticket ends, so a ticket
that waits on a person or the forge before any session still gets its ticks
(wait timeouts, stale comments). The reconciler also drops tickets it finds
ended or gone. This module owns the set's key: nothing else spells it.
"""

from __future__ import annotations

from redis.asyncio import Redis

from ballet.core.record import TERMINAL, Record

LIVE_TICKETS = "ballet:live-tickets"


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

    async def members(self) -> list[str]:
        """The live tickets' keys, sorted."""
        raw: set[bytes | str] = await self._redis.smembers(LIVE_TICKETS)  # type: ignore[misc]
        return sorted(m.decode() if isinstance(m, bytes) else m for m in raw)
