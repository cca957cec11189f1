"""Where session logs live: the live tail in Redis, the finished log in an object store.

While a session runs, the capture side appends its redacted lines
(`SessionLogs.append`) to a Redis stream the web's live page tails
(`SessionLogs.live`). When it ends, `finish` writes the whole redacted log,
gzip, with its rendered steps and a small JSON of facts about it, to the
object store (`paths.py` names them), then marks the stream finished and lets
it expire: a finished session is read from the object (`read`, `read_raw`).
`sweep` deletes finished logs older than the retention; the reconciler calls
`sweep_if_due`, which lets one worker of all sweep once an hour.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

import obstore
import orjson
from obstore.store import ObjectStore
from redis.asyncio import Redis

from ballet.sessionlog.live import LiveChunk, LiveTail
from ballet.sessionlog.objects import open_object_store, parse_options
from ballet.sessionlog.paths import ROOT, log_paths
from ballet.sessionlog.sink import LogLine
from ballet.sessionlog.steps import Step
from ballet.settings import Settings

META_FORMAT = 1
# Level 6, off the event loop: a 20 MB log in ~0.9 s, once, at a session's end
# (bench/log_live.py); 1 is 5x faster but stores a fifth more for the retention's
# 30 days, 9 is 3x slower for no smaller a file.
GZIP_LEVEL = 6
# The download's chunks: small enough that its first byte leaves at once.
STREAM_CHUNK_BYTES = 64 * 1024
# S3 deletes at most 1,000 keys a request.
DELETE_BATCH = 1000
SWEEP_LOCK_KEY = "ballet:log-sweep"
SWEEP_EVERY = timedelta(hours=1)


@dataclass(frozen=True)
class LogMeta:
    """Facts about a finished log, kept beside it."""

    job_key: str
    size: int  # bytes of the log
    stored_size: int  # bytes of its gzip in the store
    lines: int
    steps: int
    finished_at: datetime


@dataclass(frozen=True)
class FinishedLog:
    meta: LogMeta
    log: bytes
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class RawLog:
    """A finished log as a stream of chunks, for a download. With `encoding`
    "gzip" the chunks are the stored gzip (serve them with Content-Encoding:
    gzip, or as a .log.gz file); with None they are the log itself."""

    meta: LogMeta
    chunks: AsyncIterator[bytes]
    encoding: Literal["gzip"] | None


class SessionLogs:
    """The session logs of one deployment: a `LogSink` for the capture side and
    the reads for the web's pages. One per process; it owns neither the Redis
    pool (its caller's) nor anything to close (obstore's clients go with it)."""

    def __init__(
        self,
        redis: Redis,
        objects: ObjectStore,
        *,
        live_max_lines: int = 20_000,
        retention: timedelta = timedelta(days=30),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._redis = redis
        self._live = LiveTail(redis, max_lines=live_max_lines)
        self._objects = objects
        self._retention = retention
        self._clock = clock

    @classmethod
    def from_settings(cls, settings: Settings, redis: Redis) -> SessionLogs:
        """The deployment's store (BALLET_LOG_STORE…); raises LogStoreConfigError."""
        options = settings.log_store_options
        objects = open_object_store(
            settings.log_store,
            settings.data_dir,
            parse_options(options.get_secret_value() if options is not None else None),
        )
        return cls(
            redis,
            objects,
            live_max_lines=settings.log_live_max_lines,
            retention=timedelta(days=settings.log_retention_days),
        )

    # The capture side (LogSink).

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        """Add lines to the session's live tail (one pipeline, one round trip)."""
        await self._live.append(job_key, lines)

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        """Keep the whole log and its steps in the object store, then end the live tail.
        Called again for the same job key, it replaces what the first call kept."""
        finished_at = self._clock()
        steps_json = orjson.dumps([step.model_dump(mode="json") for step in steps])
        packed_log, packed_steps = await asyncio.to_thread(_pack, log, steps_json)
        meta = LogMeta(
            job_key=job_key,
            size=len(log),
            stored_size=len(packed_log),
            lines=log.count(b"\n") + (1 if log and not log.endswith(b"\n") else 0),
            steps=len(steps),
            finished_at=finished_at,
        )
        paths = log_paths(job_key)
        await asyncio.gather(
            obstore.put_async(self._objects, paths.log, packed_log),
            obstore.put_async(self._objects, paths.steps, packed_steps),
        )
        # Last: a reader that finds the meta finds the log and steps whole.
        await obstore.put_async(self._objects, paths.meta, _meta_json(meta))
        await self._live.end(job_key, finished_at.timestamp())

    # The reads (the web's pages).

    async def live(
        self, job_key: str, after: str = "0-0", block_ms: int = 0, count: int = 1000
    ) -> LiveChunk:
        """The live tail after the entry id `after`, waiting up to `block_ms` for a
        line when none is there. `finished` also when the stream has expired and the
        finished log is in the store, so a late reader knows to `read` it instead."""
        chunk = await self._live.read(job_key, after, block_ms, count)
        if chunk.lines or chunk.finished or await self._live.exists(job_key):
            return chunk
        return LiveChunk((), chunk.last_id, finished=await self.exists(job_key))

    async def exists(self, job_key: str) -> bool:
        """Whether the finished log of the session is in the store."""
        try:
            await obstore.head_async(self._objects, log_paths(job_key).meta)
            return True
        except FileNotFoundError:
            return False

    async def meta(self, job_key: str) -> LogMeta | None:
        data = await self._get(log_paths(job_key).meta)
        return _meta_from(data) if data is not None else None

    async def read(self, job_key: str) -> FinishedLog | None:
        """The finished log, whole: None when the session has not finished (or it was swept)."""
        paths = log_paths(job_key)
        meta = await self.meta(job_key)
        if meta is None:
            return None
        packed_log, packed_steps = await asyncio.gather(
            self._get(paths.log), self._get(paths.steps)
        )
        if packed_log is None or packed_steps is None:
            return None  # swept between the reads
        log, steps_json = await asyncio.to_thread(_unpack, packed_log, packed_steps)
        steps = tuple(Step.model_validate(item) for item in orjson.loads(steps_json))
        return FinishedLog(meta=meta, log=log, steps=steps)

    async def read_raw(self, job_key: str, *, decompress: bool = False) -> RawLog | None:
        """The finished log as it arrives from the store, for a download, never whole
        in memory: the stored gzip, or with `decompress` the log itself."""
        paths = log_paths(job_key)
        meta = await self.meta(job_key)
        if meta is None:
            return None
        try:
            result = await obstore.get_async(self._objects, paths.log)
        except FileNotFoundError:
            return None
        chunks: AsyncIterator[bytes] = result.stream(min_chunk_size=STREAM_CHUNK_BYTES)
        if decompress:
            return RawLog(meta=meta, chunks=_gunzip(chunks), encoding=None)
        return RawLog(meta=meta, chunks=chunks, encoding="gzip")

    # Retention.

    async def sweep(self, now: datetime) -> int:
        """Delete every object of finished logs older than the retention (by the
        store's last-modified time); returns how many objects it deleted."""
        cutoff = now - self._retention
        old: list[str] = []
        # Listed whole before deleting: a local store's emptied folders go as
        # they empty, under a listing still walking them.
        async for batch in obstore.list(self._objects, f"{ROOT}/", chunk_size=DELETE_BATCH):
            old.extend(item["path"] for item in batch if item["last_modified"] < cutoff)
        for start in range(0, len(old), DELETE_BATCH):
            await self._delete(old[start : start + DELETE_BATCH])
        return len(old)

    async def sweep_if_due(self, now: datetime, every: timedelta = SWEEP_EVERY) -> int | None:
        """`sweep`, by one caller of all every `every`: every worker's reconciler
        asks, the first to take the Redis key sweeps. None: not this one's turn."""
        taken = await self._redis.set(
            SWEEP_LOCK_KEY, now.isoformat(), nx=True, ex=max(1, int(every.total_seconds()))
        )
        if not taken:
            return None
        return await self.sweep(now)

    async def _get(self, path: str) -> bytes | None:
        try:
            result = await obstore.get_async(self._objects, path)
            return bytes(await result.bytes_async())
        except FileNotFoundError:
            return None

    async def _delete(self, paths: list[str]) -> None:
        try:
            await obstore.delete_async(self._objects, paths)
        except FileNotFoundError:
            # A local store refuses a batch with a path already gone (another
            # sweep's, an operator's); S3 and the others ignore it. One by one, then.
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    await obstore.delete_async(self._objects, path)


def _pack(log: bytes, steps_json: bytes) -> tuple[bytes, bytes]:
    # mtime=0: the same log packs to the same bytes, whenever it is written.
    return (
        gzip.compress(log, compresslevel=GZIP_LEVEL, mtime=0),
        gzip.compress(steps_json, compresslevel=GZIP_LEVEL, mtime=0),
    )


def _unpack(packed_log: bytes, packed_steps: bytes) -> tuple[bytes, bytes]:
    return gzip.decompress(packed_log), gzip.decompress(packed_steps)


def _meta_json(meta: LogMeta) -> bytes:
    return orjson.dumps(
        {
            "format": META_FORMAT,
            "job_key": meta.job_key,
            "size": meta.size,
            "stored_size": meta.stored_size,
            "lines": meta.lines,
            "steps": meta.steps,
            "finished_at": meta.finished_at.isoformat(),
        }
    )


def _meta_from(data: bytes) -> LogMeta:
    raw = orjson.loads(data)
    return LogMeta(
        job_key=raw["job_key"],
        size=raw["size"],
        stored_size=raw["stored_size"],
        lines=raw["lines"],
        steps=raw["steps"],
        finished_at=datetime.fromisoformat(raw["finished_at"]),
    )


async def _gunzip(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    inflater = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
    async for chunk in chunks:
        if out := inflater.decompress(chunk):
            yield out
    if tail := inflater.flush():
        yield tail
