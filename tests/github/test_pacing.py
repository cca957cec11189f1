"""The write pacer on a real Valkey: fair turns, spaced starts, a long backlog deferred."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from ballet.github.forge import RateLimited
from ballet.github.pacing import HOUR_MARGIN, WritePacer
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

WRITE = httpx.Request("POST", "https://api.github.com/repos/o/r/issues/1/comments")


async def test_writes_start_in_the_order_they_asked_and_spaced(redis: Redis) -> None:
    pacers = [WritePacer(redis, 7, spacing_seconds=0.1) for _ in range(3)]  # three workers
    loop = asyncio.get_running_loop()
    started: list[tuple[int, float]] = []

    async def write(n: int) -> None:
        async with pacers[n % 3].async_acquire(WRITE):
            started.append((n, loop.time()))

    tasks = []
    slots: list[float] = []  # the next free slot after each booking, on Redis's clock
    for n in range(12):
        before = await redis.get("ballet:pace:7:next")
        tasks.append(loop.create_task(write(n)))
        while (after := await redis.get("ballet:pace:7:next")) == before:  # n has booked
            await asyncio.sleep(0.001)
        slots.append(float(after))
    await asyncio.gather(*tasks)
    assert [n for n, _ in started] == list(range(12))  # nobody overtook anyone
    # Each turn was booked at least a spacing after the one before (by the script,
    # on Redis's clock: how late a busy machine wakes a writer does not enter).
    gaps = [later - earlier for earlier, later in itertools.pairwise(slots)]
    assert all(gap >= 0.1 - 1e-6 for gap in gaps), gaps


async def test_reads_and_other_installations_do_not_wait(redis: Redis) -> None:
    busy = WritePacer(redis, 1, spacing_seconds=60, max_wait_seconds=120)
    await busy.reserve()
    await busy.reserve()  # the next write of installation 1 is a minute away
    read = httpx.Request("GET", "https://api.github.com/repos/o/r")
    async with busy.async_acquire(read):
        pass
    assert await WritePacer(redis, 2, spacing_seconds=60).reserve() == 0.0


async def test_a_backlog_longer_than_a_job_should_wait_defers_it_and_reserves_nothing(
    redis: Redis,
) -> None:
    pacer = WritePacer(redis, 3, spacing_seconds=10, max_wait_seconds=15)
    assert await pacer.reserve() == 0.0
    assert 9 < await pacer.reserve() <= 10  # waits its turn in the job
    with pytest.raises(RateLimited, match="queued ahead of it") as raised:
        await pacer.reserve("POST /repos/o/r/issues/1/comments")
    assert 19 < raised.value.retry_after_seconds <= 20
    # Refused writes took no slot: the backlog is what it was.
    slot = float(await redis.get("ballet:pace:3:next") or 0)
    time_now = await redis.time()
    assert 19 < slot - (time_now[0] + time_now[1] / 1e6) <= 20


async def test_no_rolling_hour_holds_more_than_its_cap(redis: Redis) -> None:
    # A two-second "hour" of five writes, a hundredth of a second apart: the
    # sixth write's slot is moved to an hour after the first's, the eleventh's to
    # an hour after the sixth's, whichever worker asks.
    pacers = [
        WritePacer(redis, 9, spacing_seconds=0.01, per_hour=5, hour_seconds=2, max_wait_seconds=30)
        for _ in range(2)
    ]
    waits = [await pacers[n % 2].reserve() for n in range(12)]
    slots = [score for _, score in await redis.zrange("ballet:pace:9:hour", 0, -1, withscores=True)]
    assert len(slots) == 12
    assert all(later - earlier >= 0.01 - 1e-6 for earlier, later in itertools.pairwise(slots))
    # Any six consecutive slots span at least the hour: no hour holds six.
    assert all(slots[i + 5] - slots[i] >= 2 * HOUR_MARGIN - 1e-6 for i in range(len(slots) - 5)), (
        slots
    )
    assert waits[4] < 1 < waits[5]  # the cap, not the spacing, made the sixth wait


async def test_a_spent_hour_defers_the_write_naming_the_cap(redis: Redis) -> None:
    pacer = WritePacer(redis, 10, spacing_seconds=0.01, per_hour=3, hour_seconds=60)
    for _ in range(3):
        await pacer.reserve()
    with pytest.raises(RateLimited, match="3 writes of the last hour") as raised:
        await pacer.reserve("POST /repos/o/r/check-runs")
    assert 59 < raised.value.retry_after_seconds <= 60 * HOUR_MARGIN
    assert await redis.zcard("ballet:pace:10:hour") == 3  # the refused write took no slot


class LateWaker(WritePacer):
    """A writer the machine wakes a quarter of a second after its slot."""

    async def reserve(self, what: str = "a write") -> float:
        return await super().reserve(what) + 0.25


async def test_a_writer_late_for_its_slot_still_leaves_the_spacing(redis: Redis) -> None:
    # The first writer reaches its slot late, just before the second's turn: the
    # second is let go a spacing after the first went, not with it.
    late, punctual = (
        LateWaker(redis, 11, spacing_seconds=0.3),
        WritePacer(redis, 11, spacing_seconds=0.3),
    )

    async def write(pacer: WritePacer) -> None:
        async with pacer.async_acquire(WRITE):
            pass

    first = asyncio.get_running_loop().create_task(write(late))
    while not await redis.exists("ballet:pace:11:next"):  # the first has its slot
        await asyncio.sleep(0.001)
    await write(punctual)  # its slot is 0.3 s after the first's; it is on time
    await first
    sent = await redis.zrange("ballet:pace:11:sent:hour", 0, -1, withscores=True)
    times = [score for _, score in sent]  # when each was let go, on Redis's clock
    assert len(times) == 2 and times[1] - times[0] >= 0.3 - 1e-6, times
