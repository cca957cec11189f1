"""The live tail of a running session: its redacted lines in a Redis stream.

One stream per session, `ballet:log:<job key>`; an entry holds up to
ENTRY_LINES lines of one batch (JSON: seq, stream, text, at each): an XADD per
line cost a session printing fast several times its own time, one per batch
costs it little. The capture's batches come as rows of plain fields
(sink.LogLines), encoded by orjson as they are, with no object made per line.
Bounded to about the last `max_lines` lines (`MAXLEN ~` in entries, which
trims whole nodes: cheap, a few entries over the bound at most). A last entry
`end` says the session finished and its log is in the object store; readers
tailing with XREAD BLOCK see it and stop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import orjson
from redis.asyncio import Redis
from redis.typing import EncodableT, FieldT

from ballet.sessionlog.sink import LogLine, LogLines, Row, Stream

STREAM_PREFIX = "ballet:log:"
# Renewed by every append: the stream of a worker that died mid-session (it
# never writes `end`) goes away a day after its last line.
LIVE_TTL_SECONDS = 24 * 3600
# After `end`, the finished log is read from the object store (it is there before
# `end` is written); the stream stays a minute for readers that were a few lines
# behind (a reader asks every few seconds), then goes: with many sessions a
# finished stream (~4 KB even for a few lines) was a tenth of what a finished
# ticket left in Redis while it stayed ten minutes.
FINISHED_TTL_SECONDS = 60
# A longer BLOCK would outlast the web pool's 5 s socket timeout (queue.open_pool)
# and fail as a timeout; an empty chunk only makes the reader ask again.
MAX_BLOCK_MS = 4000
END_FIELD = b"end"
# Lines per stream entry: a batch of the capture's (at most 500) in a few entries.
ENTRY_LINES = 100

_STREAMS: dict[str, Stream] = {"stdout": "stdout", "stderr": "stderr", "ballet": "ballet"}


@dataclass(frozen=True)
class LiveChunk:
    """What one read of the live tail found: its lines in order, the id to read
    after next time, and whether the session has finished (no more lines come)."""

    lines: tuple[LogLine, ...]
    last_id: str
    finished: bool


def stream_key(job_key: str) -> str:
    return STREAM_PREFIX + job_key


class LiveTail:
    """The Redis side of the session logs."""

    def __init__(self, redis: Redis, *, max_lines: int = 20_000) -> None:
        self._redis = redis
        self._max_lines = max_lines

    @property
    def _max_entries(self) -> int:
        return max(1, self._max_lines // ENTRY_LINES)

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        key = stream_key(job_key)
        rows = _rows(lines)
        async with self._redis.pipeline(transaction=False) as pipe:
            for start in range(0, len(rows), ENTRY_LINES):
                fields: dict[FieldT, EncodableT] = {
                    b"lines": orjson.dumps(rows[start : start + ENTRY_LINES])
                }
                pipe.xadd(key, fields, maxlen=self._max_entries, approximate=True)
            pipe.expire(key, LIVE_TTL_SECONDS)
            await pipe.execute()

    async def end(self, job_key: str, at: float) -> None:
        """Mark the session finished; the stream then lives FINISHED_TTL_SECONDS."""
        key = stream_key(job_key)
        async with self._redis.pipeline(transaction=False) as pipe:
            end: dict[FieldT, EncodableT] = {END_FIELD: b"1", b"at": repr(at).encode()}
            pipe.xadd(key, end, maxlen=self._max_entries, approximate=True)
            pipe.expire(key, FINISHED_TTL_SECONDS)
            await pipe.execute()

    async def read(self, job_key: str, after: str, block_ms: int, count: int) -> LiveChunk:
        """The lines after `after` (an entry id; "0-0" from the start), waiting up
        to `block_ms` (capped at MAX_BLOCK_MS) for one when none is there yet;
        `count` entries at most (each up to ENTRY_LINES lines)."""
        block = min(block_ms, MAX_BLOCK_MS) if block_ms > 0 else None
        found = await self._redis.xread({stream_key(job_key): after}, count=count, block=block)
        lines: list[LogLine] = []
        last_id = after
        for _stream, entries in found or ():
            for entry_id, raw in entries:
                last_id = _text(entry_id)
                fields = {_text(k): v for k, v in cast(Mapping[bytes | str, bytes], raw).items()}
                if "end" in fields:
                    return LiveChunk(tuple(lines), last_id, finished=True)
                lines.extend(_lines(fields))
        return LiveChunk(tuple(lines), last_id, finished=False)

    async def exists(self, job_key: str) -> bool:
        return bool(await self._redis.exists(stream_key(job_key)))


def _rows(lines: Sequence[LogLine]) -> Sequence[Row]:
    """Each line's fields as orjson encodes them (a LogLine is a tuple subclass, which
    it does not). The capture's `LogLines` hold them ready: their text was decoded with
    replacement characters, always valid. Any other line's text may hold surrogate
    escapes, which are no UTF-8: orjson refuses them, so such text is made valid first
    (shown with replacement characters, not lost)."""
    if isinstance(lines, LogLines):
        return lines.rows
    return [(line.seq, line.stream, _valid(line.text), line.at) for line in lines]


def _valid(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _lines(fields: Mapping[str, bytes | str]) -> list[LogLine]:
    raw = fields.get("lines")
    if raw is None:
        return []
    return [
        LogLine(
            seq=int(seq), stream=_STREAMS.get(str(stream), "ballet"), text=str(text), at=float(at)
        )
        for seq, stream, text, at in orjson.loads(raw)
    ]


def _text(value: bytes | str) -> str:
    """A reply's bytes as text: the pools here do not decode, another client may."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
