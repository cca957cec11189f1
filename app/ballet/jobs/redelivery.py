"""Deliveries GitHub could not hand over, asked for again.

GitHub never retries a webhook delivery the App did not take (Ballet down
for a deploy, a connection reset, a proxy's 502): a ticket whose label
delivery was lost would never start, and nobody would know. So with every
reconciler sweep Ballet lists the App's recent delivery attempts and asks
GitHub to send again each delivery whose every attempt failed — at most
`MAX_REDELIVERIES` times per delivery, and only deliveries of the last
`WINDOW` (GitHub keeps them three days). A redelivery carries the delivery's
GUID, so one that had arrived after all is dropped by the web app's
de-duplication. This is GitHub's own documented recipe for Apps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Protocol

import structlog
from redis.asyncio import Redis

from ballet.github.models import HookDelivery

log = structlog.get_logger("ballet.redelivery")

WINDOW = timedelta(hours=24)
MAX_REDELIVERIES = 3
# A delivery's first attempt may still be on its way when a sweep lists it.
SETTLE = timedelta(seconds=30)
CHECKED_KEY = "ballet:redelivery:checked"
ASKED_PREFIX = "ballet:redelivery:asked:"
ASKED_KEEP_SECONDS = 3 * 24 * 3600


class HookDeliveries(Protocol):
    """The App's webhook deliveries on GitHub (`GitHubApp`)."""

    async def hook_deliveries(self, since: datetime) -> list[HookDelivery]: ...

    async def redeliver(self, delivery_id: int) -> None: ...


def undelivered(
    attempts: Iterable[HookDelivery], now: datetime, settle: timedelta = SETTLE
) -> list[HookDelivery]:
    """For each delivery none of whose attempts succeeded, its latest attempt (to
    redeliver); deliveries still settling (attempted less than `settle` ago) are
    left for the next sweep."""
    latest: dict[str, HookDelivery] = {}
    arrived: set[str] = set()
    for attempt in attempts:
        if attempt.ok:
            arrived.add(attempt.guid)
        elif attempt.guid not in latest or _when(attempt, now) > _when(latest[attempt.guid], now):
            latest[attempt.guid] = attempt
    return sorted(
        (a for g, a in latest.items() if g not in arrived and now - _when(a, now) > settle),
        key=lambda a: _when(a, now),
    )


def _when(attempt: HookDelivery, now: datetime) -> datetime:
    # A time GitHub did not give reads as long settled.
    return attempt.delivered_at or now - WINDOW


class Redeliveries:
    def __init__(
        self,
        redis: Redis,
        github: HookDeliveries,
        clock: Callable[[], datetime],
        *,
        settle: timedelta = SETTLE,
    ) -> None:
        self._redis = redis
        self._github = github
        self._clock = clock
        self._settle = settle  # Settings.redelivery_settle_seconds

    async def sweep(self) -> list[str]:
        """Ask again for what GitHub failed to deliver; the GUIDs asked for."""
        now = self._clock()
        raw = await self._redis.get(CHECKED_KEY)
        # Look back a little past the last sweep: a failure seen then may have
        # been still settling, and each delivery is asked for a bounded number of times.
        since = now - WINDOW
        if raw is not None:
            since = max(since, datetime.fromisoformat(raw.decode()) - WINDOW / 24)
        asked: list[str] = []
        for attempt in undelivered(await self._github.hook_deliveries(since), now, self._settle):
            key = ASKED_PREFIX + attempt.guid
            count = int(await self._redis.incr(key))
            await self._redis.expire(key, ASKED_KEEP_SECONDS)
            if count > MAX_REDELIVERIES:
                continue
            await self._github.redeliver(attempt.id)
            asked.append(attempt.guid)
            log.warning(
                "webhook delivery GitHub could not hand over: asked for it again",
                guid=attempt.guid,
                attempt=count,
                status_code=attempt.status_code,
            )
        await self._redis.set(CHECKED_KEY, now.isoformat())
        return asked
