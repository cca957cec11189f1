"""Concurrent deliveries are written to the queue together (group commit),
each exactly once, in the jobs and keys arq's worker reads."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence

import httpx
import pytest
from arq.connections import ArqRedis
from arq.constants import job_key_prefix
from arq.jobs import deserialize_job
from ballet.queue import (
    DELIVERY_MARKER_PREFIX,
    EVENTS_QUEUE,
    HANDLE_DELIVERY,
    DeliveryJob,
    DeliveryQueue,
    open_pool,
)
from ballet.web.group_commit import GroupCommit
from redis.exceptions import RedisError
from webhook_signing import delivery_headers

pytestmark = pytest.mark.anyio


async def metric(client: httpx.AsyncClient, sample: str) -> float:
    for line in (await client.get("/metrics")).text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


def job(delivery_id: str) -> DeliveryJob:
    body = f'{{"action": "labeled", "n": "{delivery_id}"}}'.encode()
    return DeliveryJob(delivery_id=delivery_id, event="issues", body=body, received_at=1.0)


class CountingWrites:
    """The real DeliveryQueue, counting the deliveries of each write; with a
    gate, each write waits until the test opens it."""

    def __init__(self, queue: DeliveryQueue, gate: asyncio.Event | None = None) -> None:
        self.queue = queue
        self.gate = gate
        self.writes: list[int] = []
        self.writing = asyncio.Event()

    async def enqueue_many(self, jobs: Sequence[DeliveryJob]) -> list[bool]:
        self.writes.append(len(jobs))
        self.writing.set()
        if self.gate is not None:
            await self.gate.wait()
        return await self.queue.enqueue_many(jobs)


async def test_concurrent_deliveries_with_duplicates_are_queued_once_each(
    client: httpx.AsyncClient, redis: ArqRedis
) -> None:
    ids = [f"burst-{n}" for n in range(20)]
    posts = ids * 3  # every delivery arrives three times, all at once
    random.Random(15).shuffle(posts)
    accepted = 'ballet_webhook_deliveries_total{event="issues",outcome="accepted"}'
    duplicate = 'ballet_webhook_deliveries_total{event="issues",outcome="duplicate"}'
    before = (await metric(client, accepted), await metric(client, duplicate))

    async def post(delivery_id: str) -> tuple[str, int, str]:
        body = f'{{"action": "labeled", "delivery": "{delivery_id}"}}'.encode()
        headers = delivery_headers("issues", body, delivery_id)
        response = await client.post("/webhooks", content=body, headers=headers)
        return delivery_id, response.status_code, response.json()["status"]

    answers = await asyncio.gather(*(post(d) for d in posts))

    assert Counter((d, s, o) for d, s, o in answers if o == "accepted") == Counter(
        {(d, 202, "accepted"): 1 for d in ids}
    )
    assert Counter(d for d, s, o in answers if (s, o) == (200, "duplicate")) == Counter(
        {d: 2 for d in ids}
    )
    queued = sorted(member.decode() for member in await redis.zrange(EVENTS_QUEUE, 0, -1))
    assert queued == sorted(ids)
    for delivery_id in ids:
        # The job arq's worker will run: its function and the delivery it carries.
        raw = await redis.get(job_key_prefix + delivery_id)
        assert raw is not None
        queued_job = deserialize_job(raw)
        assert queued_job.function == HANDLE_DELIVERY
        (delivery,) = queued_job.args
        assert isinstance(delivery, DeliveryJob)
        assert delivery.delivery_id == delivery_id
        assert delivery.body == f'{{"action": "labeled", "delivery": "{delivery_id}"}}'.encode()
        assert await redis.exists(DELIVERY_MARKER_PREFIX + delivery_id)
    after = (await metric(client, accepted), await metric(client, duplicate))
    assert after == (before[0] + 20, before[1] + 40)


async def test_deliveries_arriving_during_a_write_go_together_in_the_next(
    redis: ArqRedis,
) -> None:
    gate = asyncio.Event()
    writes = CountingWrites(DeliveryQueue(redis, dedupe_seconds=3600), gate)
    group = GroupCommit(writes.enqueue_many)

    # An idle group commit writes the first delivery at once, alone.
    first = asyncio.create_task(group.enqueue(job("g-first")))
    await writes.writing.wait()
    assert writes.writes == [1]
    # While that write is under way, 50 more arrive (each id twice)...
    rest = [asyncio.create_task(group.enqueue(job(f"g-{n % 25}"))) for n in range(50)]
    await asyncio.sleep(0)
    assert writes.writes == [1]
    gate.set()
    results = await asyncio.gather(first, *rest)

    # ...and go together in the next write, each id queued once.
    assert writes.writes == [1, 50]
    assert results == [True] + [True] * 25 + [False] * 25
    assert await redis.zcard(EVENTS_QUEUE) == 26
    await group.close()


async def test_a_batch_is_bounded_and_the_rest_follows(redis: ArqRedis) -> None:
    writes = CountingWrites(DeliveryQueue(redis, dedupe_seconds=3600))
    group = GroupCommit(writes.enqueue_many, max_batch=4)

    results = await asyncio.gather(*(group.enqueue(job(f"b-{n}")) for n in range(13)))

    assert results == [True] * 13
    assert writes.writes == [4, 4, 4, 1]
    assert await redis.zcard(EVENTS_QUEUE) == 13


async def test_large_deliveries_go_in_batches_bounded_by_bytes(redis: ArqRedis) -> None:
    writes = CountingWrites(DeliveryQueue(redis, dedupe_seconds=3600))
    each = len(job("x-0").body)
    group = GroupCommit(writes.enqueue_many, max_batch_bytes=3 * each)
    jobs = [job(f"x-{n}") for n in range(7)]
    huge = DeliveryJob(delivery_id="huge", event="issues", body=b" " * (10 * each), received_at=1)

    results = await asyncio.gather(*(group.enqueue(j) for j in [*jobs[:4], huge, *jobs[4:]]))

    # A delivery over the bound still goes, alone; none is left behind.
    assert results == [True] * 8
    assert writes.writes == [3, 1, 1, 3]
    assert await redis.zcard(EVENTS_QUEUE) == 8


async def test_a_failed_write_fails_every_delivery_waiting_on_it_and_the_next_tries_again(
    redis: ArqRedis,
) -> None:
    down = open_pool("redis://127.0.0.1:1/0")
    group = GroupCommit(DeliveryQueue(down, dedupe_seconds=3600).enqueue_many)
    try:
        for _ in range(2):
            outcomes = await asyncio.gather(
                *(group.enqueue(job(f"f-{n}")) for n in range(6)), return_exceptions=True
            )
            assert all(isinstance(o, RedisError | OSError) for o in outcomes), outcomes
    finally:
        await down.aclose(close_connection_pool=True)
    assert await redis.dbsize() == 0
