"""A session's finished log stored beside its result going out, not before it.

Storing the whole log (compressed, into the object store) and ending its live
tail takes ~7-15 ms; the session's result needs none of it, so the session job
hands the log over at the session's end and delivers the result meanwhile,
awaiting the storing only once the result is applied. A reader who opens the
log page in between still follows the live tail, which ends only after the
log is stored (`SessionLogs.finish`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ballet.sessionlog.capture import store_finished
from ballet.sessionlog.sink import LogLine, LogSink
from ballet.sessionlog.steps import Step


class StoredAfter:
    """A LogSink whose `finish` starts the storing and returns; `stored()` awaits it."""

    def __init__(self, sink: LogSink) -> None:
        self._sink = sink
        self._storing: asyncio.Task[None] | None = None

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        await self._sink.append(job_key, lines)

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        self._storing = asyncio.create_task(store_finished(self._sink, job_key, log, steps))

    async def stored(self) -> None:
        """The log handed over is stored (or its storing failed, and said so)."""
        if self._storing is not None:
            await asyncio.wait([self._storing])
