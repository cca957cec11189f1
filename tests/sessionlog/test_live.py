"""The live tail: lines appended as a session runs are read back in order, a
blocked reader wakes on a new line, the stream stays bounded and expires, and
a finished session's tail ends with a marker every reader sees."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from ballet.sessionlog.live import (
    ENTRY_LINES,
    FINISHED_TTL_SECONDS,
    LIVE_TTL_SECONDS,
    stream_key,
)
from ballet.sessionlog.objects import open_object_store
from ballet.sessionlog.sink import LogLine
from ballet.sessionlog.store import SessionLogs
from sessionlog_kit import JOB_KEY, lines

pytestmark = pytest.mark.anyio


async def test_appended_lines_are_read_back_in_order_from_any_point(logs: SessionLogs) -> None:
    await logs.append(JOB_KEY, lines(3))
    await logs.append(JOB_KEY, [LogLine(seq=3, stream="stderr", text="boom: ä\ttab", at=2.5)])

    whole = await logs.live(JOB_KEY)
    assert [line.seq for line in whole.lines] == [0, 1, 2, 3]
    assert whole.lines[0] == LogLine(seq=0, stream="stdout", text="line 0 ✓", at=1_700_000_000.0)
    assert whole.lines[3] == LogLine(seq=3, stream="stderr", text="boom: ä\ttab", at=2.5)
    assert not whole.finished

    first_two = await logs.live(JOB_KEY, count=2)
    rest = await logs.live(JOB_KEY, after=first_two.last_id)
    assert [line.seq for line in first_two.lines + rest.lines] == [0, 1, 2, 3]
    nothing_new = await logs.live(JOB_KEY, after=rest.last_id)
    assert nothing_new.lines == () and nothing_new.last_id == rest.last_id


async def test_a_blocked_reader_wakes_on_the_next_line(logs: SessionLogs) -> None:
    await logs.append(JOB_KEY, lines(1))
    seen = await logs.live(JOB_KEY)

    reader = asyncio.create_task(logs.live(JOB_KEY, after=seen.last_id, block_ms=3000))
    await asyncio.sleep(0.2)
    assert not reader.done()  # it waits: nothing new yet
    appended = time.monotonic()
    await logs.append(JOB_KEY, lines(1, start=1))
    chunk = await asyncio.wait_for(reader, timeout=3)
    assert time.monotonic() - appended < 1.0
    assert [line.seq for line in chunk.lines] == [1]


async def test_a_blocked_reader_of_a_quiet_session_gets_an_empty_chunk(
    logs: SessionLogs,
) -> None:
    await logs.append(JOB_KEY, lines(1))
    seen = await logs.live(JOB_KEY)
    chunk = await logs.live(JOB_KEY, after=seen.last_id, block_ms=100)
    assert chunk.lines == () and chunk.last_id == seen.last_id and not chunk.finished


async def test_the_tail_keeps_about_its_last_lines_and_expires_in_a_day(
    redis: ArqRedis, tmp_path: Path
) -> None:
    bounded = SessionLogs(redis, open_object_store(None, tmp_path), live_max_lines=1000)
    for start in range(0, 5000, 500):
        await bounded.append(JOB_KEY, lines(500, start=start))

    # An entry holds a batch's lines (up to ENTRY_LINES); MAXLEN ~ trims whole
    # entries, and nodes of them: the bound holds to within a node.
    entries = await redis.xlen(stream_key(JOB_KEY))
    assert entries <= 1000 // ENTRY_LINES + 100
    tail = await bounded.live(JOB_KEY, count=2000)
    kept = len(tail.lines)
    assert 1000 <= kept <= 1000 + 100 * ENTRY_LINES
    assert tail.lines[-1].seq == 4999  # the newest are the ones kept
    assert [line.seq for line in tail.lines] == list(range(5000 - kept, 5000))
    assert LIVE_TTL_SECONDS - 5 <= await redis.ttl(stream_key(JOB_KEY)) <= LIVE_TTL_SECONDS


async def test_a_finished_session_ends_its_tail_and_readers_see_it(
    logs: SessionLogs, redis: ArqRedis
) -> None:
    await logs.append(JOB_KEY, lines(2))
    seen = await logs.live(JOB_KEY)
    reader = asyncio.create_task(logs.live(JOB_KEY, after=seen.last_id, block_ms=3000))
    await asyncio.sleep(0.1)

    await logs.finish(JOB_KEY, b"line 0\nline 1\n", [])

    ended = await asyncio.wait_for(reader, timeout=3)
    assert ended.finished and ended.lines == ()
    from_start = await logs.live(JOB_KEY)
    assert from_start.finished and [line.seq for line in from_start.lines] == [0, 1]
    # The stream goes within a minute: a finished session is read from the object store.
    assert 0 < await redis.ttl(stream_key(JOB_KEY)) <= FINISHED_TTL_SECONDS <= 60


async def test_a_reader_after_the_tail_expired_is_told_the_session_finished(
    logs: SessionLogs, redis: ArqRedis
) -> None:
    await logs.append(JOB_KEY, lines(2))
    await logs.finish(JOB_KEY, b"line 0\nline 1\n", [])
    await redis.delete(stream_key(JOB_KEY))  # as its TTL would

    late = await logs.live(JOB_KEY, block_ms=100)
    assert late.finished and late.lines == ()


async def test_a_session_not_started_is_not_finished(logs: SessionLogs) -> None:
    chunk = await logs.live("octo/widgets#99:implement:1:1", block_ms=50)
    assert chunk == type(chunk)((), "0-0", finished=False)
