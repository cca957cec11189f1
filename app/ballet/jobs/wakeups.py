"""Workers woken when a job is queued, instead of each polling its queue.

arq finds work by polling: every `poll_delay` a Worker reads its queue's
sorted set and runs a transaction for each due job, even for jobs running on
other workers (they stay in the set while they run). Every 50 ms that was half
the workers' CPU, and still ~25–65 ms between a job's enqueue and its start,
several times on each ticket's path (docs/performance.md).

So whoever queues a job also PUBLISHes on its queue's channel (`wake`, or the
deliveries' Lua script in queue.py, `queue.wake_channel`). A worker process
holds one pub/sub connection (`Wakeups`), which sets an asyncio.Event for each
of its Workers of that queue; a `WakingWorker` reads its queue when woken, when
its earliest deferred job (or cron run) is due, and otherwise only every
`BALLET_QUEUE_POLL_SECONDS` (the fallback). A wake is a hint, never the record
of a job: the sorted set stays the truth, so a lost wake (the connection down,
a publisher that died between enqueue and publish) costs one fallback period.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from datetime import datetime
from typing import Any

import structlog
from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix
from arq.utils import timestamp_ms
from arq.worker import Worker
from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from ballet.queue import wake_channel

log = structlog.get_logger("ballet.wakeups")

# While nothing is published, the subscriber pings this often, and takes a
# connection that stays silent for three pings for dead (a half-open TCP
# connection raises nothing) and subscribes again.
PING_SECONDS = 10.0
# After a failure, first at once-ish, then less often while Redis stays away
# (each failure logs a line); the fallback poll does not depend on it.
RESUBSCRIBE_SECONDS = 1.0
RESUBSCRIBE_MAX_SECONDS = 30.0
# arq's loop sleeps `poll_delay` less the iteration's time; the iteration
# itself now waits for work, so this only bounds a loop gone wrong.
LOOP_FLOOR_SECONDS = 0.005


async def wake(redis: Redis, queue: str) -> None:
    """Tell the workers of `queue` to look at it now (a job was queued or aborted)."""
    try:
        await redis.publish(wake_channel(queue), b"")
    except (RedisError, OSError) as exc:
        # The job is queued all the same: the fallback poll finds it.
        log.warning("cannot wake the queue's workers", queue=queue, error=repr(exc))


class Wakeups:
    """One worker process's subscription to the wake channels of its queues."""

    def __init__(self, redis: ArqRedis) -> None:
        self._redis = redis
        self._events: dict[str, list[asyncio.Event]] = {}
        self.listening = asyncio.Event()  # set while subscribed (tests wait for it)

    def event(self, queue: str) -> asyncio.Event:
        """A new Worker's own event for `queue`: one per Worker, since each clears its own."""
        event = asyncio.Event()
        self._events.setdefault(queue, []).append(event)
        return event

    def wake_all(self) -> None:
        for events in self._events.values():
            for event in events:
                event.set()

    async def run(self) -> None:
        """Listen until cancelled; a lost connection is logged and subscribed again."""
        delay = RESUBSCRIBE_SECONDS
        while True:
            try:
                await self._listen()
            except Exception as exc:  # whatever broke it, the workers' fallback poll goes on
                if self.listening.is_set():
                    delay = RESUBSCRIBE_SECONDS  # it had worked: this failure is a new one
                log.warning(
                    "wake-ups lost: workers poll every fallback period until they are back",
                    error=repr(exc),
                    retry_in=delay,
                )
            finally:
                self.listening.clear()
            await asyncio.sleep(delay)
            delay = min(2 * delay, RESUBSCRIBE_MAX_SECONDS)

    async def _listen(self) -> None:
        channels = {wake_channel(q).encode(): q for q in self._events}
        if not channels:
            await asyncio.Future()  # nothing to listen for; wait to be cancelled
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(*channels)
            self.listening.set()
            # Whatever was published while we were not subscribed is lost: look once.
            self.wake_all()
            log.info("listening for wake-ups", queues=sorted(channels.values()))
            await self._receive(pubsub, channels)
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _receive(self, pubsub: PubSub, channels: dict[bytes, str]) -> None:
        loop = asyncio.get_running_loop()
        heard = loop.time()
        while True:
            message = await pubsub.get_message(timeout=PING_SECONDS)
            now = loop.time()
            if message is not None:
                heard = now
                if message["type"] == "message":
                    for event in self._events.get(channels.get(message["channel"], ""), ()):
                        event.set()
                continue
            if now - heard > 3 * PING_SECONDS:
                raise ConnectionError("the wake-up connection stopped answering pings")
            await pubsub.ping()


# Takes a due job for this Worker, atomically, as arq's WATCH/MULTI does: unless it is
# in progress (on any worker), gone, or not due yet, mark it in progress; its score.
CLAIM = """
if redis.call('exists', KEYS[1]) == 1 then return nil end
local score = redis.call('zscore', KEYS[2], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return nil end
redis.call('psetex', KEYS[1], ARGV[3], '1')
return math.floor(tonumber(score))
"""


class WakingWorker(Worker):
    """An arq Worker that reads its queue when woken, not every `poll_delay`.

    `poll_delay` keeps its name but is the fallback: the longest the Worker goes
    without reading its queue. Written against arq 0.28.0 (pinned): it overrides
    `_poll_iteration`, `start_jobs`, `run_cron` and
    `_release_sem_dec_counter_on_complete`, which are arq's internals, not its
    API; check them on any upgrade.
    """

    def __init__(self, *, wake: asyncio.Event | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wake = asyncio.Event() if wake is None else wake
        self.fallback_s = self.poll_delay_s
        # arq's own loop must not sleep: the wait is in `_poll_iteration`. Its
        # heart_beat clamps the cron window to at least 0.5 s all the same.
        self.poll_delay_s = LOOP_FLOOR_SECONDS
        self._looked = False
        self._read_ms = 0  # no later than arq's last read of the queue
        self._retried_seen = 0  # arq's count of retried jobs when last woken for one
        self._claim_script: AsyncScript | None = None

    async def _poll_iteration(self) -> None:
        if self._looked:  # the first look is at once: jobs may wait from before the start
            await self._until_work()
        self._looked = True
        # Cleared before the queue is read: a wake during this look means another look.
        self.wake.clear()
        self._read_ms = timestamp_ms()
        await super()._poll_iteration()

    async def _until_work(self) -> None:
        if self.wake.is_set():
            return
        wait = min(self.fallback_s, self._until_cron(), await self._until_deferred())
        if wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), wait)

    async def _until_deferred(self) -> float:
        """Seconds until the earliest job the last look could not take is due.

        Jobs due at that look and still queued are running elsewhere, waiting for a
        slot or reserved for another worker: nothing to wait for. A job that came
        due since (even in the same ms) was not seen: look again at once."""
        first = await self.pool.zrangebyscore(
            self.queue_name, min=f"({self._read_ms}", max="+inf", start=0, num=1, withscores=True
        )
        if not first:
            return math.inf
        until_ms = float(first[0][1]) - timestamp_ms()
        return max(0.0, until_ms / 1000 + 0.001)  # arq starts a job once its ms has passed

    def _until_cron(self) -> float:
        runs = [c.next_run for c in self.cron_jobs if c.next_run is not None]
        if not runs:
            return math.inf
        # arq's heart_beat queues a cron run only when it is less than two windows of
        # max(poll_delay, 0.5 s) away: look one window before it is due.
        window = max(self.poll_delay_s, 0.5)
        until = (min(runs) - datetime.now(tz=self.timezone)).total_seconds()
        return max(0.0, until - window)

    async def run_cron(self, n: datetime, delay: float, num_windows: int = 2) -> None:
        before = [c.next_run for c in self.cron_jobs]
        await super().run_cron(n, delay, num_windows)
        after = [c.next_run for c in self.cron_jobs]
        if any(b is not None and b != a for b, a in zip(before, after, strict=True)):
            # arq queued the run without a wake: look again, to start it or wait for it.
            self.wake.set()

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        """arq's `start_jobs`, claiming each job in one round trip (`CLAIM`), not four
        (WATCH, EXISTS, ZSCORE, then MULTI/PSETEX/EXEC)."""
        for job_id_b in self.not_running_here(job_ids):
            await self.sem.acquire()
            if self.job_counter >= self.max_jobs:
                self.sem.release()
                return
            self.job_counter += 1
            job_id = job_id_b.decode()
            score = await self._claim(job_id)
            if score is None:  # started elsewhere, already done, or not due yet
                self.job_counter -= 1
                self.sem.release()
                continue
            task = self.loop.create_task(self.run_job(job_id, score))
            task.add_done_callback(lambda _: self._release_sem_dec_counter_on_complete())
            self.tasks[job_id] = task

    async def _claim(self, job_id: str) -> int | None:
        if self._claim_script is None:
            self._claim_script = self.pool.register_script(CLAIM)
        keys = [in_progress_key_prefix + job_id, self.queue_name]
        in_progress_ms = int(self.in_progress_timeout_s * 1000)
        score = await self._claim_script(keys=keys, args=[job_id, timestamp_ms(), in_progress_ms])
        return int(score) if score is not None else None

    def not_running_here(self, job_ids: list[bytes]) -> list[bytes]:
        """`job_ids` less the jobs this Worker runs now. A running job stays in its
        queue until it ends, and arq would look at its in-progress key again (four
        commands) at every look at the queue: most of a busy worker's Redis traffic."""
        return [j for j in job_ids if not _running(self.tasks.get(j.decode()))]

    def _release_sem_dec_counter_on_complete(self) -> None:
        full = self.job_counter >= self.max_jobs
        super()._release_sem_dec_counter_on_complete()
        # A full Worker stopped reading its queue; a job retried by arq is rescored.
        # Here, not in run_job: only now does arq count the job as gone. Any other
        # job's end changes nothing a look would find.
        if full or self.jobs_retried != self._retried_seen:
            self._retried_seen = self.jobs_retried
            self.wake.set()


def _running(task: asyncio.Task[Any] | None) -> bool:
    return task is not None and not task.done()
