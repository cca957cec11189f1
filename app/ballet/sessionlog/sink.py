"""Where a session's log goes as it runs and when it ends: the `LogSink` Protocol.

The session hands the sink its redacted lines in batches as they arrive
(`append`), then the whole redacted log and its rendered steps (`finish`).
`sessionlog/store.py` implements it on a Redis stream and an object store;
`NullSink` keeps nothing (tests, and a worker with no store configured).
Every text a sink is given is already redacted: a sink never sees a secret.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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


Block = tuple[Stream, int, float, bytes, int]  # stream, first seq, arrival, lines, count


class LogLines(Sequence[LogLine]):
    """Redacted lines as a sink receives them: made into `LogLine`s only when read,
    so a sink that keeps nothing (NullSink) costs nothing per line."""

    def __init__(self, blocks: list[Block]) -> None:
        self._blocks = blocks
        self._lines: list[LogLine] | None = None
        self._len = sum(block[4] for block in blocks)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return _Slice(self, range(self._len)[index])
        return self.all()[index]

    def __iter__(self) -> Iterator[LogLine]:
        return iter(self.all())

    def all(self) -> list[LogLine]:
        if self._lines is None:
            lines: list[LogLine] = []
            for stream, seq, at, data, count in self._blocks:
                texts = data.decode("utf-8", "replace").split("\n")
                lines.extend(LogLine(seq + i, stream, texts[i], at) for i in range(count))
            self._lines = lines
        return self._lines


class _Slice(Sequence[LogLine]):
    """Part of a `LogLines` (one append's worth), made from the whole when read."""

    def __init__(self, whole: LogLines, indices: range) -> None:
        self._whole = whole
        self._indices = indices

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, index: int | slice) -> Any:
        lines = self._whole.all()
        if isinstance(index, slice):
            return [lines[i] for i in self._indices[index]]
        return lines[self._indices[index]]

    def __iter__(self) -> Iterator[LogLine]:
        lines = self._whole.all()
        return (lines[i] for i in self._indices)


class LiveLines:
    """Blocks of redacted lines waiting for the sink."""

    def __init__(self) -> None:
        self._blocks: list[Block] = []
        self.count = 0

    def add(self, stream: Stream, seq: int, at: float, data: bytes, count: int) -> None:
        self._blocks.append((stream, seq, at, data, count))
        self.count += count

    def take(self) -> LogLines:
        blocks, self._blocks, self.count = self._blocks, [], 0
        return LogLines(blocks)
