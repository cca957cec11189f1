"""Workers woken when a job is queued: every way Ballet queues or aborts a job
wakes a real worker at once, though its fallback poll is a minute away; what no
wake announces (a deferred job, a retry, a cron run, a freed slot) is looked
for when due; a dropped pub/sub connection loses no job and comes back.

Every wait below is bounded at 10 s while the fallback is 60 s: a missing wake
fails the test rather than slowing it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from arq import Retry
from arq.connections import ArqRedis
from arq.constants import abort_jobs_ss
from arq.cron import cron
from arq.jobs import Job, JobStatus
from arq.worker import func
from ballet.core.effects import CancelSession
from ballet.core.events import WorkerAwaited
from ballet.jobs.deliveries import LoggingConsumer
from ballet.jobs.launcher import RUN_STAGE_SESSION, ArqSessionLauncher
from ballet.jobs.registry import QueueSpec, WorkerGroup
from ballet.jobs.services import Services
from ballet.jobs.ticket_events import APPLY_TICKET_EVENT, send_ticket_event
from ballet.jobs.wakeups import wake
from ballet.queue import (
    EVENTS_QUEUE,
    HANDLE_DELIVERY,
    SESSIONS_QUEUE,
    DeliveryJob,
    DeliveryQueue,
    sessions_queue,
    wake_channel,
)
from ballet.settings import Settings
from ballet.wiring import services_for
from jobs_kit import start_session
from jobs_running import eventually

pytestmark = pytest.mark.anyio

FALLBACK = 60.0
PROMPTLY = 10.0

RAN: list[tuple[str, float]] = []  # (job id, when it started: time.monotonic())


async def note(ctx: dict[str, Any], *_args: Any) -> None:
    RAN.append((ctx["job_id"], time.monotonic()))


async def note_then_wait(ctx: dict[str, Any], *_args: Any) -> None:
    RAN.append((ctx["job_id"], time.monotonic()))
    await asyncio.sleep(0.5 if ctx["job_id"].endswith(":1:1") else 3600)


async def retried_once(ctx: dict[str, Any]) -> None:
    RAN.append((ctx["job_id"], time.monotonic()))
    if ctx["job_try"] == 1:
        raise Retry(defer=1.5)


def events(*jobs: Any, cron_jobs: Sequence[Any] = ()) -> QueueSpec:
    return QueueSpec(EVENTS_QUEUE, max_jobs=4, job_timeout=60, functions=jobs, cron_jobs=cron_jobs)


def sessions(pool: str) -> QueueSpec:
    return QueueSpec(
        sessions_queue(pool),
        max_jobs=2,
        job_timeout=3600,
        functions=(func(note_then_wait, name=RUN_STAGE_SESSION),),
        pool=pool,
    )


SESSIONS, GPU_SESSIONS = sessions("default"), sessions("gpu")


def ran(job_id: str) -> list[float]:
    return [at for id_, at in RAN if id_ == job_id]


@pytest.fixture
def slow_poll(settings: Settings) -> Settings:
    RAN.clear()
    return settings.model_copy(update={"queue_poll_seconds": FALLBACK, "session_slots": 1})


@contextlib.asynccontextmanager
async def serving(settings: Settings, *specs: QueueSpec) -> AsyncIterator[None]:
    async def factory(settings: Settings, redis: ArqRedis) -> Services:
        return services_for(settings, redis, LoggingConsumer())

    group = WorkerGroup(settings, settings.require_redis_url(), factory, specs)
    running = asyncio.create_task(group.run())
    try:
        yield
    finally:
        group.stop()
        await running


async def listeners(redis: ArqRedis, queue: str) -> int:
    ((_channel, count),) = await redis.pubsub_numsub(wake_channel(queue))
    return int(count)


async def wait_listening(redis: ArqRedis, queue: str) -> None:
    async def subscribed() -> bool:
        return await listeners(redis, queue) == 1

    await eventually(subscribed, "the worker subscribing", limit=PROMPTLY)


async def wait_ran(job_id: str, times: int = 1) -> None:
    async def done() -> bool:
        return len(ran(job_id)) >= times

    await eventually(done, f"{job_id} running {times} time(s)", limit=PROMPTLY)


async def test_a_delivery_and_a_ticket_event_wake_the_events_worker(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    spec = events(func(note, name=HANDLE_DELIVERY), func(note, name=APPLY_TICKET_EVENT))
    async with serving(slow_poll, spec):
        await wait_listening(redis, EVENTS_QUEUE)
        await asyncio.sleep(0.3)  # past the look every (re)subscription makes
        delivery = DeliveryJob(delivery_id="d1", event="issues", body=b"{}", received_at=0.0)
        assert await DeliveryQueue(redis, 3600).enqueue(delivery)
        await wait_ran("d1")
        event = WorkerAwaited(now=datetime.now(UTC), job_key="octo/app#7:x:1:1", pool="gpu")
        assert await send_ticket_event(redis, "octo/app#7", event, event_id="e1")
        await wait_ran("ticket-event:e1")


async def test_a_launched_session_wakes_the_pool_and_a_freed_slot_takes_the_next(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    launcher = ArqSessionLauncher(redis)
    first, second = start_session("implement", pool="gpu"), start_session("review")
    async with serving(slow_poll, SESSIONS, GPU_SESSIONS):
        await wait_listening(redis, SESSIONS_QUEUE)
        await asyncio.sleep(0.3)
        await launcher.launch(first)
        await wait_ran(first.spec.job_key)
        # The process's one slot is busy with the gpu pool's session: the default
        # pool's waits for it, not for a poll, and no wake comes from outside.
        await launcher.launch(second)
        await wait_ran(second.spec.job_key)
    (began,), (then,) = ran(first.spec.job_key), ran(second.spec.job_key)
    assert then - began >= 0.5  # it did wait for the slot


async def test_a_cancel_aborts_a_running_session_at_once(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    launcher = ArqSessionLauncher(redis)
    start = start_session("review")  # its job waits an hour
    job = Job(start.spec.job_key, redis, _queue_name=SESSIONS_QUEUE)
    async with serving(slow_poll, SESSIONS):
        await launcher.launch(start)
        await wait_ran(start.spec.job_key)
        await launcher.cancel(CancelSession(repo="octo/app", job_key=start.spec.job_key))

        async def ended() -> bool:
            return await job.status() == JobStatus.complete

        await eventually(ended, "the aborted session ending", limit=PROMPTLY)


async def test_deferred_and_retried_jobs_run_when_due_without_a_wake(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    # Queued behind arq's back (no wake), before the worker starts: its first look finds it.
    queued = time.monotonic()
    await redis.enqueue_job("note", _job_id="later", _queue_name=EVENTS_QUEUE, _defer_by=1.5)
    await redis.enqueue_job("retried", _job_id="again", _queue_name=EVENTS_QUEUE)
    spec = events(func(note, name="note"), func(retried_once, name="retried"))
    async with serving(slow_poll, spec):
        await wait_ran("later")
        await wait_ran("again", times=2)
    assert ran("later")[0] - queued >= 1.4
    first, second = ran("again")
    assert second - first >= 1.4


async def test_a_session_results_backstop_runs_when_due_not_at_once(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    # The session job applies its result itself; the queued one must not race it for
    # the ticket's lock, yet must run once due though the fallback poll is far away.
    async with serving(slow_poll, events(func(note, name=APPLY_TICKET_EVENT))):
        await wait_listening(redis, EVENTS_QUEUE)
        await asyncio.sleep(0.3)
        event = WorkerAwaited(now=datetime.now(UTC), job_key="octo/app#7:x:1:1", pool="gpu")
        queued = time.monotonic()
        sent = send_ticket_event(redis, "octo/app#7", event, event_id="b1", backstop_seconds=1.5)
        assert await sent
        await wait_ran("ticket-event:b1")
    assert ran("ticket-event:b1")[0] - queued >= 1.4


async def test_a_cron_job_runs_on_time_without_a_wake(slow_poll: Settings) -> None:
    # Every 3 s: longer than arq's window for queueing a cron run ahead (1 s), so
    # each run is queued by a look made for it, not by the look that ran the last.
    every_3s = cron(note, name="cron:tick", second=set(range(0, 60, 3)), microsecond=0)
    async with serving(slow_poll, events(cron_jobs=[every_3s])):

        async def ticks() -> bool:
            return sum(id_.startswith("cron:tick") for id_, _ in RAN) >= 2

        await eventually(ticks, "a cron job every 3 s, twice", limit=15)


async def test_a_dropped_wake_connection_loses_no_job_and_subscribes_again(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    spec = events(func(note, name=APPLY_TICKET_EVENT))
    event = WorkerAwaited(now=datetime.now(UTC), job_key="octo/app#7:x:1:1", pool="gpu")
    async with serving(slow_poll, spec):
        await wait_listening(redis, EVENTS_QUEUE)
        db = redis.connection_pool.connection_kwargs.get("db", 0)
        for client in await redis.client_list(_type="pubsub"):
            if int(client["db"]) == db:
                await redis.client_kill_filter(_id=client["id"])
        # Queued while nobody listens: its wake is lost, the job is not.
        assert await send_ticket_event(redis, "octo/app#7", event, event_id="lost")
        await wait_ran("ticket-event:lost")
        await wait_listening(redis, EVENTS_QUEUE)
        await asyncio.sleep(0.3)
        assert await send_ticket_event(redis, "octo/app#7", event, event_id="after")
        await wait_ran("ticket-event:after")


async def test_a_full_events_worker_takes_the_next_job_when_one_ends(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    # Only a full worker's freed slot wakes it; any other job's end wakes nothing.
    spec = QueueSpec(
        EVENTS_QUEUE,
        max_jobs=1,
        job_timeout=60,
        functions=(func(note_then_wait, name="wait"), func(note, name="note")),
    )
    async with serving(slow_poll, spec):
        await wait_listening(redis, EVENTS_QUEUE)
        await redis.enqueue_job("wait", _job_id="first:1:1", _queue_name=EVENTS_QUEUE)
        await wake(redis, EVENTS_QUEUE)
        await wait_ran("first:1:1")
        await redis.enqueue_job("note", _job_id="second", _queue_name=EVENTS_QUEUE)
        await wake(redis, EVENTS_QUEUE)  # heard while full: nothing taken
        await wait_ran("second")
    (began,), (then,) = ran("first:1:1"), ran("second")
    assert then - began >= 0.5  # it waited for the slot, not for the fallback poll


async def test_an_events_worker_looks_only_at_what_it_may_start(
    slow_poll: Settings, redis: ArqRedis
) -> None:
    # A running job stays in its queue until it ends; arq would check its
    # in-progress key again at every look (WATCH, EXISTS, ZSCORE, UNWATCH), and
    # read its abort set too.
    db = redis.connection_pool.connection_kwargs.get("db", 0)
    seen: list[str] = []

    async def watch_commands() -> None:
        async with redis.monitor() as monitor:
            async for command in monitor.listen():
                if int(command.get("db", -1)) == db:
                    seen.append(str(command["command"]))

    spec = events(func(note_then_wait, name="wait"), func(note, name="note"))
    async with serving(slow_poll, spec):
        await wait_listening(redis, EVENTS_QUEUE)
        await redis.enqueue_job("wait", _job_id="long", _queue_name=EVENTS_QUEUE)
        await wake(redis, EVENTS_QUEUE)
        await wait_ran("long")
        watching = asyncio.create_task(watch_commands())
        await asyncio.sleep(0.3)  # MONITOR is on
        for n in range(5):
            await redis.enqueue_job("note", _job_id=f"quick-{n}", _queue_name=EVENTS_QUEUE)
            await wake(redis, EVENTS_QUEUE)
            await wait_ran(f"quick-{n}")
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    verbs = [command.split()[0].upper() for command in seen]
    assert verbs.count("ZSCORE") == 5  # one per job started, none for the running one
    # Nothing aborts an event's job: its Worker does not read arq's abort set at each look.
    assert not [c for c in seen if c.split()[:2] == ["ZRANGE", abort_jobs_ss]]
