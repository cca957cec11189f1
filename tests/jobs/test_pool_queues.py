"""Agent pools at the queue: a launch goes to its pool's queue and says when no
worker of that pool is alive; workers announce themselves and leave; a session
reserved for the worker that ran its ticket's last one is left to it, and taken
by any worker once the reservation runs out; one process's pools share its slots."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from arq.connections import ArqRedis
from arq.worker import func
from ballet import metrics
from ballet.core.events import WorkerAwaited
from ballet.jobs import pools
from ballet.jobs.launcher import ArqSessionLauncher, pool_of, queue_of
from ballet.jobs.pool_worker import PoolWorker, SharedSlots
from ballet.queue import SESSIONS_QUEUE, redis_settings, sessions_queue
from ballet.settings import Settings
from jobs_kit import start_session

pytestmark = pytest.mark.anyio

GPU = sessions_queue("gpu")


async def test_a_launch_goes_to_its_pool_queue_and_says_when_no_worker_serves_it(
    redis: ArqRedis,
) -> None:
    gpu = start_session(pool="gpu")
    said = await ArqSessionLauncher(redis).launch(gpu)
    assert GPU == "ballet:sessions:gpu"
    assert await redis.zrange(GPU, 0, -1) == [gpu.spec.job_key.encode()]
    assert isinstance(said, WorkerAwaited) and said.pool == "gpu"
    assert said.job_key == gpu.spec.job_key
    assert await pool_of(redis, gpu.spec.job_key) == "gpu"
    assert await queue_of(redis, gpu.spec.job_key) == GPU
    assert await pools.was_awaiting(redis, gpu.spec.job_key)  # the job will tell the ticket

    await pools.announce(redis, "w1", 2, {"default": 0})
    plain = start_session(stage="review")
    assert await ArqSessionLauncher(redis).launch(plain) is None  # a worker is there
    assert await redis.zrange(SESSIONS_QUEUE, 0, -1) == [plain.spec.job_key.encode()]
    assert not await pools.was_awaiting(redis, plain.spec.job_key)


async def test_a_launch_marker_from_before_pools_names_the_default_queue(redis: ArqRedis) -> None:
    await redis.set("ballet:session-launched:octo/app#1:implement:1:1", "1")
    assert await queue_of(redis, "octo/app#1:implement:1:1") == SESSIONS_QUEUE
    assert await pool_of(redis, "never#1:x:1:1") is None


async def test_workers_announce_their_pools_and_leave_them(redis: ArqRedis) -> None:
    await pools.announce(redis, "w1", 2, {"gpu": 1, "default": 0})
    await pools.announce(redis, "w2", 2, {"default": 0}, ttl=1)
    assert await pools.live_workers(redis, "default") == ["w1", "w2"]
    assert await pools.live_workers(redis, "gpu") == ["w1"]
    assert await pools.serves(redis, "w1", "gpu") and not await pools.serves(redis, "w2", "gpu")
    await pools.leave(redis, "w1", ["gpu", "default"])
    assert await pools.live_workers(redis, "gpu") == []
    await asyncio.sleep(1.1)  # w2's announcement runs out: it counts as gone
    assert await pools.live_workers(redis, "default") == []


async def test_the_reservation_names_the_ticket_last_worker_only_while_it_is_alive(
    redis: ArqRedis,
) -> None:
    await pools.ran_here(redis, "octo/app#7", "default", "octo/app#7:implement:1:1", "w1")
    assert await pools.session_worker(redis, "octo/app#7:implement:1:1") == "w1"
    job = "octo/app#7:review:1:1"
    assert await pools.reserve(redis, "octo/app#7", "default", job, 2.0) is None  # w1 is gone
    await pools.announce(redis, "w1", 1, {"default": 1})  # alive, its slot still busy
    assert await pools.reserve(redis, "octo/app#7", "default", job, 2.0) == "w1"
    assert await redis.get(pools.PREFER_PREFIX + job) == b"w1"
    assert await pools.reserve(redis, "octo/app#7", "default", job, 0) is None  # turned off
    assert await pools.reserve(redis, "octo/app#9", "default", job, 2.0) is None  # no history


STARTED: list[tuple[str, str, bool]] = []  # (job id, worker, reservation gone at start)


async def note(ctx: dict[str, Any]) -> None:
    reserved = await ctx["redis"].exists(pools.PREFER_PREFIX + ctx["job_id"])
    STARTED.append((ctx["job_id"], ctx["worker"], not reserved))
    await asyncio.sleep(0.2)


def pool_worker(
    settings: Settings, queue: str, worker_id: str, slots: SharedSlots, *, burst: bool = True
) -> PoolWorker:
    return PoolWorker(
        slots=slots,
        worker_id=worker_id,
        functions=[func(note, name="note")],
        queue_name=queue,
        redis_settings=redis_settings(settings.require_redis_url()),
        max_jobs=4,
        poll_delay=0.02,
        burst=burst,
        handle_signals=False,
        ctx={"worker": worker_id},
    )


async def test_a_reserved_session_is_left_to_its_worker_then_any_worker_takes_it(
    redis: ArqRedis, settings: Settings
) -> None:
    STARTED.clear()
    await redis.enqueue_job("note", _job_id="mine", _queue_name=SESSIONS_QUEUE)
    await redis.set(pools.PREFER_PREFIX + "mine", "w1", px=10_000)
    other = pool_worker(settings, SESSIONS_QUEUE, "w2", SharedSlots(4), burst=False)
    polling = asyncio.create_task(other.async_run())
    await asyncio.sleep(0.5)  # w2 polls the queue many times over...
    assert STARTED == []  # ...and leaves the reserved session alone
    preferred = pool_worker(settings, SESSIONS_QUEUE, "w1", SharedSlots(4))
    await preferred.async_run()
    assert STARTED == [("mine", "w1", False)]

    # A reservation for a worker that never comes runs out; then any worker takes it.
    await redis.enqueue_job("note", _job_id="ghost", _queue_name=SESSIONS_QUEUE)
    await redis.set(pools.PREFER_PREFIX + "ghost", "w9", px=600)
    for _ in range(100):
        if len(STARTED) == 2:
            break
        await asyncio.sleep(0.05)
    assert STARTED[1] == ("ghost", "w2", True)  # started once the reservation was gone
    polling.cancel()
    await asyncio.gather(polling, return_exceptions=True)
    await preferred.close()
    await other.close()


async def test_the_pools_of_one_worker_share_its_slots(redis: ArqRedis, settings: Settings) -> None:
    STARTED.clear()
    for i in range(3):
        await redis.enqueue_job("note", _job_id=f"d{i}", _queue_name=SESSIONS_QUEUE)
        await redis.enqueue_job("note", _job_id=f"g{i}", _queue_name=GPU)
    slots = SharedSlots(2)
    busiest = 0

    async def watch() -> None:
        nonlocal busiest
        while True:
            busiest = max(busiest, slots.busy)
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch())
    default = pool_worker(settings, SESSIONS_QUEUE, "w1", slots)
    gpu = pool_worker(settings, GPU, "w1", slots)
    await asyncio.gather(default.async_run(), gpu.async_run())
    watcher.cancel()
    await default.close()
    await gpu.close()
    assert len(STARTED) == 6 and busiest == 2 and slots.busy == 0


async def test_the_pool_gauges_count_queued_waiting_and_workers_per_pool(redis: ArqRedis) -> None:
    await ArqSessionLauncher(redis).launch(start_session(pool="gpu"))
    await ArqSessionLauncher(redis).launch(start_session(stage="review", pool="gpu"))
    running = start_session(stage="verify", pool="gpu").spec.job_key
    await redis.set(f"arq:in-progress:{running}", b"1")  # as arq marks a job it started
    await redis.zadd(GPU, {running: 1})
    await pools.announce(redis, "w1", 2, {"default": 0})
    await pools.observe_pools(redis)
    gauge = {
        name: metric.labels(pool)._value.get()
        for name, metric in (
            ("queued", metrics.POOL_QUEUED),
            ("oldest", metrics.POOL_OLDEST_WAITING),
            ("workers", metrics.POOL_WORKERS),
        )
        for pool in ("gpu",)
    }
    assert gauge["queued"] == 2  # the started one is not waiting
    assert 0 <= gauge["oldest"] < 60
    assert gauge["workers"] == 0
    assert metrics.POOL_WORKERS.labels("default")._value.get() == 1


def test_pool_labels_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_pool_labels", {"default"})  # this process's others stay
    names = [f"p{i}" for i in range(metrics.MAX_POOL_LABELS + 5)]
    labels = {metrics.pool_label(name) for name in names}
    assert "other" in labels and len(labels) <= metrics.MAX_POOL_LABELS + 1
    assert metrics.pool_label("default") == "default"
