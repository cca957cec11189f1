"""Deliveries through the real web app, a real Valkey and a real arq worker."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from arq.connections import ArqRedis
from arq.constants import job_key_prefix, result_key_prefix
from ballet.github.forge import RateLimited
from ballet.jobs.deliveries import MAX_DELIVERY_TRIES
from ballet.jobs.registry import WorkerGroup
from ballet.queue import DELIVERY_MARKER_PREFIX, EVENTS_QUEUE, DeliveryJob, DeliveryQueue
from ballet.settings import Settings
from ballet.tickets.lock import TicketBusy
from ballet.web import create_app
from recording_consumer import RecordingConsumer, services_with
from webhook_signing import delivery_headers

pytestmark = pytest.mark.anyio


async def run_burst(settings: Settings, consumer: RecordingConsumer) -> None:
    url = settings.require_redis_url()
    await WorkerGroup(settings, url, services_with(consumer), burst=True).run()


def job(delivery_id: str, body: bytes = b'{"action": "opened"}') -> DeliveryJob:
    return DeliveryJob(delivery_id=delivery_id, event="issues", body=body, received_at=time.time())


async def test_a_delivery_posted_20_times_is_handled_once(
    settings: Settings, redis: ArqRedis, webhooks_dir: Path
) -> None:
    body = (webhooks_dir / "issues" / "labeled.payload.json").read_bytes()
    headers = delivery_headers(
        "issues", body, "72d3162e-cc78-11e3-81ab-4c9367dc0958", secret="queue-secret"
    )
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://b") as http,
    ):
        statuses = [
            (await http.post("/webhooks", content=body, headers=headers)).status_code
            for _ in range(20)
        ]
        consumer = RecordingConsumer()
        await run_burst(settings, consumer)
        # A redelivery after it was handled (arq's job is gone) is still recognised.
        again = await http.post("/webhooks", content=body, headers=headers)
        await run_burst(settings, consumer)
    assert statuses == [202] + [200] * 19
    assert again.json()["status"] == "duplicate"
    assert len(consumer.handled) == 1
    delivery = consumer.handled[0]
    assert delivery.id == "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    assert delivery.event == "issues"
    assert delivery.payload == json.loads(body)
    assert delivery.envelope.action == "labeled"
    assert delivery.envelope.repository is not None
    assert delivery.envelope.repository.full_name == "Codertocat/Hello-World"


async def test_every_queued_delivery_is_handled(settings: Settings, redis: ArqRedis) -> None:
    queue = DeliveryQueue(redis, settings.delivery_dedupe_seconds)
    for n in range(12):
        assert await queue.enqueue(job(f"d-{n}", json.dumps({"action": str(n)}).encode()))
    consumer = RecordingConsumer()
    await run_burst(settings, consumer)
    assert sorted(d.id for d in consumer.handled) == sorted(f"d-{n}" for n in range(12))
    assert await redis.zcard(EVENTS_QUEUE) == 0


async def test_a_handled_delivery_leaves_no_job_result_in_redis(
    settings: Settings, redis: ArqRedis
) -> None:
    # arq keeps a job's result (with its arguments: the whole payload) for an hour by
    # default; a delivery's is never read, so only its dedupe marker stays.
    body = json.dumps({"action": "opened", "padding": "x" * 10_000}).encode()
    await DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue(job("kept", body))
    consumer = RecordingConsumer()
    await run_burst(settings, consumer)
    assert [d.id for d in consumer.handled] == ["kept"]
    assert not await redis.exists(result_key_prefix + "kept", job_key_prefix + "kept")
    # The reconcile sweep's cron may have run in the burst (at :00 and :30 of each
    # minute): arq keeps a cron run's in-progress key 60 s on purpose, so that its
    # slot is not run twice. It names no delivery.
    left = [k async for k in redis.scan_iter("arq:*")]
    assert [k for k in left if not k.startswith(b"arq:in-progress:reconcile:")] == []
    assert await redis.exists(DELIVERY_MARKER_PREFIX + "kept")


async def test_a_failing_delivery_is_retried_then_handled(
    settings: Settings, redis: ArqRedis
) -> None:
    await DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue(job("flaky"))
    consumer = RecordingConsumer(failures=2)
    await run_burst(settings, consumer)
    assert consumer.calls == 3
    assert [d.id for d in consumer.handled] == ["flaky"]
    # Handled: the marker stays, so a redelivery is not handled twice.
    assert await redis.exists(DELIVERY_MARKER_PREFIX + "flaky")


async def test_a_delivery_that_keeps_failing_can_be_redelivered(
    settings: Settings, redis: ArqRedis
) -> None:
    queue = DeliveryQueue(redis, settings.delivery_dedupe_seconds)
    await queue.enqueue(job("doomed"))
    consumer = RecordingConsumer(failures=100)
    await run_burst(settings, consumer)
    assert consumer.calls == MAX_DELIVERY_TRIES
    assert not await redis.exists(DELIVERY_MARKER_PREFIX + "doomed")
    # A person's redelivery from GitHub's UI is queued and handled again.
    assert await queue.enqueue(job("doomed"))
    consumer.failures = 0
    await run_burst(settings, consumer)
    assert [d.id for d in consumer.handled] == ["doomed"]


async def test_a_rate_limited_delivery_is_deferred_until_github_allows(
    settings: Settings, redis: ArqRedis
) -> None:
    await DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue(job("limited"))
    consumer = RecordingConsumer(failures=1, error=RateLimited(3600, reason="secondary rate limit"))
    group = WorkerGroup(settings, settings.require_redis_url(), services_with(consumer))
    running = asyncio.create_task(group.run())
    try:
        for _ in range(200):
            if consumer.calls and await redis.zscore(EVENTS_QUEUE, "limited"):
                break
            await asyncio.sleep(0.05)
        score = await redis.zscore(EVENTS_QUEUE, "limited")
    finally:
        group.stop()
        await running
    assert consumer.calls == 1 and consumer.handled == []
    # arq scores a job by when it may run (ms): an hour from now, not a backoff.
    assert score is not None and score / 1000 > time.time() + 3000
    assert await redis.exists(DELIVERY_MARKER_PREFIX + "limited")


@pytest.mark.parametrize(
    "wait",
    [
        RateLimited(0, reason="installation's writes queued ahead"),
        TicketBusy("ticket o/r#1 stayed busy for 60s"),
    ],
)
async def test_waiting_its_turn_many_times_is_no_failure(
    settings: Settings, redis: ArqRedis, wait: Exception
) -> None:
    """A burst of tickets in one installation defers a delivery again and again:
    it is handled in the end, never given up as failed."""
    await DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue(job("patient"))
    consumer = RecordingConsumer(failures=MAX_DELIVERY_TRIES + 2, error=wait)
    await run_burst(settings, consumer)
    assert consumer.calls == MAX_DELIVERY_TRIES + 3
    assert [d.id for d in consumer.handled] == ["patient"]


async def test_the_marker_and_the_job_are_written_together(
    settings: Settings, redis: ArqRedis
) -> None:
    queue = DeliveryQueue(redis, dedupe_seconds=3600)
    assert await queue.enqueue(job("pair"))
    assert not await queue.enqueue(job("pair"))
    assert 3500 < await redis.ttl(DELIVERY_MARKER_PREFIX + "pair") <= 3600
    # The arq job lives as long as the dedupe window, not arq's default day.
    assert 3500 < await redis.ttl("arq:job:pair") <= 3600
    assert await redis.zrange(EVENTS_QUEUE, 0, -1) == [b"pair"]


async def test_the_worker_command_handles_queued_deliveries_in_burst_mode(
    settings: Settings, redis: ArqRedis, queue_redis_url: str
) -> None:
    await DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue(job("from-cli"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALLET_")}
    env["REDIS_URL"] = queue_redis_url
    done = subprocess.run(
        [sys.executable, "-m", "ballet", "worker", "--burst"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "delivery handled" in done.stderr and "from-cli" in done.stderr
    assert await redis.zcard(EVENTS_QUEUE) == 0
