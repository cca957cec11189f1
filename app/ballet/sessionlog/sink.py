"""Where a session's log goes as it runs and when it ends: the `LogSink` Protocol.

The session hands the sink its redacted lines in batches as they arrive
(`append`), then the whole redacted log and its rendered steps (`finish`).
`sessionlog/store.py` implements it on a Redis stream and an object store;
`NullSink` keeps nothing (tests, and a worker with no store configured).
Every text a sink is given is already redacted: a sink never sees a secret.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import repeat
from typing import Any, Literal, NamedTuple, Protocol, cast

from ballet.sessionlog.steps import Step

Stream = Literal["stdout", "stderr", "ballet"]


class LogLine(NamedTuple):
    """A tuple, not a dataclass: a session printing a million lines makes a million of
    them for any sink that reads them, and a tuple is made ~3x faster (bench/capture.py)."""

    seq: int  # 0, 1, 2 … per session, across both streams
    stream: Stream  # "ballet": a line Ballet adds (started, cut marker, ended)
    text: str  # redacted, no trailing newline, at most 64 KiB (longer: cut with a marker)
    at: float  # unix time it arrived


# A line as plain fields, in LogLine's order: what a sink that encodes them reads.
Row = tuple[int, Stream, str, float]
# tuple.__new__ straight from C: no Python frame per line, as LogLine(...) or _make have.
_as_line = cast(Callable[[Row], LogLine], partial(tuple.__new__, LogLine))


class LogSink(Protocol):
    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None: ...

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None: ...


class NullSink:
    """Keeps nothing; what a session logs to when no store is configured."""

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        return None

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        return None


# Stream, first seq, arrival, the lines (as bytes with newlines, or split), their count.
Block = tuple[Stream, int, float, bytes | list[bytes], int]


class _Rows:
    """Blocks of lines, made into rows once, when first read."""

    def __init__(self, blocks: list[Block]) -> None:
        self._blocks: list[Block] | None = blocks
        self.count = sum(block[4] for block in blocks)
        self._rows: list[Row] = []

    def get(self) -> list[Row]:
        if self._blocks is not None:
            for stream, seq, at, data, count in self._blocks:
                # zip makes the rows in C. Split lines are decoded one by one; a block is
                # decoded whole and split (str.split goes byte by byte: slower than a
                # decode per line when lines are long).
                if isinstance(data, list):
                    texts = [line.decode("utf-8", "replace") for line in data]
                else:
                    texts = data.decode("utf-8", "replace").split("\n")
                self._rows += zip(range(seq, seq + count), repeat(stream), texts, repeat(at))
            self._blocks = None
        return self._rows


class LogLines(Sequence[LogLine]):
    """Redacted lines as a sink receives them: blocks of bytes, made into plain rows
    when first read (`rows`, which live.py encodes as they are) and into `LogLine`s
    only when read as such. A sink that keeps nothing (NullSink) pays nothing per
    line, one that encodes the fields no object per line. A slice (one append's
    worth) shares the rows of the whole."""

    def __init__(self, source: list[Block] | _Rows, span: range | None = None) -> None:
        self._source = source if isinstance(source, _Rows) else _Rows(source)
        self._span = span if span is not None else range(self._source.count)

    @property
    def rows(self) -> list[Row]:
        rows, span = self._source.get(), self._span
        if span.step != 1:
            return [rows[i] for i in span]
        return rows if len(span) == len(rows) else rows[span.start : span.stop]

    def __len__(self) -> int:
        return len(self._span)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return LogLines(self._source, self._span[index])
        return _as_line(self._source.get()[self._span[index]])

    def __iter__(self) -> Iterator[LogLine]:
        return map(_as_line, self.rows)


class LiveLines:
    """Blocks of redacted lines waiting for the sink."""

    def __init__(self) -> None:
        self._blocks: list[Block] = []
        self.count = 0

    def add(
        self, stream: Stream, seq: int, at: float, data: bytes | list[bytes], count: int
    ) -> None:
        self._blocks.append((stream, seq, at, data, count))
        self.count += count

    def take(self) -> LogLines:
        blocks, self._blocks, self.count = self._blocks, [], 0
        return LogLines(blocks)
