"""The chunked framing of a spliced answer's copy, read where the copy lies.

A spliced answer's copy (splicing.py) is read into the connection's buffer and
must be parsed for two things: where the answer ends, and its body for the
meter. httptools copied every chunk out of the buffer into a bytes object of
its own; here the framing is read over the buffer and the body handed on as
views of it (the meter reads them before the buffer is read into again). Size
lines are few: a chunk's size says how far to skip.

Strict, as llhttp is, on what it reads: a size line of hex digits (at most 16
significant ones) with optional token extensions, CRLF after it and after each
chunk's data, trailer fields `name: value` ended by an empty line, nothing
longer than LINE_BOUND. Anything else is a `FramingError`: the answer is broken
and the session's connection is cut. httptools still reads every head and
every answer that is not spliced; tests/gateway/test_chunk_framing.py checks the
two agree on every way of cutting a body into chunks and rounds.
"""

from __future__ import annotations

import re

LINE_BOUND = 4096  # a size line or a trailer field
TRAILERS_BOUND = 64 << 10

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_SIZE_LINE = re.compile(rb"0*([0-9A-Fa-f]{1,16})(?:;%s(?:=%s)?)*\r\n" % (_TOKEN, _TOKEN))
_TRAILER = re.compile(rb"%s:[\t\x20-\x7e\x80-\xff]*\r\n" % _TOKEN)
_LF = re.compile(rb"\n")
# A chunk's end and the next one's plain size line, whole in one piece: the common case,
# read in one match (the same rules as the two lines read apart).
_NEXT_SIZE = re.compile(rb"\r\n0*([0-9A-Fa-f]{1,16})\r\n")
_CRLF = b"\r\n"

_SIZE, _DATA, _DATA_END, _TRAILERS, _DONE = range(5)


class FramingError(ValueError):
    """The bytes are not a chunked body."""


class ChunkedBody:
    """One chunked body, fed as it comes in pieces cut anywhere; `feed` returns its data.

    `ended` once the last chunk and its trailers were read; `overrun` when bytes came
    after that (the upstream said more than its answer: its connection is not reused)."""

    def __init__(self) -> None:
        self._state = _SIZE
        self._left = 0  # of the chunk's data being read
        self._line = bytearray()  # a line begun in an earlier piece
        self._trailers = 0  # bytes of trailer fields read
        self.ended = False
        self.overrun = False

    def feed(self, data: memoryview) -> list[memoryview]:
        """The body's data in `data`, as views of it."""
        found: list[memoryview] = []
        at, size = 0, len(data)
        while at < size:
            if self._state == _DATA:
                end = min(size, at + self._left)
                found.append(data[at:end])
                self._left -= end - at
                at = end
                if not self._left:
                    self._state = _DATA_END
            elif (
                self._state == _DATA_END
                and not self._line
                and (quick := _NEXT_SIZE.match(data, at))
            ):
                self._left = int(bytes(quick[1]), 16)
                self._state = _DATA if self._left else _TRAILERS
                at = quick.end()
            elif self._state == _DONE:
                self.overrun = True
                break
            else:
                line, at = self._line_from(data, at)
                if line is not None:
                    self._read(line)
        return found

    def _line_from(self, data: memoryview, at: int) -> tuple[bytes | None, int]:
        """The line that ends in `data` from `at` (None: it goes on past `data`'s end), and
        where what follows it starts."""
        bound = 2 if self._state == _DATA_END else LINE_BOUND
        room = bound - len(self._line)
        found = _LF.search(data, at, min(len(data), at + room))
        if found is None:
            if len(data) - at >= room:
                raise FramingError(
                    "a chunk's data is not followed by CRLF"
                    if self._state == _DATA_END
                    else f"a line of the chunked framing runs past {bound} bytes"
                )
            self._line += data[at:]
            return None, len(data)
        line = bytes(self._line) + bytes(data[at : found.end()])
        self._line.clear()
        if not line.endswith(_CRLF):
            raise FramingError("a line of the chunked framing does not end with CRLF")
        return line, found.end()

    def _read(self, line: bytes) -> None:
        if self._state == _SIZE:
            sized = _SIZE_LINE.fullmatch(line)
            if sized is None:
                raise FramingError(f"not a chunk's size line: {line[:64]!r}")
            self._left = int(sized[1], 16)
            self._state = _DATA if self._left else _TRAILERS
        elif self._state == _DATA_END:
            if line != _CRLF:
                raise FramingError("a chunk's data is not followed by CRLF")
            self._state = _SIZE
        elif line == _CRLF:  # the trailers' end: the body's
            self._state, self.ended = _DONE, True
        else:
            self._trailers += len(line)
            if _TRAILER.fullmatch(line) is None or self._trailers > TRAILERS_BOUND:
                raise FramingError(f"not a trailer field: {line[:64]!r}")
