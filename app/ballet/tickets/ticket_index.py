"""The ticket index: what the listing and the fleet page read instead of every record.

Written in the same MULTI as the record (`RecordStore.commit`), so the index
never tells of a transition that did not happen, nor misses one. In Redis,
under `ballet:index:`:

- `summary:<ticket>`: the ticket's `TicketSummary` as JSON (a tenth of a record);
- `live`: the tickets not ended, scored by their last update;
- `ended:<repo>`: a repository's ended tickets, the latest `ENDED_KEPT` of them;
- `repos`: every repository with a ticket, scored by its last update;
- `started:<repo>` (tickets by their start) and `done:<repo>` (`<ticket> <lead
  seconds>` by their end), `KEEP_DAYS` of them;
- `stages:<repo>:<day>`: the per-stage tallies of `ballet stats` for runs started
  that day (UTC), added to as transitions finish runs or send them back;
- `changed`: a counter every commit adds one to, which live pages watch.

A deployment whose records predate the index gets it built once, by a scan of
the records, the first time a page asks (`ensure_built`).
"""

from __future__ import annotations

import heapq
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from ballet.core.record import TERMINAL, Record
from ballet.core.ticket_summary import TicketSummary, lead_seconds, stage_tallies, summary_of

PREFIX = "ballet:index"
CHANGED = f"{PREFIX}:changed"
BUILT = f"{PREFIX}:built"
ENDED_KEPT = 200  # per repository: a listing shows the latest 100 across them
KEEP_DAYS = 90
STAGE_DAYS_KEPT = 40
FINISHED_TTL_SECONDS = 30 * 24 * 3600  # as long as the store keeps an ended record
DAY_SECONDS = 24 * 3600


def _k(*parts: str) -> str:
    return ":".join((PREFIX, *parts))


def queue_writes(
    tx: Pipeline, record: Record, *, before: Record | None = None, tally: bool = False
) -> None:
    """Add the index's writes for a saved `record` to `tx` (the record's own MULTI).
    `tally`: the transition from `before` is counted in the per-stage tallies (only
    the ticket service knows it applies each transition once)."""
    key, repo = record.key, record.ticket.repo
    at = record.updated_at.timestamp()
    ended = record.status in TERMINAL
    tx.set(
        _k("summary", key),
        summary_of(record).model_dump_json(),
        ex=FINISHED_TTL_SECONDS if ended else None,
    )
    tx.zadd(_k("repos"), {repo: at})
    tx.zadd(_k("started", repo), {key: record.created_at.timestamp()}, nx=True)
    oldest = (record.updated_at - timedelta(days=KEEP_DAYS)).timestamp()
    tx.zremrangebyscore(_k("started", repo), "-inf", oldest)
    if ended:
        tx.zrem(_k("live"), key)
        tx.zadd(_k("ended", repo), {key: at})
        tx.zremrangebyrank(_k("ended", repo), 0, -ENDED_KEPT - 1)
        lead = lead_seconds(record)
        if lead is not None:
            tx.zadd(_k("done", repo), {f"{key} {lead:.0f}": at}, nx=True)
            tx.zremrangebyscore(_k("done", repo), "-inf", oldest)
    else:
        tx.zadd(_k("live"), {key: at})
        tx.zrem(_k("ended", repo), key)  # a ticket labelled again lives anew
    if tally:
        for t in stage_tallies(before, record):
            day = _k("stages", repo, t.day)
            for name, value in (
                ("runs", t.runs),
                ("ms", t.milliseconds),
                ("rework", t.rework),
                (f"outcome:{t.outcome}", t.runs),
            ):
                if value:
                    tx.hincrby(day, f"{t.stage}|{name}", value)
            tx.expire(day, STAGE_DAYS_KEPT * 24 * 3600)
    tx.incr(CHANGED)


@dataclass
class StageCounts:
    runs: int = 0
    milliseconds: int = 0
    rework: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


class TicketIndex:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def changed(self) -> int:
        """How many commits the index has seen: a page is stale when it moved."""
        return int(await self._redis.get(CHANGED) or 0)

    async def summaries(self, keys: Sequence[str]) -> list[TicketSummary]:
        """The tickets' summaries, in the order asked (a key with none left out)."""
        if not keys:
            return []
        raws = await self._redis.mget([_k("summary", key) for key in keys])
        return [TicketSummary.model_validate_json(raw) for raw in raws if raw is not None]

    async def repos(self) -> list[str]:
        return [_text(r) for r in await self._redis.zrange(_k("repos"), 0, -1)]

    async def live(self) -> list[str]:
        """The live tickets, the latest updated first."""
        return [_text(k) for k in await self._redis.zrange(_k("live"), 0, -1, desc=True)]

    async def recently_ended(self, repos: Sequence[str], count: int) -> list[str]:
        """The `count` tickets of `repos` that ended last, the latest first."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for repo in repos:
                pipe.zrange(_k("ended", repo), 0, count - 1, desc=True, withscores=True)
            found: list[list[tuple[bytes, float]]] = await pipe.execute()
        merged = heapq.nlargest(
            count, (item for items in found for item in items), key=lambda item: item[1]
        )
        return [_text(key) for key, _ in merged]

    async def per_day(
        self, repos: Sequence[str], days: Sequence[float]
    ) -> tuple[list[int], list[int]]:
        """Tickets of `repos` started, and done, on each day beginning at `days` (epoch
        seconds of midnight UTC): counted by Redis, none read."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for kind in ("started", "done"):
                for repo in repos:
                    for day in days:
                        pipe.zcount(_k(kind, repo), day, f"({day + DAY_SECONDS}")
            found: list[int] = await pipe.execute()
        per_kind = len(repos) * len(days)

        def counts(kind: int) -> list[int]:
            at = kind * per_kind
            return [
                sum(found[at + r * len(days) + d] for r in range(len(repos)))
                for d in range(len(days))
            ]

        return counts(0), counts(1)

    async def lead_times(self, repos: Sequence[str], since: float) -> list[float]:
        """The lead time (seconds) of every ticket of `repos` done since `since`."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for repo in repos:
                pipe.zrangebyscore(_k("done", repo), since, "+inf")
            found: list[list[bytes]] = await pipe.execute()
        return [float(_text(m).rsplit(" ", 1)[1]) for members in found for m in members]

    async def stage_counts(
        self, repos: Sequence[str], days: Sequence[str]
    ) -> dict[str, StageCounts]:
        """The per-stage tallies of `repos` for runs started on `days`, summed; stages in
        the order first met."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for repo in repos:
                for day in days:
                    pipe.hgetall(_k("stages", repo, day))
            found: list[dict[bytes, bytes]] = await pipe.execute()
        counts: dict[str, StageCounts] = {}
        for fields in found:
            for raw, value in fields.items():
                stage, _, name = _text(raw).rpartition("|")
                c = counts.setdefault(stage, StageCounts())
                if name == "runs":
                    c.runs += int(value)
                elif name == "ms":
                    c.milliseconds += int(value)
                elif name == "rework":
                    c.rework += int(value)
                elif name.startswith("outcome:"):
                    outcome = name.removeprefix("outcome:")
                    c.outcomes[outcome] = c.outcomes.get(outcome, 0) + int(value)
        return counts

    async def write(self, record: Record) -> None:
        """Index a record saved outside a transition (rebuilt from GitHub)."""
        async with self._redis.pipeline(transaction=True) as tx:
            queue_writes(tx, record)
            await tx.execute()

    async def ensure_built(self, records: AsyncIterator[Record]) -> None:
        """Index the records saved before the index existed, once: a record with a
        summary already is left to the transitions that keep it."""
        if await self._redis.exists(BUILT):
            return
        async for record in records:
            if not await self._redis.exists(_k("summary", record.key)):
                await self.write(record)
        await self._redis.set(BUILT, "1")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
