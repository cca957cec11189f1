"""Where a session's log goes as it runs and when it ends: the `LogSink` Protocol.

The session hands the sink its redacted lines in batches as they arrive
(`append`), then the whole redacted log and its rendered steps (`finish`).
`sessionlog/store.py` implements it on a Redis stream and an object store;
`NullSink` keeps nothing (tests, and a worker with no store configured).
Every text a sink is given is already redacted: a sink never sees a secret.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ballet.sessionlog.steps import Step

Stream = Literal["stdout", "stderr", "ballet"]


@dataclass(frozen=True)
class LogLine:
    seq: int  # 0, 1, 2 … per session, across both streams
    stream: Stream  # "ballet": a line Ballet adds (started, cut marker, ended)
    text: str  # redacted, no trailing newline, at most 64 KiB (longer: cut with a marker)
    at: float  # unix time it arrived


class LogSink(Protocol):
    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None: ...

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None: ...


class NullSink:
    """Keeps nothing; what a session logs to when no store is configured."""

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        return None

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        return None
