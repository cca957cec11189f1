"""Group commit of webhook deliveries: the deliveries that arrive while one
write to Redis is under way go together in the next write.

A delivery is answered only once its job is in Redis (a 202 is a promise that
it will be handled). Written one by one, every delivery pays a round trip and
the client library's per-command work; under load that, not Redis, bounds the
web app. Here the first delivery is written at once, alone; those arriving
while its write is in flight queue up and go in one call of the enqueue
script when it returns, and so on. An idle server adds no delay, a busy one
pays one round trip per batch instead of per delivery.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from ballet.queue import DeliveryJob

# One script call per batch carries every job's payload (GitHub sends up to
# 25 MB each): bounds keep a burst of large deliveries from becoming one
# enormous command that holds Redis for long. A delivery over the byte bound
# still goes, alone.
MAX_BATCH = 128
MAX_BATCH_BYTES = 4 * 1024 * 1024

EnqueueMany = Callable[[Sequence[DeliveryJob]], Awaitable[list[bool]]]


class GroupCommit:
    """Enqueues deliveries in batches; `enqueue` answers each one alone."""

    def __init__(
        self,
        enqueue_many: EnqueueMany,
        max_batch: int = MAX_BATCH,
        max_batch_bytes: int = MAX_BATCH_BYTES,
    ) -> None:
        self._enqueue_many = enqueue_many
        self._max_batch = max_batch
        self._max_batch_bytes = max_batch_bytes
        self._waiting: list[tuple[DeliveryJob, asyncio.Future[bool]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def enqueue(self, job: DeliveryJob) -> bool:
        """True once the job is queued; False for a duplicate delivery id.
        Raises what the write raised (e.g. RedisError) when it failed."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((job, done))
        if self._writer is None:
            self._writer = asyncio.create_task(self._write())
        # A caller cancelled here (the client hung up) cancels only its own
        # future: its job still goes in the batch, as a lone write would have.
        return await done

    async def _write(self) -> None:
        try:
            while self._waiting:
                await self._write_batch(self._next_batch())
        finally:
            self._writer = None

    def _next_batch(self) -> list[tuple[DeliveryJob, asyncio.Future[bool]]]:
        count = size = 0
        for job, _ in self._waiting:
            size += len(job.body)
            if count and (count == self._max_batch or size > self._max_batch_bytes):
                break
            count += 1
        batch = self._waiting[:count]
        del self._waiting[:count]
        return batch

    async def _write_batch(self, batch: list[tuple[DeliveryJob, asyncio.Future[bool]]]) -> None:
        try:
            added = await self._enqueue_many([job for job, _ in batch])
        except Exception as exc:
            # Every delivery of the batch is refused (503) and GitHub may redeliver
            # it; one the script did write is then refused as a duplicate, never lost.
            for _, done in batch:
                if not done.done():
                    done.set_exception(exc)
            return
        except BaseException:
            # Cancelled (the app is shutting down): the waiting deliveries get no
            # answer from this writer, so they must not wait for one.
            for _, done in batch + self._waiting:
                if not done.done():
                    done.cancel()
            self._waiting.clear()
            raise
        for (_, done), flag in zip(batch, added, strict=True):
            if not done.done():
                done.set_result(flag)

    async def close(self) -> None:
        """Let the write under way (and those queued behind it) finish."""
        writer = self._writer
        if writer is not None:
            await asyncio.wait([writer])
