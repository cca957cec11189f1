"""Deliveries written together in one call of the enqueue script are each
handled once by the real arq worker, exactly as deliveries written alone."""

from __future__ import annotations

import json
import time

import pytest
from arq.connections import ArqRedis
from ballet.jobs.registry import WorkerGroup
from ballet.queue import DELIVERY_MARKER_PREFIX, EVENTS_QUEUE, DeliveryJob, DeliveryQueue
from ballet.settings import Settings
from recording_consumer import RecordingConsumer, services_with

pytestmark = pytest.mark.anyio


def job(delivery_id: str) -> DeliveryJob:
    body = json.dumps({"action": "opened", "id": delivery_id}).encode()
    return DeliveryJob(delivery_id=delivery_id, event="issues", body=body, received_at=time.time())


async def test_a_batch_with_duplicates_is_handled_once_per_delivery(
    settings: Settings, redis: ArqRedis
) -> None:
    queue = DeliveryQueue(redis, settings.delivery_dedupe_seconds)
    assert await queue.enqueue(job("earlier"))

    added = await queue.enqueue_many(
        [job("a"), job("b"), job("a"), job("earlier"), job("c"), job("b")]
    )

    assert added == [True, True, False, False, True, False]
    assert await redis.zcard(EVENTS_QUEUE) == 4
    consumer = RecordingConsumer()
    url = settings.require_redis_url()
    await WorkerGroup(settings, url, services_with(consumer), burst=True).run()
    assert sorted(d.id for d in consumer.handled) == ["a", "b", "c", "earlier"]
    assert [d.payload["id"] for d in sorted(consumer.handled, key=lambda d: d.id)] == [
        "a",
        "b",
        "c",
        "earlier",
    ]
    # Handled: the markers stay for the dedupe window, so redeliveries are refused.
    assert await queue.enqueue_many([job("a"), job("c")]) == [False, False]
    ttl = await redis.pttl(DELIVERY_MARKER_PREFIX + "a")
    assert ttl > (settings.delivery_dedupe_seconds - 60) * 1000


async def test_an_empty_batch_writes_nothing(settings: Settings, redis: ArqRedis) -> None:
    assert await DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue_many([]) == []
    assert await redis.dbsize() == 0
